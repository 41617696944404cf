/**
 * The deferred relist the status cache (cache.ts) shares among the asks made while pods' stops are
 * in flight: one relist that starts at the latest `afterMs` after its first ask, or at once by
 * `start()`, and serves only asks made before it started.
 */

/**
 * One deferred relist and the asks it serves: started by its timer (`afterMs` after the first ask)
 * or by `start()`, through `run` (a relist that starts after every ask); settled without one by
 * `servedBy` when a relist that started after every ask completes (relists numbered as they start).
 */
export class DeferredRelist {
  /** The number of relists started at the latest ask: a relist numbered above it started after every ask. */
  #latest = 0;
  readonly #timer: NodeJS.Timeout;
  readonly #done: Promise<void>;
  #resolve!: () => void;
  #reject!: (error: unknown) => void;
  #started = false;

  constructor(
    afterMs: number,
    readonly run: () => Promise<void>,
  ) {
    this.#done = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#timer = setTimeout(() => this.start(), afterMs);
  }

  ask(relistsStarted: number): Promise<void> {
    this.#latest = Math.max(this.#latest, relistsStarted);
    return this.#done;
  }

  start(): void {
    if (this.#started) return;
    this.#started = true;
    clearTimeout(this.#timer);
    this.run().then(this.#resolve, this.#reject);
  }

  /** Settles the asks when the completed relist numbered `sequence` started after them all (true), before this one started. */
  servedBy(sequence: number): boolean {
    if (this.#started || sequence <= this.#latest) return false;
    this.#started = true;
    clearTimeout(this.#timer);
    this.#resolve();
    return true;
  }

  cancel(error: Error): void {
    if (this.#started) return;
    this.#started = true;
    clearTimeout(this.#timer);
    this.#reject(error);
  }
}
