/**
 * Single-flight with one follow-up: the one mechanism behind the runtime cache's relist
 * (cri/cache/cache.ts) and the session's checkpoint flush (session/persistence.ts).
 *
 * Owns: the run in flight and the one queued after it; no timers, no I/O of its own.
 * Invariants:
 * - At most one run at a time.
 * - A caller that asks while a run is in flight gets the next run, which starts after the current
 *   one settles (whether it succeeded or failed) and is shared by every caller that asked meanwhile:
 *   however many ask, at most one run waits behind the current one.
 * - With `startedAtOrAfter`, a run in flight that started at or after that instant is good enough
 *   and is joined instead (a relist stamped late enough already reflects what the caller did).
 * - A run's rejection reaches exactly the callers of that run.
 */

export class SingleFlight {
  readonly #run: (startedAt: number) => Promise<void>;
  readonly #now: () => number;
  #current: { startedAt: number; promise: Promise<void> } | undefined;
  #next: Promise<void> | undefined;

  /** `run` is started synchronously, given the instant it started at (from `now`). */
  constructor(run: (startedAt: number) => Promise<void>, now: () => number = Date.now) {
    this.#run = run;
    this.#now = now;
  }

  /** Whether a run is in flight. */
  get running(): boolean {
    return this.#current !== undefined;
  }

  /**
   * A run that starts after this call — or, given `startedAtOrAfter`, the one in flight if it
   * started at or after that instant. Resolves or rejects with that run.
   */
  request(startedAtOrAfter?: number): Promise<void> {
    const current = this.#current;
    if (current && startedAtOrAfter !== undefined && current.startedAt >= startedAtOrAfter) return current.promise;
    // between a run's end and the start of the one queued behind it, the queued one is the answer
    if (this.#next) return this.#next;
    if (!current) return this.#start();
    this.#next = current.promise
      .catch(() => undefined)
      .then(() => {
        this.#next = undefined;
        return this.#start();
      });
    return this.#next;
  }

  #start(): Promise<void> {
    const startedAt = this.#now();
    const run = {
      startedAt,
      promise: this.#run(startedAt).finally(() => {
        if (this.#current === run) this.#current = undefined;
      }),
    };
    this.#current = run;
    return run.promise;
  }
}
