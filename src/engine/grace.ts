/**
 * The effective grace period of a terminating pod (the kubelet's calculateEffectiveGracePeriod).
 *
 * Invariants:
 * - The pod's `deletionGracePeriodSeconds` (set by the API server) is bedrock; a kill override may
 *   only shorten what is already decided; the spec's `terminationGracePeriodSeconds` is only the
 *   default when nothing else applies.
 * - Once decided (non-zero), the grace period never grows.
 * - The result is never below 1 second.
 */
import type { KillPodOptions, V1Pod } from './types.js';

export interface EffectiveGracePeriod {
  /** Seconds, at least 1. */
  gracePeriod: number;
  /** A grace period had been decided before and this result differs from it (it is shorter). */
  shortened: boolean;
}

/**
 * @param status the pod's current grace period in seconds; 0 when none was decided yet.
 */
export function calculateEffectiveGracePeriod(
  status: { gracePeriod: number },
  pod: V1Pod,
  options?: KillPodOptions,
): EffectiveGracePeriod {
  let gracePeriod = status.gracePeriod;
  let overridden = false;
  const deletionGrace = pod.metadata?.deletionGracePeriodSeconds;
  if (deletionGrace !== undefined && deletionGrace !== null && (gracePeriod === 0 || deletionGrace < gracePeriod)) {
    gracePeriod = deletionGrace;
    overridden = true;
  }
  const override = options?.gracePeriodSecondsOverride;
  if (override !== undefined && override !== null && (gracePeriod === 0 || override < gracePeriod)) {
    gracePeriod = override;
    overridden = true;
  }
  const specGrace = pod.spec?.terminationGracePeriodSeconds;
  if (!overridden && gracePeriod === 0 && specGrace !== undefined && specGrace !== null) {
    gracePeriod = specGrace;
  }
  if (gracePeriod < 1) gracePeriod = 1;
  return { gracePeriod, shortened: status.gracePeriod !== 0 && status.gracePeriod !== gracePeriod };
}
