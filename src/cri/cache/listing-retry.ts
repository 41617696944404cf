/**
 * A relist's listing calls, tried again after a transient failure (cache.ts's relists use it for
 * ListPodSandbox and ListContainers).
 *
 * Contract: only transient failures are tried again, at most twice, after the pauses below; a
 * runtime that is down (UNAVAILABLE) or an aborted signal fails at once.
 */
import { isTransient, isUnavailable } from '../client/errors.js';
import { sleep } from '../../lib/abortable.js';

/** Pauses before a relist's listing call is tried again after a transient failure. */
const LISTING_RETRY_MS: readonly number[] = [100, 300];

/**
 * One listing call of a relist, tried again (twice) after a transient failure: a read is safe to
 * repeat, and one flaky answer must not fail a whole listing of the node. UNAVAILABLE is not tried
 * again here: the client already retried it within the call's deadline (client.ts), and a runtime
 * that is down must fail the relist in that time, not three times over.
 */
export async function listingWithRetries<T>(list: () => Promise<T>, signal: AbortSignal): Promise<T> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await list();
    } catch (error) {
      const pauseMs = LISTING_RETRY_MS[attempt];
      if (pauseMs === undefined || !isTransient(error) || isUnavailable(error) || signal.aborted) throw error;
      await sleep(pauseMs, signal);
    }
  }
}
