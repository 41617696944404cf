/** The retry policy: jittered, bounded backoff; Retry-After within the budget; only transient errors. */
import { describe, expect, it } from 'vitest';
import { KubeError } from '../../src/kube/errors.js';
import { backoffMs, retryDelayMs, withRetries, DEFAULT_RETRY_POLICY } from '../../src/kube/retry.js';
import { seededRandom } from '../support/random.js';

const policy = { ...DEFAULT_RETRY_POLICY, random: seededRandom(7) };

describe('retry policy', () => {
  it('backoff doubles, is capped, and is jittered within [½, 1] of its ceiling', () => {
    for (let attempt = 0; attempt < 10; attempt += 1) {
      const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** attempt);
      const wait = backoffMs(attempt, policy);
      expect(wait).toBeGreaterThanOrEqual(ceiling / 2);
      expect(wait).toBeLessThanOrEqual(ceiling);
    }
  });

  it('429 waits Retry-After (jittered above it); 4xx are final; the attempt count and time budget bound everything', () => {
    const limited = new KubeError('c', 'm', 429, { retryAfterMs: 3_000 });
    const wait = retryDelayMs(limited, 0, 0, policy)!;
    expect(wait).toBeGreaterThanOrEqual(3_000); // Retry-After is a floor, jittered up to a fifth above it
    expect(wait).toBeLessThanOrEqual(3_600);
    expect(retryDelayMs(limited, 0, policy.budgetMs - 1_000, policy)).toBeUndefined();
    // a 5xx's Retry-After is a floor too (client-go's rule), not the shorter backoff of the attempt
    expect(retryDelayMs(new KubeError('c', 'm', 503, { retryAfterMs: 3_000 }), 0, 0, policy)).toBeGreaterThanOrEqual(3_000);
    expect(retryDelayMs(new KubeError('c', 'm', 404), 0, 0, policy)).toBeUndefined();
    expect(retryDelayMs(new KubeError('c', 'm', 403), 0, 0, policy)).toBeUndefined();
    expect(retryDelayMs(new KubeError('c', 'm', 503), policy.attempts - 1, 0, policy)).toBeUndefined();
    expect(retryDelayMs(new KubeError('c', 'm', undefined), 0, 0, policy)).toBeGreaterThan(0);
    expect(retryDelayMs(new Error('not ours'), 0, 0, policy)).toBeUndefined();
  });

  it('withRetries stops at the first success and reports each wait', async () => {
    let calls = 0;
    const waits: number[] = [];
    const value = await withRetries(
      async () => {
        calls += 1;
        if (calls < 3) throw new KubeError('c', 'm', 500);
        return 'ok';
      },
      { ...policy, baseMs: 5, maxMs: 10 },
      { onRetry: (_e, w) => waits.push(w) },
    );
    expect(value).toBe('ok');
    expect(calls).toBe(3);
    expect(waits).toHaveLength(2);
  });
});
