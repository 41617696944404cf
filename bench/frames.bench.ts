/**
 * What composing one frame of the watch screen costs: Ink's own `Output.get()` against podctl's
 * frame composer (src/tui/frame-output.ts), on the frames a 160×45 screen draws during a drain.
 *
 *   npm run bench:frames [-- --seconds 12 --repeats 40]
 *
 * The frames are made as the screen makes them (one a second, the text after Ink's colour
 * transforms): two header lines with `·` and `│`, the table's title, 30 pod rows counting down in
 * colour (the countdown bar as background colours, the selected row inverted, then terminated),
 * the `↑ … above` line, the events rule, 8 event lines with `→` (all new each second, as in a
 * drain), the key help. The same sequence of seconds is composed `repeats` times by each; every
 * frame of the composer is checked to be Ink's, character for character, before anything is timed.
 */
import { parseArgs } from 'node:util';
import { composeFrame, RowCache, type OutputOperation } from '../src/tui/frame-output.js';
import { loadInkOutput, type InkOutputClass } from '../src/tui/ink-output.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '12' }, repeats: { type: 'string', default: '40' } } });
const SECONDS = Number(values.seconds);
const REPEATS = Number(values.repeats);
const WIDTH = 160;
const HEIGHT = 45;
const ROWS = 30;
const GRACE = 8;

const sgr = (code: number) => `\u001b[${code}m`;
const yellow = (s: string) => `${sgr(33)}${s}${sgr(39)}`;
const red = (s: string) => `${sgr(31)}${s}${sgr(39)}`;
const dim = (s: string) => `${sgr(2)}${s}${sgr(22)}`;
const inverse = (s: string) => `${sgr(7)}${s}${sgr(27)}`;
const bar = (left: number, spent: number) => `${sgr(33)}${sgr(43)}${' '.repeat(left)}${sgr(49)}${sgr(39)}${sgr(90)}${sgr(100)}${' '.repeat(spent)}${sgr(49)}${sgr(39)}`;
const name = (i: number) => `batch/report-${(0x1a2b3 + i * 7919).toString(16).slice(-5)}`.padEnd(36);

/** A pod row `second` seconds into the drain: pods end their grace one after another. */
function podRow(i: number, second: number): string {
  const left = GRACE + (i % 5) - second;
  if (left <= 0) return `  ${name(i)} ${red('terminated ')}                  0/1   ${-left}s       -`;
  const cells = Math.round((left / (GRACE + 4)) * 10);
  return `  ${name(i)} ${yellow('terminating')} ${bar(cells, 10 - cells)} ${yellow(`${left}s`.padEnd(4))}  1/1   ${second}s       13601`;
}

function frame(second: number): OutputOperation[] {
  const none: OutputOperation['transformers'] = [];
  const lines: [string, OutputOperation['transformers']][] = [
    [`${sgr(1)}podctl watch${sgr(22)} · node bench · unix:///run/containerd/containerd.sock · 500/500 pods · sort state`, none],
    [dim(`sync ${Math.max(0, 400 - second * 40)}  terminating ${Math.min(500, 100 + second * 40)}  terminated ${second * 12} │ desired 500  orphan 0  runtime-only 0 │ untracked 0`), none],
    [`${sgr(1)}${sgr(4)}  NAMESPACE/NAME                       STATE       GRACE            CTRS  IN STATE OWNER   LAST ERROR${sgr(24)}${sgr(22)}`, none],
    ...Array.from({ length: ROWS }, (_, i): [string, OutputOperation['transformers']] => (i === 0 ? [`▶${podRow(i, second).slice(1)}`, [(line: string) => inverse(line)]] : [podRow(i, second), none])),
    [dim(`  ↑ 0 above · ↓ ${500 - ROWS} below`), none],
    [`${sgr(1)}─ events ${'─'.repeat(WIDTH - 9)}${sgr(22)}`, none],
    ...Array.from({ length: 8 }, (_, k): [string, OutputOperation['transformers']] => [
      `21:50:${String(10 + second).padStart(2, '0')} store   ${name(second * 8 + k).trimEnd()} transition: sync → terminating (pid 13601)`,
      none,
    ]),
    [dim('↑/↓ j/k select · ⏎ explain · ^k kill · e evict · g shorten grace · / filter · s sort · ? help · q quit'), none],
  ];
  return lines.map(([text, transformers], y) => ({ type: 'write', x: 0, y, text, transformers }));
}

const found = await loadInkOutput();
if (found === undefined) throw new Error("bench: Ink's Output class not found");
const Output: InkOutputClass = found;
const inksGet = Output.prototype.get;
const frames = Array.from({ length: SECONDS }, (_, s) => frame(s));

function inks(operations: OutputOperation[]): string {
  const out = new Output({ width: WIDTH, height: HEIGHT });
  out.operations.push(...operations);
  return inksGet.call(out).output;
}

// the composer's frames are Ink's
const check = new RowCache();
for (const [s, operations] of frames.entries()) {
  if (composeFrame(WIDTH, HEIGHT, operations, check)?.output !== inks(operations)) throw new Error(`bench: second ${s}: the composer's frame differs from Ink's`);
}

function time(compose: (operations: OutputOperation[]) => unknown): number[] {
  const perFrame: number[] = [];
  for (let r = 0; r < REPEATS; r += 1) {
    const t0 = performance.now();
    for (const operations of frames) compose(operations);
    perFrame.push((performance.now() - t0) / frames.length);
  }
  return perFrame;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const cache = new RowCache();
// warm both up first (V8 compiles them), then take turns
time(inks);
time((ops) => composeFrame(WIDTH, HEIGHT, ops, cache));
const ink: number[] = [];
const ours: number[] = [];
for (let turn = 0; turn < 3; turn += 1) {
  ink.push(...time(inks));
  ours.push(...time((ops) => composeFrame(WIDTH, HEIGHT, ops, cache)));
}
const fmt = (xs: number[]) => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
console.log(`one frame of a drain at ${WIDTH}×${HEIGHT} (${SECONDS} seconds of frames × ${REPEATS} × 3 turns); node ${process.version}`);
console.table([
  { composer: "Ink's Output.get()", 'ms a frame, median (range)': fmt(ink) },
  { composer: 'podctl (src/tui/frame-output.ts)', 'ms a frame, median (range)': fmt(ours) },
]);
console.log(`rows composed by podctl's composer: ${cache.composed} of ${frames.length * HEIGHT * REPEATS * 4} (${cache.composedByCell} cell by cell)`);
