/**
 * What one frame drawn for the clock costs `podctl watch`'s screen: the screen as renderWatch mounts
 * it on a 160×45 terminal (in memory), 500 pods seconds old (their ages count seconds, so every row
 * on screen changes at each tick), nothing else changing. Reports the frames drawn in the window and
 * this process's CPU per frame and in all (a share of one core).
 *
 *   npm run -s bench:watch-frame [-- --pods 500 --window 20 --color]
 */
import { Console } from 'node:console';
import { PassThrough, Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { WatchFeed } from '../src/services/watch/watch-feed.js';
import { screenRules } from '../src/services/watch/screen-rules.js';
import { useProductionReact } from '../src/services/watch/watch.js';
import { FakeSession, pod } from '../test/tui/support/fake-session.js';

const { values } = parseArgs({
  options: { pods: { type: 'string', default: '500' }, window: { type: 'string', default: '20' }, color: { type: 'boolean', default: true } },
});

class Terminal extends Writable {
  readonly isTTY = true;
  readonly columns = 160;
  readonly rows = 45;
  /** Frames: bursts of writes (a frame is written in one turn of the event loop). */
  writes = 0;
  bytes = 0;
  #lastAt = 0;
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: () => void): void {
    const at = performance.now();
    if (at - this.#lastAt > 20) this.writes += 1;
    this.#lastAt = at;
    this.bytes += chunk.length;
    done();
  }
}

(console as { Console?: typeof Console }).Console ??= Console;
useProductionReact();
const { renderWatch } = await import('../src/tui/index.js');
const started = Date.now();
const pods = Array.from({ length: Number(values.pods) }, (_, i) => pod(`bench/pod-${String(i).padStart(4, '0')}`, { since: started - 2_000 - (i % 7) * 100 }));
const session = new FakeSession(pods);
const feed = new WatchFeed(session, { coalesceMs: 1 });
await feed.start();
const terminal = new Terminal();
const stop = new AbortController();
const ended = renderWatch({
  source: feed,
  requestKill: (r) => session.requestKill(r),
  rules: screenRules,
  color: values.color,
  node: 'bench',
  stdout: terminal as unknown as NodeJS.WriteStream,
  stdin: new PassThrough() as unknown as NodeJS.ReadStream,
  signal: stop.signal,
});
await new Promise((r) => setTimeout(r, 3_000));
(globalThis as { gc?: () => void }).gc?.();
const w0 = terminal.writes;
const b0 = terminal.bytes;
const c0 = process.cpuUsage();
const t0 = performance.now();
await new Promise((r) => setTimeout(r, Number(values.window) * 1000));
const cpu = process.cpuUsage(c0);
const wall = performance.now() - t0;
const cpuMs = (cpu.user + cpu.system) / 1000;
const frames = terminal.writes - w0;
stop.abort();
await ended;
feed.close();
console.log(
  `frames ${frames} in ${(wall / 1000).toFixed(1)} s, ${((terminal.bytes - b0) / Math.max(frames, 1) / 1024).toFixed(1)} KB each; CPU ${cpuMs.toFixed(0)} ms (${((cpuMs / wall) * 100).toFixed(2)} % of a core), ${(cpuMs / Math.max(frames, 1)).toFixed(1)} ms a frame`,
);
