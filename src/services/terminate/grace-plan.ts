/**
 * The grace period the planners show (`kill`/`evict --dry-run`, drain plans, the kubelet guard, the
 * `watch` kill prompt), read off what podctl knows of a pod and handed to the engine's rule,
 * engine/grace.ts `killGracePeriod`. Nothing here decides a grace period of its own; the default
 * wait for it is the engine's killPodNow bound, engine/kill-now.ts `killTimeoutMs`, which callers
 * use directly.
 */
import { killGracePeriod } from '../../engine/grace.js';
import type { PodInfo } from '../../domain/session-api.js';

export type GracePod = Pick<PodInfo, 'pod' | 'gracePeriod' | 'state'>;

/** The grace period already decided for a pod that is terminating (or was), 0 when none was. */
export function graceInForce(pod: GracePod): number {
  const decided = pod.state === 'terminating' || pod.state === 'terminated' || pod.state === 'finished';
  return decided ? (pod.gracePeriod ?? 0) : 0;
}

/** The grace (seconds) a kill of this pod with `override` (only ever shortens) will run with. */
export function plannedGraceSeconds(pod: GracePod, override?: number): number {
  return killGracePeriod(pod.pod, { inForce: graceInForce(pod), ...(override !== undefined ? { override } : {}) });
}
