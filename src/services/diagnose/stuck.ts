/**
 * Stuck pods: a pod terminating longer than its grace period plus a margin (`stuck-after`, default
 * 30 s). One rule, used by the agent (logged once, `podctl_stuck_pods`, an Event) and by `status`.
 *
 * Invariants: only a pod in `terminating` with a known grace deadline can be stuck; the margin is
 * added to the deadline, never to the start.
 */
import type { PodInfo } from '../../domain/session-api.js';

/** How long past its grace deadline a terminating pod counts as stuck (the agent's --stuck-after default). */
export const DEFAULT_STUCK_AFTER_MS = 30_000;

export function isStuck(pod: Pick<PodInfo, 'state' | 'graceDeadline'>, now: number, stuckAfterMs = DEFAULT_STUCK_AFTER_MS): boolean {
  return pod.state === 'terminating' && pod.graceDeadline !== undefined && now > pod.graceDeadline + stuckAfterMs;
}

/** How long past its grace deadline the pod is (ms, 0 when within it). */
export function stuckForMs(pod: Pick<PodInfo, 'graceDeadline'>, now: number): number {
  return pod.graceDeadline === undefined ? 0 : Math.max(0, now - pod.graceDeadline);
}
