/**
 * Giving memory back after a burst: a long-running follower (the watch during a drain) allocates
 * heavily for a few seconds, and V8 then keeps the grown heap's pages for a long while. Once the
 * burst is over (`quietMs` without a change) and it was a real burst (at least `minChanges`
 * changes since the last settle), a full garbage collection runs and then a memory-reducing one
 * (V8's "last resort" flavour: full collections until nothing more is freed, and the young
 * generation shrunk back),
 * which returns the free pages to the system. The young generation is most of it on Node.js 24 and
 * 26, which grow it to 64-128 MB under a drain's allocation; a 500-pod drain's watch: ~40 MB of
 * RSS given back on Node.js 26, ~10 MB on 20, for 10-60 ms of CPU once.
 *
 * Invariants:
 * - At most one settle per burst, never while changes keep coming, never for a trickle.
 * - No timer runs while nothing changes; `close()` leaves none.
 * - Where the runtime offers no collector, settling does nothing (the default collector asks V8 for
 *   its `gc` function once, in a fresh context, without changing how the process was started).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface HeapSettleOptions {
  quietMs: number;
  minChanges: number;
  /** Runs the collections (tests pass a fake). */
  collect?: () => void;
}

export class HeapSettler {
  readonly #quietMs: number;
  readonly #minChanges: number;
  readonly #collect: () => void;
  #changes = 0;
  #timer: NodeJS.Timeout | undefined;
  /** Collections run, for tests and benchmarks. */
  settled = 0;

  constructor(options: HeapSettleOptions) {
    this.#quietMs = options.quietMs;
    this.#minChanges = options.minChanges;
    this.#collect = options.collect ?? settleCollection;
  }

  /** `n` changes happened now: the quiet period starts again. */
  note(n: number): void {
    if (n <= 0) return;
    this.#changes += n;
    if (this.#changes < this.#minChanges) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#settle(), this.#quietMs);
    this.#timer.unref();
  }

  close(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #settle(): void {
    this.#timer = undefined;
    this.#changes = 0;
    this.settled += 1;
    this.#collect();
  }
}

type GcFunction = (options?: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

let gc: GcFunction | null | undefined;

/** A full and a memory-reducing synchronous garbage collection, if V8 lets the process ask for them. */
function settleCollection(): void {
  if (gc === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      const fn: unknown = runInNewContext('gc');
      gc = typeof fn === 'function' ? (fn as GcFunction) : null;
    } catch {
      gc = null;
    }
  }
  if (gc === null) return;
  // a full collection on every V8; then the memory-reducing one, which V8 12 and later (Node.js 22+)
  // know, and which shrinks the young generation back (older V8s run a cheap young collection)
  gc();
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
