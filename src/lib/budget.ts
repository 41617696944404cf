/**
 * A CPU budget for a repeated job (a frame of the watch screen, a re-read of the watch feed, a
 * gathering of the watch's node facts): how long a round waits so that rounds stay within a share
 * of one core, and the process clock a round's cost is read from.
 *
 * Two rules:
 * - `budgetedInterval`: the least time between two rounds is the last round's cost over the share
 *   (a steady rule, for a job that runs on a clock: the node facts, the screen's countdown tick).
 * - `CpuBudget`, a token bucket, for a job that runs on changes: credit (ms of CPU) accrues at the
 *   share × the time on the wall, up to `burstMs`; a round spends what it cost; a round waits only
 *   while the credit is negative, until it is not. So the first change after a quiet period passes
 *   at once however much the last round cost, while a steady stream of rounds (a drain) keeps
 *   within the share.
 *
 * Invariants: never shorter than `baseMs`, never longer than `maxMs` (when `maxMs` ≥ `baseMs`); a
 * share of 0 or less turns the budget off (`baseMs`, no wait). A `CpuBudget` never makes a round
 * wait longer than `maxWaitMs` after the last round's spending (the debt is floored there), and its
 * credit never exceeds `burstMs`.
 */

/** The CPU time this process has used so far (ms, user and system): a round's cost is the difference. */
export function processCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** The least time between two rounds (ms): the last round's cost over the budget, within `baseMs`…`maxMs`. */
export function budgetedInterval(baseMs: number, lastCostMs: number, budget: number, maxMs: number): number {
  if (budget <= 0) return baseMs;
  return Math.max(baseMs, Math.min(maxMs, lastCostMs / budget));
}

export interface CpuBudgetOptions {
  /** Share of one core (0.03: three hundredths); 0 or less: no budget. */
  share: number;
  /** The most credit kept (ms of CPU): what a round after a quiet period may spend at once. */
  burstMs: number;
  /** The longest a round waits after the last one's spending (ms). */
  maxWaitMs: number;
  now?: () => number;
}

/** A token bucket of CPU time; see the module comment. */
export class CpuBudget {
  readonly #share: number;
  readonly #burstMs: number;
  readonly #maxWaitMs: number;
  readonly #now: () => number;
  #credit: number;
  #at: number;
  #lastCostMs = 0;

  constructor(options: CpuBudgetOptions) {
    this.#share = options.share;
    this.#burstMs = Math.max(0, options.burstMs);
    this.#maxWaitMs = Math.max(0, options.maxWaitMs);
    this.#now = options.now ?? Date.now;
    this.#credit = this.#burstMs;
    this.#at = this.#now();
  }

  /** How long a round waits from now (ms; 0: it may start now). */
  wait(): number {
    if (this.#share <= 0) return 0;
    const credit = this.#refill();
    return credit >= 0 ? 0 : Math.min(this.#maxWaitMs, -credit / this.#share);
  }

  /** A round cost `costMs` of CPU. */
  spend(costMs: number): void {
    this.#lastCostMs = Math.max(0, costMs);
    if (this.#share <= 0) return;
    const floor = -this.#share * this.#maxWaitMs;
    this.#credit = Math.max(floor, this.#refill() - this.#lastCostMs);
  }

  /**
   * The steady interval at the last round's cost (`budgetedInterval`), for a clock that draws rounds
   * too; `share` (default the budget's own) lets such a clock keep to a smaller share than changes.
   */
  steadyInterval(baseMs: number, share = this.#share): number {
    return budgetedInterval(baseMs, this.#lastCostMs, share, Math.max(baseMs, this.#maxWaitMs));
  }

  #refill(): number {
    const now = this.#now();
    this.#credit = Math.min(this.#burstMs, this.#credit + Math.max(0, now - this.#at) * this.#share);
    this.#at = now;
    return this.#credit;
  }
}
