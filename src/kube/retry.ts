/**
 * How podctl retries the API server so that it never blocks the node: bounded, jittered backoff
 * for 5xx and connection errors, the server's Retry-After for 429, and a total budget per call.
 *
 * Invariants:
 * - A call is attempted at most `attempts` times and never waits past `budgetMs` in total: a
 *   Retry-After that would overrun the budget ends the retries with the server's error.
 * - Only `KubeError.transient` errors are retried; 4xx answers (other than 429) are final.
 * - A Retry-After (429, 5xx) is a floor: the wait is never shorter, and up to a fifth longer
 *   (jitter), so clients told the same Retry-After do not come back in the same instant.
 * - An aborted signal ends the waiting at once with the signal's reason.
 */
import { KubeError } from './errors.js';
import { sleep } from '../lib/abortable.js';

export interface RetryPolicy {
  /** Attempts in all (default 4). */
  attempts: number;
  /** First backoff, ms (default 200); doubles each attempt. */
  baseMs: number;
  /** Largest single backoff, ms (default 5_000). */
  maxMs: number;
  /** Time budget across every attempt and wait, ms (default 20_000). */
  budgetMs: number;
  /** Source of jitter in [0, 1) (default Math.random). */
  random: () => number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 4, baseMs: 200, maxMs: 5_000, budgetMs: 20_000, random: Math.random };

/** The wait before attempt `attempt + 1` (attempt counts from 0): exponential, full-range jitter in [½, 1]. */
export function backoffMs(attempt: number, policy: Pick<RetryPolicy, 'baseMs' | 'maxMs' | 'random'>): number {
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** attempt);
  return Math.round(ceiling * (0.5 + policy.random() * 0.5));
}

/** The wait the server asked for (Retry-After, ms), jittered upwards by up to a fifth. */
export function retryAfterWaitMs(retryAfterMs: number, random: () => number): number {
  return Math.round(retryAfterMs * (1 + 0.2 * random()));
}

/** The wait after `error`, or undefined to stop retrying. */
export function retryDelayMs(error: unknown, attempt: number, elapsedMs: number, policy: RetryPolicy): number | undefined {
  if (!(error instanceof KubeError) || !error.transient) return undefined;
  if (attempt + 1 >= policy.attempts) return undefined;
  const wait = error.retryAfterMs !== undefined ? retryAfterWaitMs(error.retryAfterMs, policy.random) : backoffMs(attempt, policy);
  if (elapsedMs + wait >= policy.budgetMs) return undefined;
  return wait;
}

/** Runs `attempt` until it succeeds or the policy says stop; `onRetry` hears each wait. */
export async function withRetries<T>(
  attempt: () => Promise<T>,
  policy: RetryPolicy,
  options: { signal?: AbortSignal; now?: () => number; onRetry?: (error: KubeError, waitMs: number) => void } = {},
): Promise<T> {
  const now = options.now ?? Date.now;
  const started = now();
  for (let i = 0; ; i += 1) {
    try {
      return await attempt();
    } catch (error) {
      const wait = retryDelayMs(error, i, now() - started, policy);
      if (wait === undefined || options.signal?.aborted) throw error;
      options.onRetry?.(error as KubeError, wait);
      await sleep(wait, options.signal);
    }
  }
}
