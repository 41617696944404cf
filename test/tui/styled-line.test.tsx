import { cleanup, render } from 'ink-testing-library';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PodInfo } from '../../src/domain/session-api.js';
import { WatchFeed } from '../../src/services/watch/watch-feed.js';
import { screenRules } from '../../src/services/watch/screen-rules.js';
import { loadInkOutput, type InkOutputClass } from '../../src/tui/ink-output.js';
import { standIn, styledLine } from '../../src/tui/StyledLine.js';
import { WatchApp } from '../../src/tui/WatchApp.js';
import { FakeSession, pod } from './support/fake-session.js';
import { waitForText } from '../support/wait.js';

const NOW = 100_000;
const feeds: WatchFeed[] = [];
afterEach(() => {
  cleanup();
  for (const f of feeds.splice(0)) f.close();
});

let Output: InkOutputClass;
beforeAll(async () => {
  const found = await loadInkOutput();
  if (found === undefined) throw new Error("Ink's Output class not found");
  Output = found;
});

/** The text of every write Ink lays out and measures (before the lines' transforms), while `run` runs. */
async function laidOut(run: () => Promise<void>): Promise<string[]> {
  const texts: string[] = [];
  const proto = Output.prototype;
  const get = proto.get;
  proto.get = function recorded(this: typeof proto) {
    for (const op of this.operations) if (op.type === 'write' && op.text !== undefined) texts.push(op.text);
    return get.call(this);
  };
  try {
    await run();
  } finally {
    proto.get = get;
  }
  return texts;
}

/** The first frame (as read by `read`, 3 s bound, every 5 ms) for which `predicate` holds; a failure shows the last frame. */
const until = (read: () => string | undefined, predicate: (frame: string) => boolean, what: string): Promise<string> =>
  waitForText(what, () => read() ?? '', predicate, { timeoutMs: 3_000, everyMs: 5 });

function nodePods(): PodInfo[] {
  return [
    pod('app/web', { since: NOW - 5_000, owner: { pid: 4242, startedAt: 0, heartbeatAt: 0, alive: false } }),
    pod('default/db', { state: 'terminating', since: NOW - 5_000, gracePeriod: 20, graceDeadline: NOW + 10_000, owner: { pid: 4242, startedAt: 0, heartbeatAt: 0, alive: true } }),
    ...Array.from({ length: 40 }, (_, i) => pod(`batch/job-${i}`, { since: NOW - 3_000 })),
  ];
}

describe('the watch screen as Ink lays it out', () => {
  it('hands Ink printable ASCII only, and still draws its symbols and colours', async () => {
    const session = new FakeSession(nodePods(), () => NOW);
    const feed = new WatchFeed(session, { coalesceMs: 1, now: () => NOW });
    feeds.push(feed);
    await feed.start();
    let frame = '';
    const texts = await laidOut(async () => {
      const app = render(<WatchApp source={feed} rules={screenRules} requestKill={(r) => session.requestKill(r)} node="node-1" color={true} now={() => NOW} size={{ columns: 140, rows: 30 }} />);
      session.emit({ source: 'session', at: NOW, kind: 'warning', message: 'relist slow → retried' });
      frame = await until(app.lastFrame, (f) => f.includes('relist slow → retried'), 'the warning in the events pane');
    });
    // what Ink measures on every frame: nothing for string-width's slow path, no colour codes to sanitise
    expect(texts.length).toBeGreaterThan(10);
    for (const text of texts) expect(text).toMatch(/^[\x20-\x7e\n]*$/);
    // what the terminal gets: the symbols in place, the state in its colour, the selected row inverted
    const plain = frame.replace(/\u001b\[[0-9;]*m/g, '');
    expect(plain).toContain('podctl watch · node node-1');
    expect(plain).toContain(' │ desired ');
    expect(plain).toContain('─ events ──');
    expect(plain).toMatch(/^▶ default\/db {2,}terminating/m);
    expect(plain).toMatch(/app\/web .* 4242✝/);
    expect(plain).toContain('↑/↓ j/k select · ⏎ explain');
    expect(frame).toContain('\u001b[7m▶ default/db');
    expect(frame).toMatch(/app\/web {2,}\u001b\[32m sync/);
  });
});

describe('styled lines', () => {
  it('stands one-column symbols in as blanks, and keeps a line with any other character as it is', () => {
    const symbols = 'a · b │ c → d ▶ … ─ ✝ █░';
    expect(standIn(symbols)).toBe(symbols.replace(/[·│→▶…─✝█░]/g, ' '));
    expect(standIn('plain ascii')).toBe('plain ascii');
    // wide and combining characters: no stand-in of the same width exists, Ink measures the line itself
    expect(standIn('pod 日本 · x')).toBe('pod 日本 · x');
    expect(standIn('cafe\u0301 · x')).toBe('cafe\u0301 · x');
  });

  it('writes the styled line for the text Ink laid out, and any other line as Ink made it', () => {
    const line = styledLine([{ text: '▶ ' }, { text: 'web', color: 'green' }, { text: ' bar', backgroundColor: 'yellow', bold: true }], true, true);
    expect(line.text).toBe('  web bar');
    expect(line.transform(line.text)).toBe('\u001b[7m▶ \u001b[32mweb\u001b[39m\u001b[43m\u001b[1m bar\u001b[22m\u001b[49m\u001b[27m');
    expect(line.transform('  web b')).toBe('  web b');
    // without colour: the symbols, no codes; the same line is the same model
    const bare = styledLine([{ text: '▶ ' }, { text: 'web', color: 'green' }], false, true);
    expect(bare.transform(bare.text)).toBe('▶ web');
    expect(styledLine([{ text: '▶ ' }, { text: 'web', color: 'green' }], false, true)).toBe(bare);
  });
});
