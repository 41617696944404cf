/**
 * Puts the frame composer (frame-output.ts) under Ink: Ink's `Output.get()`, which composes every
 * frame, is replaced by one that composes the rows that changed and reuses the others — the same
 * string, at a fraction of the cost.
 *
 * Ink does not export its `Output` class. From an npm install it is read from Ink's own module
 * file (ink/build/output.js beside the package's entry: the module instance Ink's renderer uses); in
 * the single executable, where Ink is bundled, the build registers the class under
 * `Symbol.for('podctl.ink-output')` (scripts/sea.mjs).
 *
 * Invariants:
 * - Installed at most once per Output class; Ink's own `get()` stays available and runs for any
 *   frame the composer declines (clipping) or fails to make.
 * - Installed only if the composer agrees with Ink's own `get()` on a sample frame first (colours,
 *   bold and dim, inverse, wide characters, several writes on a row, a row past the screen): an Ink
 *   whose output differs keeps its own composer, and the screen is only slower.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { composeFrame, RowCache, type ComposedFrame, type OutputOperation } from './frame-output.js';

/** What of Ink's Output the composer reads. */
interface InkOutput {
  width: number;
  height: number;
  operations: OutputOperation[];
  write: (x: number, y: number, text: string, options: { transformers: ((line: string, index: number) => string)[] }) => void;
  get: (this: InkOutput) => ComposedFrame;
}

export interface InkOutputClass {
  new (options: { width: number; height: number }): InkOutput;
  prototype: InkOutput;
}

const EMBEDDED = Symbol.for('podctl.ink-output');
const INSTALLED = Symbol.for('podctl.ink-output.composer');

/** Ink's Output class: the one the single executable registered, or the one in Ink's package. */
export async function loadInkOutput(): Promise<InkOutputClass | undefined> {
  const embedded = (globalThis as Record<symbol, unknown>)[EMBEDDED];
  if (typeof embedded === 'function') return embedded as InkOutputClass;
  try {
    const entry = createRequire(import.meta.url).resolve('ink');
    const module = (await import(pathToFileURL(join(dirname(entry), 'output.js')).href)) as { default?: unknown };
    return typeof module.default === 'function' ? (module.default as InkOutputClass) : undefined;
  } catch {
    return undefined;
  }
}

export type InstallOutcome = 'installed' | 'already' | 'differs' | 'unavailable';

/**
 * Replaces `Output.prototype.get` with the composer (one row cache for the process: Ink makes one
 * Output per frame), if it agrees with Ink's own on a sample frame.
 */
export function installComposer(Output: InkOutputClass | undefined): InstallOutcome {
  if (Output === undefined || typeof Output.prototype?.get !== 'function') return 'unavailable';
  const proto = Output.prototype as InkOutput & { [INSTALLED]?: true };
  if (proto[INSTALLED] === true) return 'already';
  const inksGet = proto.get;
  if (!agreesOnSample(Output, inksGet)) return 'differs';
  const cache = new RowCache();
  proto.get = function get(this: InkOutput): ComposedFrame {
    try {
      return composeFrame(this.width, this.height, this.operations, cache) ?? inksGet.call(this);
    } catch {
      // a frame the composer cannot make is Ink's to make: the screen never fails for the composer
      return inksGet.call(this);
    }
  };
  proto[INSTALLED] = true;
  return 'installed';
}

/** A frame with what the watch draws and what it might: both composers must make the same string. */
export function sampleFrame(Output: InkOutputClass): InkOutput {
  const out = new Output({ width: 24, height: 7 });
  const none = { transformers: [] };
  const inverse = { transformers: [(line: string) => `\u001b[7m${line}\u001b[27m`] };
  out.write(0, 0, '\u001b[1m\u001b[4m  NAME    STATE\u001b[24m\u001b[22m', none);
  out.write(0, 1, '  web-1 \u001b[33mterminating\u001b[39m \u001b[33m\u001b[43m   \u001b[49m\u001b[39m 2s', none);
  out.write(0, 2, '▶ db-0 \u001b[32mrunning\u001b[39m', inverse);
  out.write(2, 3, '\u001b[2m\u001b[1mdim bold\u001b[22m plain\u001b[0m', none);
  out.write(0, 4, '日本 ok', none);
  out.write(4, 4, '\u001b[31mX\u001b[39m', none);
  out.write(20, 5, 'past the end of the row', none);
  out.write(0, 6, 'two\nlines past the screen', none);
  return out;
}

function agreesOnSample(Output: InkOutputClass, inksGet: (this: InkOutput) => ComposedFrame): boolean {
  try {
    const sample = sampleFrame(Output);
    const ours = composeFrame(sample.width, sample.height, sample.operations, new RowCache());
    const theirs = inksGet.call(sample);
    return ours !== undefined && ours.output === theirs.output && ours.height === theirs.height;
  } catch {
    return false;
  }
}
