import { afterEach, describe, expect, it } from 'vitest';
import { composeFrame, RowCache, type OutputOperation } from '../../src/tui/frame-output.js';
import { installComposer, loadInkOutput, sampleFrame, type InkOutputClass } from '../../src/tui/ink-output.js';

/** Ink's Output class, with its own get() (the composer is installed only on subclasses here). */
const InkOutput = (await loadInkOutput())!;
const inksGet = InkOutput.prototype.get;

/** A seeded generator, so that a failure names a frame that can be run again. */
function random(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)]!;
  return { next, int, pick };
}

/** What chalk writes for Ink's Text props, and codes a program might write itself. */
const SGR = [
  '\u001b[31m', '\u001b[39m', '\u001b[32m', '\u001b[33m', '\u001b[90m', '\u001b[1m', '\u001b[22m', '\u001b[2m', '\u001b[7m', '\u001b[27m', '\u001b[4m',
  '\u001b[24m', '\u001b[43m', '\u001b[100m', '\u001b[49m', '\u001b[0m', '\u001b[m', '\u001b[1;31m', '\u001b[38;5;123m', '\u001b[38;2;1;2;3m', '\u001b[48;5;9m',
  '\u001b[3m', '\u001b[23m', '\u001b[9m', '\u001b[29m',
]; // prettier-ignore
const WORDS = ['web', 'db-0', 'terminating', 'running', '3s', ' ', '   ', '0/2', 'kube-system/etcd', 'x'];
/** Symbols the screen draws with: each a grapheme of its own, so a row of them is still simple. */
const SYMBOLS = ['▶ ', '·', '│', '─', '→', '↑', '↓', '…', '✓', '█', '░', 'é', '—', '⏎', '\u00a0'];
/** Anything else: wide characters, clusters, a combining mark right after a code, controls, links, broken codes. */
const ODD = ['日本', '😀', '❤\ufe0f', 'e\u0301', '\u001b[31m\u0301', '\u200d', '\t', '\u001b[31', '\u001b]8;;http://x\u0007link\u001b]8;;\u0007', '\u001b[?25l', '\u009b31m'];

function line(r: ReturnType<typeof random>, simple: boolean): string {
  let out = '';
  for (let i = r.int(0, 12); i > 0; i -= 1) {
    const kind = r.next();
    if (kind < 0.4) out += r.pick(WORDS);
    else if (kind < 0.8) out += r.pick(SGR);
    else if (kind < 0.9 || simple) out += r.pick(SYMBOLS);
    else out += r.pick(ODD);
  }
  return out;
}

const TRANSFORMERS = [[], [(l: string) => `\u001b[7m${l}\u001b[27m`], [(l: string, i: number) => (i % 2 === 1 ? l.toUpperCase() : l), (l: string) => `\u001b[2m${l}\u001b[22m`]];

/** A frame: rows written once with ASCII and colours (the watch's pod rows), or anything. */
function frame(seed: number): { width: number; height: number; operations: OutputOperation[] } {
  const r = random(seed);
  const width = r.int(8, 60);
  const height = r.int(2, 12);
  const simple = r.next() < 0.5;
  const operations: OutputOperation[] = [];
  for (let i = r.int(0, 14); i > 0; i -= 1) {
    const lines = Array.from({ length: r.int(1, 3) }, () => line(r, simple));
    const text = lines.join('\n');
    if (text === '') continue; // Ink's write() drops empty text
    const x = simple ? r.int(0, 4) : r.int(-2, width + 4);
    const y = simple ? i - 1 : r.int(-2, height + 1);
    operations.push({ type: 'write', x, y, text, transformers: r.pick(TRANSFORMERS) });
  }
  return { width, height, operations };
}

/** Ink's own composition of the same operations. */
function inks(width: number, height: number, operations: OutputOperation[]) {
  const out = new InkOutput({ width, height });
  for (const op of operations) out.operations.push(op);
  return inksGet.call(out);
}

describe('composeFrame', () => {
  it('makes the string Ink makes, on 3,000 generated frames (colours, wide characters, overlapping writes, rows off the screen)', () => {
    const cache = new RowCache();
    let composedHere = 0;
    for (let seed = 1; seed <= 3_000; seed += 1) {
      const { width, height, operations } = frame(seed);
      const ours = composeFrame(width, height, operations, cache);
      expect(ours, `seed ${seed}`).toEqual(inks(width, height, operations));
      composedHere += 1;
    }
    expect(composedHere).toBe(3_000);
    // both ways ran, many times: rows serialised run by run, and rows composed cell by cell
    expect(cache.composedByCell).toBeGreaterThan(2_000);
    expect(cache.composed - cache.composedByCell).toBeGreaterThan(2_000);
  });

  it('makes the string Ink makes for the sample frame the installer checks', () => {
    const sample = sampleFrame(InkOutput);
    expect(composeFrame(sample.width, sample.height, sample.operations, new RowCache())).toEqual(inksGet.call(sample));
  });

  it('composes a row written with the same text again from the cache, on any row of this frame or the next, and forgets rows two frames old', () => {
    const cache = new RowCache();
    const write = (y: number, text: string): OutputOperation => ({ type: 'write', x: 0, y, text, transformers: [] });
    const a = '\u001b[33mweb-1 terminating\u001b[39m 3s';
    const b = 'db-0 running';
    composeFrame(40, 3, [write(0, a), write(1, b)], cache);
    expect(cache.composed).toBe(2);
    // the same rows, moved down one row: nothing composed
    const moved = composeFrame(40, 3, [write(1, a), write(2, b)], cache);
    expect(cache.composed).toBe(2);
    expect(moved?.output).toBe(`\n${inks(40, 3, [write(0, a)]).output.split('\n')[0]}\n${b}`);
    // one row changes: one row composed
    composeFrame(40, 3, [write(1, a), write(2, 'db-0 terminating')], cache);
    expect(cache.composed).toBe(3);
    // b was last written two frames ago: forgotten
    composeFrame(40, 3, [write(0, 'other')], cache);
    composeFrame(40, 3, [write(0, b)], cache);
    expect(cache.composed).toBe(5);
    expect(cache.size).toBeLessThanOrEqual(2);
  });

  it('never takes one row for another: a row of one piece whose text reads like two pieces', () => {
    const cache = new RowCache();
    const two: OutputOperation[] = [
      { type: 'write', x: 0, y: 0, text: 'abc', transformers: [] },
      { type: 'write', x: 2, y: 0, text: 'x', transformers: [] },
    ];
    expect(composeFrame(20, 1, two, cache)).toEqual(inks(20, 1, two));
    for (const text of ['3:abc2:1:x', '0:3:abc2:1:x', '2|0:3:abc2:1:x']) {
      const one: OutputOperation[] = [{ type: 'write', x: 0, y: 0, text, transformers: [] }];
      expect(composeFrame(20, 1, one, cache), text).toEqual(inks(20, 1, one));
    }
  });

  it('leaves frames with clipping or positions between columns to Ink', () => {
    const cache = new RowCache();
    expect(composeFrame(10, 2, [{ type: 'clip' }, { type: 'write', x: 0, y: 0, text: 'a', transformers: [] }, { type: 'unclip' }], cache)).toBeUndefined();
    expect(composeFrame(10, 2, [{ type: 'write', x: 0.5, y: 0, text: 'a', transformers: [] }], cache)).toBeUndefined();
  });
});

describe('installComposer', () => {
  const installed: InkOutputClass[] = [];
  afterEach(() => installed.splice(0));

  /** A subclass of Ink's Output: installing on it leaves Ink's own class as it is. */
  function copyOfInks(get?: () => { output: string; height: number }): InkOutputClass {
    class Copy extends (InkOutput as unknown as new (o: { width: number; height: number }) => object) {}
    if (get) Object.defineProperty(Copy.prototype, 'get', { value: get, writable: true });
    installed.push(Copy as unknown as InkOutputClass);
    return Copy as unknown as InkOutputClass;
  }

  it('replaces get() with the composer once, which makes Ink’s frames and reuses rows across Outputs', () => {
    const Copy = copyOfInks();
    expect(installComposer(Copy)).toBe('installed');
    expect(Copy.prototype.get).not.toBe(inksGet);
    expect(installComposer(Copy)).toBe('already');
    for (let seed = 1; seed <= 200; seed += 1) {
      const { width, height, operations } = frame(seed);
      const out = new Copy({ width, height });
      for (const op of operations) out.operations.push(op);
      expect(out.get(), `seed ${seed}`).toEqual(inks(width, height, operations));
    }
    // a frame the composer cannot make (a transformer that throws the first time) is Ink's to make
    let calls = 0;
    const throwsOnce = (line: string) => {
      calls += 1;
      if (calls === 1) throw new Error('once');
      return line;
    };
    const flaky = new Copy({ width: 10, height: 1 });
    flaky.operations.push({ type: 'write', x: 0, y: 0, text: 'ok', transformers: [throwsOnce] });
    expect(flaky.get()).toEqual({ output: 'ok', height: 1 });
    // a frame with clipping goes to Ink's own get()
    const clipped = new Copy({ width: 10, height: 2 });
    clipped.operations.push({ type: 'clip', clip: { x1: 0, x2: 3 } } as OutputOperation, { type: 'write', x: 0, y: 0, text: 'abcdef', transformers: [] }, { type: 'unclip' });
    expect(clipped.get().output).toBe('abc\n');
  });

  it('keeps Ink’s own get() when the composer does not agree with it on the sample frame', () => {
    const changed = function (this: { height: number }) {
      return { output: 'something else', height: this.height };
    };
    const Copy = copyOfInks(changed);
    expect(installComposer(Copy)).toBe('differs');
    expect(Copy.prototype.get).toBe(changed);
  });

  it('finds Ink’s Output class, and installs nothing without one', async () => {
    expect(typeof InkOutput).toBe('function');
    expect(new InkOutput({ width: 3, height: 1 }).get()).toEqual({ output: '', height: 1 });
    expect(installComposer(undefined)).toBe('unavailable');
    expect(await loadInkOutput()).toBe(InkOutput);
  });
});
