import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { LineDiffTerminal } from '../../src/tui/frame-writer.js';

/** Ink's erase of the last frame's lines (ansi-escapes' eraseLines). */
const eraseLines = (n: number) => `${'\u001b[2K\u001b[1A'.repeat(n - 1)}\u001b[2K\u001b[G`;
/** A frame as Ink's writer sends it: the lines, each ended by a newline. */
const frame = (...lines: string[]) => `${lines.join('\n')}\n`;

function terminal() {
  const out = Object.assign(new EventEmitter(), { isTTY: true, columns: 80, rows: 24, sent: [] as string[], write: (t: string) => out.sent.push(t) > 0 });
  return { out, diff: new LineDiffTerminal(out as unknown as NodeJS.WriteStream) };
}

describe('LineDiffTerminal', () => {
  it('sends the changed lines of a frame that erases the one on the screen, and erases below a shorter frame', () => {
    const { out, diff } = terminal();
    diff.write(frame('title', 'a 1s', 'b 5m', 'help'));
    diff.write(eraseLines(5) + frame('title', 'a 2s', 'b 5m', 'help'));
    expect(out.sent[1]).toBe('\u001b[4A\n\u001b[2Ka 2s\n\n\n');
    diff.write(eraseLines(5) + frame('title', 'a 2s'));
    expect(out.sent[2]).toBe('\u001b[4A\n\n\u001b[J');
  });

  it('writes a frame whole after a clear, an unknown erase or a resize', () => {
    const { out, diff } = terminal();
    diff.write(frame('x', 'y'));
    diff.write(eraseLines(3));
    const again = frame('x', 'y');
    diff.write(again);
    diff.write(eraseLines(4) + frame('x', 'z'));
    expect(out.sent.at(-1)).toBe(eraseLines(4) + frame('x', 'z'));
    out.emit('resize');
    diff.write(eraseLines(3) + frame('x', 'w'));
    expect(out.sent.at(-1)).toBe(eraseLines(3) + frame('x', 'w'));
    diff.write('\u001b[?2026h');
    diff.write(eraseLines(3) + frame('x', 'v'));
    expect(out.sent.at(-1)).toBe('\u001b[2A\n\u001b[2Kv\n');
  });
});
