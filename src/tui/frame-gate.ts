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
 * - Drawing stays within a share of one core (`budget`, three hundredths by default), as a token
 *   bucket (lib/budget.ts's CpuBudget): credit accrues at the budget × the time on the wall, up to
 *   what two seconds at the budget earn; a frame spends its drawing cost — the CPU time this process
 *   spent drawing it, not the time on the wall, which on a loaded machine counts the waits for a core
 *   too — and while the credit is negative the next frame waits until it is not (never more than
 *   MAX_FRAME_INTERVAL_MS). So the first change after a quiet period is drawn at once, however much
 *   the last frame cost, while a drain's steady stream of changes keeps to the budget (an 18 ms frame
 *   of 500 pods at 160×45 → about one frame per 600 ms). A cheap frame keeps the 10 frames a second.
 * - Frames drawn for the clock alone (ages and countdowns that count seconds while nothing changes)
 *   keep to a smaller share, CLOCK_BUDGET: the screen's clock ticks no faster than `clockInterval()`,
 *   the steady interval at the last frame's cost over that share (WatchApp), and never slower than
 *   MAX_FRAME_INTERVAL_MS. The last frame is whichever was drawn last: one the gate passed, or one
 *   the clock drew (its cost reported with `clockFrameDrawn`), so the clock keeps to its share by
 *   what its own frames cost, not by what the last change's frame did (a cheap change's frame made
 *   a 500-row clock tick every second). So a screen at rest costs a few thousandths of a core
 *   however costly its frames (500 pods seconds old: a tick every two seconds), while a change is
 *   still drawn at once.
 */
import { budgetedInterval, CpuBudget, processCpuMs } from '../lib/budget.js';
import type { SnapshotSource } from './use-snapshot.js';
import type { TickCostMeter } from './use-ticker.js';
import type { WatchSnapshot } from '../services/watch/watch-feed.js';

export const DEFAULT_FRAME_INTERVAL_MS = 100;
/** The longest the budget stretches the interval to (a frame every two seconds, as k9s refreshes). */
const MAX_FRAME_INTERVAL_MS = 2_000;
const DEFAULT_BUDGET = 0.03;
/** Share of one core the clock's own frames may spend (three thousandths). */
const CLOCK_BUDGET = 0.003;

export interface FrameGateOptions {
  intervalMs?: number;
  now?: () => number;
  /** Share of one core the screen may spend drawing (default 0.03); 0 turns the budget off. */
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
  readonly #budget: CpuBudget;
  readonly #measure: boolean;
  readonly #costClock: () => number;
  /** What the last frame drawn cost (ms of CPU): one the gate passed, or one drawn for the clock. */
  #lastFrameCostMs = 0;
  /** Changes passed on (frames the gate allowed), for tests and benchmarks. */
  passed = 0;

  constructor(source: SnapshotSource, options: FrameGateOptions = {}) {
    this.#source = source;
    this.#intervalMs = options.intervalMs ?? DEFAULT_FRAME_INTERVAL_MS;
    this.#now = options.now ?? Date.now;
    const share = options.budget ?? DEFAULT_BUDGET;
    this.#budget = new CpuBudget({ share, burstMs: share * MAX_FRAME_INTERVAL_MS, maxWaitMs: MAX_FRAME_INTERVAL_MS, now: this.#now });
    this.#measure = share > 0;
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
    const wait = Math.max(this.#lastPassAt + this.#intervalMs - this.#now(), this.#budget.wait());
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
    if (this.#measure) {
      // a screen renders in the microtasks its listener queued, which run before this one
      queueMicrotask(() => {
        this.#lastFrameCostMs = Math.max(0, this.#costClock() - drawStart);
        this.#budget.spend(this.#lastFrameCostMs);
      });
    }
  }

  /** The least time between two frames in a steady stream (ms): the interval, stretched to the last frame's cost over the budget. */
  interval(): number {
    return this.#budget.steadyInterval(this.#intervalMs);
  }

  /** The least time between two frames drawn for the clock alone (ms): the last frame's cost over CLOCK_BUDGET, at least `interval()`. */
  clockInterval(): number {
    if (!this.#measure) return this.#intervalMs;
    return Math.max(this.interval(), budgetedInterval(this.#intervalMs, this.#lastFrameCostMs, CLOCK_BUDGET, MAX_FRAME_INTERVAL_MS));
  }

  /**
   * The screen's clock measures its frames with this (use-ticker.ts): the CPU clock the gate reads
   * frames' costs from, and `drawn`, a frame drawn for the clock alone (not passed by the gate) cost
   * `costMs`, so the clock's next ticks keep to CLOCK_BUDGET at that cost.
   */
  readonly clockMeter: TickCostMeter = {
    cost: () => this.#costClock(),
    drawn: (costMs) => {
      this.#lastFrameCostMs = Math.max(0, costMs);
    },
  };
}
