/**
 * The screen as `podctl watch` mounts it on a terminal (renderWatch): what a frame drawn for the
 * clock alone sends to the terminal, and that the terminal then shows the frame.
 */
import { Console } from 'node:console';
import { PassThrough, Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { WatchFeed } from '../../src/services/watch/watch-feed.js';
import { screenRules } from '../../src/services/watch/screen-rules.js';
import { renderWatch } from '../../src/tui/index.js';
import { FakeSession, pod } from './support/fake-session.js';
import { until } from '../support/wait.js';

/**
 * A terminal: a TTY of a fixed size that keeps every write and plays the sequences the screen
 * uses (cursor up, to column 0 and home, erase line and below, newline) on a grid of lines.
 */
class FakeTerminal extends Writable {
  readonly isTTY = true;
  readonly columns = 120;
  readonly rows = 20;
  readonly writes: string[] = [];
  readonly screen: string[] = Array.from({ length: 20 }, () => '');
  #row = 0;
  #column = 0;
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: () => void): void {
    const text = chunk.toString();
    this.writes.push(text);
    this.#play(text);
    done();
  }

  #play(text: string): void {
    for (const [, params, final, plain] of text.matchAll(/\u001b\[([0-9;?]*)([A-Za-z])|([^\u001b]+)/g)) {
      if (plain !== undefined) this.#print(plain);
      else if (final === 'A') this.#row = Math.max(0, this.#row - Number(params || 1));
      else if (final === 'G') this.#column = 0;
      else if (final === 'H') [this.#row, this.#column] = [0, 0];
      else if (final === 'K' && params === '2') this.screen[this.#row] = '';
      else if (final === 'J') for (let r = this.#row; r < this.rows; r += 1) this.screen[r] = r === this.#row ? this.screen[r]!.slice(0, this.#column) : '';
    }
  }

  #print(text: string): void {
    for (const [i, piece] of text.split('\n').entries()) {
      if (i > 0) {
        this.#row = Math.min(this.rows - 1, this.#row + 1);
        this.#column = 0;
      }
      const line = this.screen[this.#row]!.padEnd(this.#column);
      this.screen[this.#row] = line.slice(0, this.#column) + piece + line.slice(this.#column + piece.length);
      this.#column += piece.length;
    }
  }
}

// renderWatch patches the console as podctl runs it (Ink's patchConsole), which builds a
// console.Console: the test runner's console has none
(console as { Console?: typeof Console }).Console ??= Console;

const feeds: WatchFeed[] = [];
const aborts: AbortController[] = [];
afterEach(() => {
  for (const a of aborts.splice(0)) a.abort();
  for (const f of feeds.splice(0)) f.close();
});

describe('renderWatch on a terminal', () => {
  it('a frame drawn for the clock sends the row whose age moved, not the rows that did not change, and the terminal shows the frame', async () => {
    const started = Date.now();
    // one pod seconds old (its age counts seconds: a frame a second), five hours old (their ages do not move)
    const pods = [pod('default/young', { since: started - 3_000 }), ...[1, 2, 3, 4, 5].map((i) => pod(`default/aged-${i}`, { since: started - 5 * 3_600_000 }))];
    const session = new FakeSession(pods);
    const feed = new WatchFeed(session, { coalesceMs: 1 });
    feeds.push(feed);
    await feed.start();
    const terminal = new FakeTerminal();
    const stop = new AbortController();
    aborts.push(stop);
    const ended = renderWatch({
      source: feed,
      requestKill: (r) => session.requestKill(r),
      rules: screenRules,
      color: false,
      node: 'test',
      stdout: terminal as unknown as NodeJS.WriteStream,
      stdin: new PassThrough() as unknown as NodeJS.ReadStream,
      signal: stop.signal,
    });
    const sent = (from: number) => terminal.writes.slice(from).join('');
    const youngRow = () => terminal.screen.find((l) => l.includes('default/young')) ?? '';
    await until('the first frame', () => terminal.screen.some((l) => l.includes('aged-5')) && youngRow() !== '', { timeoutMs: 10_000, everyMs: 20 });
    const first = terminal.writes.length;
    const firstScreen = [...terminal.screen];
    const age = () => Number(/ (\d+)s /.exec(youngRow())?.[1]);
    const firstAge = age();
    // two frames for the clock: the young pod's age moves twice
    await until('two frames drawn for the clock', () => age() >= firstAge + 2, { timeoutMs: 10_000, everyMs: 20 });
    const ticks = sent(first);
    // the unchanged rows, the header and the key help are not sent again
    expect(ticks).toContain('default/young');
    expect(ticks).not.toContain('aged-');
    expect(ticks).not.toContain('NAMESPACE/NAME');
    expect(ticks).not.toContain('q quit');
    // and the terminal shows the frame: every line where it was, only the young pod's age changed
    const changed = terminal.screen.map((line, i) => (line === firstScreen[i] ? undefined : i)).filter((i) => i !== undefined);
    expect(changed).toEqual([firstScreen.findIndex((l) => l.includes('default/young'))]);
    expect(terminal.screen[0]).toContain('podctl watch');
    stop.abort();
    await expect(ended).resolves.toBe('signal');
  });
});
