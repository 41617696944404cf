/**
 * Giving memory back after a burst: a long-running follower (the watch during a drain) allocates
 * heavily for a few seconds, and V8 then keeps the grown heap's pages for a long while. Once the
 * burst is over (`quietMs` without a change) and it was a real burst (at least `minChanges`
 * changes since the last settle), a full garbage collection runs and then a
 * memory-reducing one (V8's "last resort" flavour: full collections until nothing more is freed,
 * and the young generation shrunk back), which returns the free pages to the system: the old
 * generation's half-empty pages (V8 compacts only the most fragmented ones unless asked), and the
 * young generation where node was started without podctl's flags (bin/run.js's first line bounds
 * it; by default Node.js 24 and 26 grow it under a drain's allocation). Its cost and what it gives
 * back: docs/bench/history.md, "Issue 41: figures that were in code comments".
 *
 * A pause inside a burst (a drain between its groups, pods counting down their grace) is not its
 * end: while `busy()` says work is still under way the settle waits, up to `maxWaitMs` after the
 * last change (a pod stuck on its way out does not keep the memory for ever).
 *
 * Invariants:
 * - At most one settle per burst, never while changes keep coming, never for a trickle; not while
 *   `busy()` holds, unless the last change is `maxWaitMs` old.
 * - No timer runs while nothing changes; `close()` leaves none.
 * - The default collector is V8's `gc`: the global one of a process started with `--expose-gc`, or
 *   else one got at the first settle from a context made while V8's expose-gc flag is set, the flag
 *   cleared again at once (V8 checks a code cache against its flags: podctl's and the ones Node.js
 *   carries for its own modules are accepted after as before). It is not among podctl's start-up
 *   flags: with it, V8 rejects the code cache of Node.js's own modules and every command compiles
 *   those it loads (stream, net…) from source (docs/bench/startup.md, issue 48). Where V8 gives no
 *   `gc`, settling does nothing. No other V8 flag is set at run time, but on Node.js 20 (V8 11,
 *   without the memory-reducing collection), where the compaction flag is set for the one
 *   collection and cleared again.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface HeapSettleOptions {
  quietMs: number;
  minChanges: number;
  /** Whether the burst is still under way though nothing changed for `quietMs`; default never. */
  busy?: () => boolean;
  /** How long after the last change `busy()` may hold the settle back (ms); default 10 × quietMs. */
  maxWaitMs?: number;
  /** Runs the collections (tests pass a fake). */
  collect?: () => void;
}

export class HeapSettler {
  readonly #quietMs: number;
  readonly #minChanges: number;
  readonly #collect: () => void;
  readonly #busy: () => boolean;
  readonly #maxWaitMs: number;
  #changes = 0;
  #lastChangeAt = 0;
  #timer: NodeJS.Timeout | undefined;
  /** Collections run, for tests and benchmarks. */
  settled = 0;

  constructor(options: HeapSettleOptions) {
    this.#quietMs = options.quietMs;
    this.#minChanges = options.minChanges;
    this.#collect = options.collect ?? settleCollection;
    this.#busy = options.busy ?? (() => false);
    this.#maxWaitMs = options.maxWaitMs ?? 10 * options.quietMs;
  }

  /** `n` changes happened now: the quiet period starts again. */
  note(n: number): void {
    if (n <= 0) return;
    this.#changes += n;
    this.#lastChangeAt = Date.now();
    if (this.#changes < this.#minChanges) return;
    this.#arm();
  }

  close(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#settle(), this.#quietMs);
    this.#timer.unref();
  }

  #settle(): void {
    this.#timer = undefined;
    if (this.#busy() && Date.now() - this.#lastChangeAt < this.#maxWaitMs) {
      this.#arm();
      return;
    }
    this.#changes = 0;
    this.settled += 1;
    this.#collect();
  }
}

type GcFunction = (options?: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/** V8 12 and later (Node.js 22+) know the memory-reducing collection, which compacts the old generation itself. */
const MEMORY_REDUCING_GC = Number(process.versions.v8.split('.')[0]) >= 12;

let v8Gc: GcFunction | null | undefined;

/** V8's `gc` (see the invariants), got once; null where V8 gives none. */
function gcFunction(): GcFunction | null {
  if (v8Gc !== undefined) return v8Gc;
  const global = (globalThis as { gc?: unknown }).gc;
  if (typeof global === 'function') return (v8Gc = global as GcFunction);
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    v8Gc = typeof gc === 'function' ? (gc as GcFunction) : null;
  } catch {
    v8Gc = null;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  return v8Gc;
}

/** A full and a memory-reducing synchronous garbage collection, where V8 gives a `gc`. */
function settleCollection(): void {
  const collect = gcFunction();
  if (collect === null) return;
  if (MEMORY_REDUCING_GC) {
    // the memory-reducing collection compacts the pages a drain's garbage left half empty and
    // shrinks the young generation back: no V8 flag is changed
    collect();
    collect({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    return;
  }
  // V8 11 (Node.js 20) has no memory-reducing collection and compacts only the most fragmented
  // pages: there alone the compaction flag is set for this one collection and cleared again
  setFlagsFromString('--compact-on-every-full-gc');
  try {
    collect();
  } finally {
    setFlagsFromString('--no-compact-on-every-full-gc');
  }
}
