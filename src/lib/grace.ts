/**
 * Grace-period arithmetic as the kubelet does it, for planning and for showing bounds up front.
 *
 * Invariants (the engine enforces them; podctl only predicts them):
 * - deletionGracePeriodSeconds is bedrock; the spec's terminationGracePeriodSeconds is the default
 *   (30 s when unset); an override only shortens; never below 1 s.
 * - Once a pod is terminating its grace period in force only shrinks.
 * - Pods known only from the runtime (no spec) are stopped with grace 1, as the kubelet does.
 * - The default wait for a kill is the kubelet's killPodNow bound: max(10 s, 1.5 × grace).
 */
import type { PodInfo } from '../services/session-api.js';

export const DEFAULT_TERMINATION_GRACE_SECONDS = 30;
export const MINIMUM_GRACE_SECONDS = 1;

/** The pod's own grace period before any override (seconds). */
export function podGraceSeconds(pod: Pick<PodInfo, 'pod' | 'gracePeriod' | 'state'>): number {
  if (pod.gracePeriod !== undefined && (pod.state === 'terminating' || pod.state === 'terminated' || pod.state === 'finished')) {
    return pod.gracePeriod;
  }
  if (!pod.pod?.spec) return MINIMUM_GRACE_SECONDS;
  const deletion = pod.pod.metadata?.deletionGracePeriodSeconds;
  const spec = pod.pod.spec.terminationGracePeriodSeconds ?? DEFAULT_TERMINATION_GRACE_SECONDS;
  return Math.max(MINIMUM_GRACE_SECONDS, deletion ?? spec);
}

/** The grace a kill with `override` will run with: the override only ever shortens. */
export function effectiveGraceSeconds(pod: Pick<PodInfo, 'pod' | 'gracePeriod' | 'state'>, override?: number): number {
  const current = podGraceSeconds(pod);
  if (override === undefined) return current;
  return Math.max(MINIMUM_GRACE_SECONDS, Math.min(current, override));
}

/** The kubelet's killPodNow bound for a grace period: max(10 s, 1.5 × grace), in milliseconds. */
export function killPodNowBoundMs(graceSeconds: number): number {
  return Math.max(10_000, Math.ceil(graceSeconds * 1500));
}
