/**
 * killPodNow: a blocking kill for other components (eviction, CLI commands), built on updatePod.
 *
 * Invariants:
 * - The timeout is armed with the global `setTimeout` when the kill is issued, for
 *   max(10 s, 1.5 × grace) where grace is the override if given, else the pod spec's grace
 *   (killTimeoutMs: the one definition of the bound, which the planners and the session use too).
 * - The returned promise settles exactly once: it resolves when the kill's `onComplete` fires (the
 *   pod is terminated, or already was), or rejects on timeout — recording a Warning event
 *   `ExceededGracePeriod` — or when the caller's signal aborts (the kill itself goes on).
 */
import { setLongTimeout, type LongTimeout } from './timers.js';
import type { EventRecorder, PodWorkers, V1Pod, V1PodStatus } from './types.js';

const MIN_KILL_TIMEOUT_SECONDS = 10;
export const EXCEEDED_GRACE_PERIOD_REASON = 'ExceededGracePeriod';

/**
 * How long killPodNow waits for a kill with this grace period (ms): the kubelet's
 * `timeout := gracePeriod + (gracePeriod / 2)` in whole seconds (Go integer division, so 1.5 × grace
 * rounded down: 7 s → 10 s, 11 s → 16 s), never below 10 s.
 */
export function killTimeoutMs(gracePeriodSeconds: number): number {
  const grace = Math.trunc(gracePeriodSeconds);
  return Math.max(MIN_KILL_TIMEOUT_SECONDS, grace + Math.trunc(grace / 2)) * 1000;
}

export type KillPodFunc = (pod: V1Pod, isEvicted: boolean, gracePeriodOverride?: number, statusFn?: (status: V1PodStatus) => void, signal?: AbortSignal) => Promise<void>;

export class KillPodTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super('timeout waiting to kill pod');
    this.name = 'KillPodTimeoutError';
  }
}

export function killPodNow(workers: PodWorkers, recorder?: EventRecorder): KillPodFunc {
  return (pod, isEvicted, gracePeriodOverride, statusFn, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const gracePeriod = gracePeriodOverride ?? pod.spec?.terminationGracePeriodSeconds ?? 0;
      const timeoutMs = killTimeoutMs(gracePeriod);
      let settled = false;
      const onAbort = (): void => finish(() => reject(signal!.reason));
      const finish = (settle: () => void): void => {
        if (settled) return;
        settled = true;
        timer?.clear();
        signal?.removeEventListener('abort', onAbort);
        settle();
      };
      // a bound derived from a grace period may exceed setTimeout's limit (timers.ts)
      const timer: LongTimeout | undefined = setLongTimeout(() => {
        finish(() => {
          recorder?.event(pod, 'Warning', EXCEEDED_GRACE_PERIOD_REASON, 'Container runtime did not kill the pod within specified grace period.');
          reject(new KillPodTimeoutError(timeoutMs));
        });
      }, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        workers.updatePod({
          pod,
          updateType: 'kill',
          killPodOptions: {
            onComplete: () => finish(resolve),
            evict: isEvicted,
            podStatusFunc: statusFn,
            gracePeriodSecondsOverride: gracePeriodOverride,
          },
        });
      } catch (error) {
        finish(() => reject(error));
      }
    });
}
