/**
 * The effective grace period of a terminating pod (the kubelet's calculateEffectiveGracePeriod).
 *
 * Invariants:
 * - The pod's `deletionGracePeriodSeconds` (set by the API server) is bedrock; a kill override may
 *   only shorten what is already decided; the spec's `terminationGracePeriodSeconds` is only the
 *   default when nothing else applies.
 * - Once decided (non-zero), the grace period never grows.
 * - The result is never below 1 second, nor above MAX_GRACE_SECONDS (a spec or deletion grace
 *   beyond it is treated as the maximum).
 *
 * These functions are the one definition of the rule: the engine decides with them, the planners
 * (`--dry-run`, drain plans, the kubelet guard, `watch`'s kill prompt) predict with
 * `killGracePeriod` below, and API deletions (kube/desired.ts, services/api/api-follow.ts) and the CRI
 * syncer read a pod's own grace with `podOwnGracePeriod`. Nothing outside the engine recomputes them.
 */
import type { KillPodOptions, V1Pod } from './types.js';

/**
 * The longest grace period podctl accepts or acts on: one year (seconds). Flags past it are usage
 * errors (exit 2); a stored grace past it is quarantined by the store; a pod spec past it is
 * clamped to it. Timers for waits this long go through timers.ts.
 */
export const MAX_GRACE_SECONDS = 31_536_000;

/** The shortest grace period the kubelet acts on (seconds): zero, negative or missing become it. */
export const MIN_GRACE_SECONDS = 1;

/**
 * The grace a pod known only from the runtime (no pod object) is stopped with, seconds: the
 * kubelet's SyncTerminatingRuntimePod kills with a fixed 1 s, whatever was asked.
 */
export const RUNTIME_POD_GRACE_SECONDS = 1;

/** A grace period (seconds) podctl can act on: a finite number within [0, MAX_GRACE_SECONDS]. */
export function isGraceInRange(seconds: number): boolean {
  return Number.isFinite(seconds) && seconds >= 0 && seconds <= MAX_GRACE_SECONDS;
}

/**
 * The grace left (seconds, at least 1) until a stored termination deadline: what a worker resumed
 * after a crash or a take-over may still use. The deadline is authoritative: a resume never restarts
 * the grace.
 */
export function remainingGraceSeconds(deadline: number, now: number): number {
  return Math.max(1, Math.ceil((deadline - now) / 1000));
}

export interface EffectiveGracePeriod {
  /** Seconds, at least 1. */
  gracePeriod: number;
  /** A grace period had been decided before and this result differs from it (it is shorter). */
  shortened: boolean;
}

/**
 * @param status the pod's current grace period in seconds; 0 when none was decided yet.
 */
export function calculateEffectiveGracePeriod(status: { gracePeriod: number }, pod: V1Pod, options?: KillPodOptions): EffectiveGracePeriod {
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
  if (!(gracePeriod >= MIN_GRACE_SECONDS)) gracePeriod = MIN_GRACE_SECONDS;
  if (gracePeriod > MAX_GRACE_SECONDS) gracePeriod = MAX_GRACE_SECONDS;
  return { gracePeriod, shortened: status.gracePeriod !== 0 && status.gracePeriod !== gracePeriod };
}

/**
 * The pod's own grace period before any operator override (seconds, at least 1): its deletion grace
 * when the API server set one, else its spec's terminationGracePeriodSeconds, else the API default
 * of 30 s. This is the engine's rule above applied with no decision yet and no override.
 */
export function podOwnGracePeriod(pod: V1Pod): number {
  const decided = calculateEffectiveGracePeriod({ gracePeriod: 0 }, pod).gracePeriod;
  const hasOwn = pod.metadata?.deletionGracePeriodSeconds != null || pod.spec?.terminationGracePeriodSeconds != null;
  return hasOwn ? decided : DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS;
}

/** The API server's default terminationGracePeriodSeconds. */
export const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30;

/**
 * podctl's operator rule on top of the kubelet's: an override asked for on the command line (or in
 * `watch`) only ever shortens the pod's own grace. The kubelet lets a first override lengthen it;
 * an operator's `--grace 100` on a pod whose own grace is 45 s must not keep it alive longer.
 */
export function operatorGraceOverride(pod: V1Pod | undefined, override: number): number {
  const requested = Math.max(1, Math.floor(override));
  return pod ? Math.min(requested, podOwnGracePeriod(pod)) : requested;
}

/**
 * The grace period (seconds) a kill request for `pod` runs with: the operator's override (if any)
 * through operatorGraceOverride, then the engine's calculateEffectiveGracePeriod on top of the grace
 * already in force (`inForce`, 0 when none was decided). A pod known only from the runtime (no pod
 * object) is stopped with the minimum, as the kubelet's SyncTerminatingRuntimePod does. This is
 * exactly what a kill through the session makes the engine decide, so a plan shows what will happen.
 */
export function killGracePeriod(pod: V1Pod | undefined, options: { inForce?: number; override?: number } = {}): number {
  if (pod === undefined) return RUNTIME_POD_GRACE_SECONDS;
  const kill = options.override === undefined ? undefined : { gracePeriodSecondsOverride: operatorGraceOverride(pod, options.override) };
  return calculateEffectiveGracePeriod({ gracePeriod: options.inForce ?? 0 }, pod, kill).gracePeriod;
}
