/**
 * The screen's frame-rate cap: a snapshot source in front of the watch feed that passes changes on at
 * most once per `intervalMs` (10 frames a second by default), however fast the feed publishes.
 *
 * Invariants:
 * - Leading and trailing edge: the first change after a quiet interval passes at once; changes during
 *   the interval are coalesced into one more, at its end. So the last change is always shown.
 * - What passes is the feed's latest snapshot at that moment, never a queued older one: a row never
 *   shows a state older than the previous frame's (the feed's snapshots only move forward).
 * - No timer runs while nothing changes; `close()` leaves none.
 */
import type { SnapshotSource } from './use-snapshot.js';
import type { WatchSnapshot } from '../services/watch-feed.js';

export const DEFAULT_FRAME_INTERVAL_MS = 100;

export interface FrameGateOptions {
  intervalMs?: number;
  now?: () => number;
}

export class FrameGate implements SnapshotSource {
  readonly #source: SnapshotSource;
  readonly #intervalMs: number;
  readonly #now: () => number;
  #shown: WatchSnapshot;
  #lastPassAt = Number.NEGATIVE_INFINITY;
  #timer: NodeJS.Timeout | undefined;
  #listeners = new Set<() => void>();
  #unsubscribe: (() => void) | undefined;
  /** Changes passed on (frames the gate allowed), for tests and benchmarks. */
  passed = 0;

  constructor(source: SnapshotSource, options: FrameGateOptions = {}) {
    this.#source = source;
    this.#intervalMs = options.intervalMs ?? DEFAULT_FRAME_INTERVAL_MS;
    this.#now = options.now ?? Date.now;
    this.#shown = source.snapshot();
  }

  snapshot(): WatchSnapshot {
    return this.#shown;
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    this.#unsubscribe ??= this.#source.subscribe(() => this.#onChange());
    // A change published before the first subscriber is not lost.
    if (this.#source.snapshot() !== this.#shown) this.#onChange();
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Stops following the source (the screen unmounted). */
  close(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #onChange(): void {
    if (this.#timer !== undefined) return;
    const wait = this.#lastPassAt + this.#intervalMs - this.#now();
    if (wait <= 0) {
      this.#pass();
      return;
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#pass();
    }, wait);
  }

  #pass(): void {
    const latest = this.#source.snapshot();
    if (latest === this.#shown) return;
    this.#lastPassAt = this.#now();
    this.#shown = latest;
    this.passed += 1;
    for (const l of [...this.#listeners]) l();
  }
}
