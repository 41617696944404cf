/**
 * The shutdown guard's honest budget: what the priority groups ask for against the delay logind
 * grants a delay lock (`InhibitDelayMaxUSec`), and the plan that fits within what it grants.
 * Pure functions: no I/O.
 *
 * Invariants:
 * - `fitGroups` never lengthens a group, keeps the groups and their order, and its budgets sum to
 *   at most the window (whole seconds); when the groups fit, they are returned unchanged.
 * - A short window is shared in proportion to what each group asked for; the seconds rounding
 *   leaves over go to the last groups first (critical pods stop last and matter most to a node).
 */
import type { PriorityGroup } from '../drain/drain-plan.js';

/** Kept back from logind's delay: the record is written and the lock released before it ends. */
export const RELEASE_MARGIN_MS = 1_000;
/**
 * Kept back from the groups when they must shrink: the last group's pods are killed at the end of
 * their grace, and the runtime's answer that they are gone takes a moment more.
 */
export const SETTLE_MARGIN_MS = 1_000;
/** The logind drop-in podctl suggests; logind reads every file in this folder (logind.conf(5)). */
const LOGIND_DROP_IN = '/etc/systemd/logind.conf.d/99-podctl-shutdown.conf';

export function groupsTotalSeconds(groups: readonly PriorityGroup[]): number {
  return groups.reduce((sum, g) => sum + g.budgetSeconds, 0);
}

/** The groups' budgets fitted into `windowSeconds` (see the invariants). */
export function fitGroups(groups: readonly PriorityGroup[], windowSeconds: number): PriorityGroup[] {
  const total = groupsTotalSeconds(groups);
  const window = Math.max(0, Math.floor(windowSeconds));
  if (total <= window) return groups.map((g) => ({ ...g }));
  const fitted = groups.map((g) => ({ ...g, budgetSeconds: Math.floor((g.budgetSeconds * window) / total) }));
  let left = window - groupsTotalSeconds(fitted);
  for (let i = fitted.length - 1; i >= 0 && left > 0; i -= 1) {
    const group = fitted[i]!;
    if (group.budgetSeconds >= groups[i]!.budgetSeconds) continue;
    group.budgetSeconds += 1;
    left -= 1;
  }
  return fitted;
}

export interface BudgetCheck {
  /** logind's delay (ms). */
  delayMs: number;
  groupsTotalSeconds: number;
  /** The delay is shorter than the groups ask for (plus the release margin). */
  short: boolean;
  /** What the guard can give the groups in all (seconds). */
  usableSeconds: number;
  /** One line for the log and `podctl status` when short, with the drop-in that raises the delay. */
  warning?: string;
}

export function checkBudget(groups: readonly PriorityGroup[], delayMs: number): BudgetCheck {
  const total = groupsTotalSeconds(groups);
  const short = Math.floor((delayMs - RELEASE_MARGIN_MS) / 1000) < total;
  const usableSeconds = short ? Math.max(0, Math.floor((delayMs - RELEASE_MARGIN_MS - SETTLE_MARGIN_MS) / 1000)) : total;
  const needed = total + Math.ceil(RELEASE_MARGIN_MS / 1000);
  return {
    delayMs,
    groupsTotalSeconds: total,
    short,
    usableSeconds,
    ...(short
      ? {
          warning:
            `logind grants a shutdown ${formatSeconds(delayMs)} (InhibitDelayMaxSec) but the shutdown groups ask for ${total}s: pods get ${usableSeconds}s in all; ` +
            `to give them their budgets write "[Login]\\nInhibitDelayMaxSec=${needed}" to ${LOGIND_DROP_IN} and run systemctl kill -s HUP systemd-logind`,
        }
      : {}),
  };
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(1)}s`;
}
