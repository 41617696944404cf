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
 * - Drawing stays within a share of one core (`budget`, three hundredths by default): the interval
 *   stretches to the last frame's drawing time — the CPU time this process spent drawing it, not the
 *   time on the wall, which on a loaded machine counts the waits for a core too — divided by the budget (an 18 ms frame of 500 pods at
 *   160×45 → one frame per 600 ms while they change), never past MAX_FRAME_INTERVAL_MS. A cheap frame
 *   keeps the 10 frames a second. The screen's clock (countdowns) ticks no faster than `interval()`
 *   either (WatchApp), so frames drawn for the clock alone keep within the same share.
 */
import { budgetedInterval, processCpuMs } from '../lib/budget.js';
import type { SnapshotSource } from './use-snapshot.js';
import type { WatchSnapshot } from '../services/watch/watch-feed.js';

export const DEFAULT_FRAME_INTERVAL_MS = 100;
/** The longest the budget stretches the interval to (a frame every two seconds, as k9s refreshes). */
const MAX_FRAME_INTERVAL_MS = 2_000;
const DEFAULT_BUDGET = 0.03;

export interface FrameGateOptions {
  intervalMs?: number;
  now?: () => number;
  /** Share of one core the screen may spend drawing (default 0.03); 0 turns the stretch off. */
  budget?: number;
  /** The clock a frame's drawing cost is read from (ms); default this process's CPU time. */
  costClock?: () => number;
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
  readonly #budget: number;
  readonly #costClock: () => number;
  /** What the last frame cost to draw (ms): its listeners and the renders they queued. */
  #drawMs = 0;
  /** Changes passed on (frames the gate allowed), for tests and benchmarks. */
  passed = 0;

  constructor(source: SnapshotSource, options: FrameGateOptions = {}) {
    this.#source = source;
    this.#intervalMs = options.intervalMs ?? DEFAULT_FRAME_INTERVAL_MS;
    this.#now = options.now ?? Date.now;
    this.#budget = options.budget ?? DEFAULT_BUDGET;
    this.#costClock = options.costClock ?? processCpuMs;
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
    const wait = this.#lastPassAt + this.interval() - this.#now();
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
    const drawStart = this.#costClock();
    for (const l of [...this.#listeners]) l();
    if (this.#budget > 0) {
      // a screen renders in the microtasks its listener queued, which run before this one
      queueMicrotask(() => {
        this.#drawMs = this.#costClock() - drawStart;
      });
    }
  }

  /** The least time between two frames now (ms): the interval, stretched to keep drawing within the budget. */
  interval(): number {
    return budgetedInterval(this.#intervalMs, this.#drawMs, this.#budget, MAX_FRAME_INTERVAL_MS);
  }
}
