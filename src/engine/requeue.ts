/**
 * When a worker asks to be woken again after a sync (the kubelet's completeWork policy).
 *
 * Invariants:
 * - A phase transition requeues at once (0 ms).
 * - Success requeues after the resync interval plus up to 50 % jitter.
 * - An error mentioning "network is not ready" retries after about 1 s (up to 50 % jitter).
 * - Any other error (including a cancelled sync) backs off for the back-off period plus up to 50 % jitter.
 */

/** The substring of the kubelet's NetworkNotReadyErrorMsg that marks a transient network error. */
export const NETWORK_NOT_READY_MESSAGE = 'network is not ready';

const RESYNC_JITTER_FACTOR = 0.5;
export const BACKOFF_JITTER_FACTOR = 0.5;
const TRANSIENT_ERROR_BACKOFF_MS = 1_000;

type RequeueReason = 'phase-change' | 'resync' | 'network-not-ready' | 'backoff';

export interface RequeueDecision {
  delayMs: number;
  reason: RequeueReason;
}

/** `base` plus a random share of up to `factor × base` (the kubelet's wait.Jitter). */
export function jitter(baseMs: number, factor: number, random: () => number = Math.random): number {
  return baseMs + random() * factor * baseMs;
}

export function errorMessageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

export function decideRequeue(phaseTransition: boolean, error: unknown, failed: boolean, resyncIntervalMs: number, backOffPeriodMs: number, random: () => number = Math.random): RequeueDecision {
  if (phaseTransition) return { delayMs: 0, reason: 'phase-change' };
  if (!failed) return { delayMs: jitter(resyncIntervalMs, RESYNC_JITTER_FACTOR, random), reason: 'resync' };
  if (errorMessageOf(error).includes(NETWORK_NOT_READY_MESSAGE)) {
    return { delayMs: jitter(TRANSIENT_ERROR_BACKOFF_MS, BACKOFF_JITTER_FACTOR, random), reason: 'network-not-ready' };
  }
  return { delayMs: jitter(backOffPeriodMs, BACKOFF_JITTER_FACTOR, random), reason: 'backoff' };
}
