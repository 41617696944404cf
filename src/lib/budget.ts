/**
 * A CPU budget for a repeated job (a frame of the watch screen, a re-read of the watch feed): the
 * least time between two rounds so that a round costing what the last one did stays within a share
 * of one core.
 *
 * Invariants: never shorter than `baseMs`, never longer than `maxMs` (when `maxMs` ≥ `baseMs`); a
 * budget of 0 or less turns the stretch off (`baseMs`).
 */
export function budgetedInterval(baseMs: number, lastCostMs: number, budget: number, maxMs: number): number {
  if (budget <= 0) return baseMs;
  return Math.max(baseMs, Math.min(maxMs, lastCostMs / budget));
}
