/**
 * A CPU budget for a repeated job (a frame of the watch screen, a re-read of the watch feed, a
 * gathering of the watch's node facts): the least time between two rounds so that a round costing
 * what the last one did stays within a share of one core, and the process clock a round's cost is
 * read from.
 *
 * Invariants: never shorter than `baseMs`, never longer than `maxMs` (when `maxMs` ≥ `baseMs`); a
 * budget of 0 or less turns the stretch off (`baseMs`).
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
