import { describe, expect, it, vi } from 'vitest';
import type { ListPodsOptions, NodeSession, PodInfo } from '../../../src/domain/session-api.js';
import { reasonsForUnfinished } from '../../../src/services/diagnose/unfinished.js';

function pod(uid: string, extra: Partial<PodInfo> = {}): PodInfo {
  return { uid, namespace: 'default', name: uid, static: false, state: 'terminating', containersRunning: 1, containersTotal: 1, since: 0, history: [], ...extra };
}

function sessionListing(listPods: (options?: ListPodsOptions) => Promise<PodInfo[]>): NodeSession {
  return { listPods } as unknown as NodeSession;
}

describe('reasonsForUnfinished', () => {
  it('reads only the unfinished pods, gives each its reason, and says nothing when the listing is prompt', async () => {
    const listPods = vi.fn(async (_options?: ListPodsOptions) => [pod('a', { lastError: { at: 0, message: 'rpc error: StopContainer: deadline exceeded\nmore' } })]);
    const onSlow = vi.fn();
    const reasons = await reasonsForUnfinished(sessionListing(listPods), ['a', 'b'], () => 1_000, { onSlow });
    expect(listPods).toHaveBeenCalledOnce();
    expect(listPods.mock.calls[0]![0]).toMatchObject({ uids: ['a', 'b'], runtimeMaxAgeMs: 1_000 });
    expect(reasons.get('a')).toBe('rpc error: StopContainer: deadline exceeded');
    expect(reasons.get('b')).toMatch(/^not listed any more/);
    expect(onSlow).not.toHaveBeenCalled();
  });

  it('a listing that does not answer (the runtime gone) is said after noticeAfterMs with what is left of its bound, and given up at the bound', async () => {
    // answers only when aborted, as a listing of a runtime that is gone
    const listPods = (options?: ListPodsOptions) => new Promise<PodInfo[]>((_, reject) => options?.signal?.addEventListener('abort', () => reject(options.signal!.reason as Error), { once: true }));
    const lines: string[] = [];
    const started = performance.now();
    const reasons = await reasonsForUnfinished(sessionListing(listPods), ['a', 'b', 'c'], () => 0, { boundMs: 2_400, noticeAfterMs: 100, onSlow: (line) => lines.push(line) });
    const tookMs = performance.now() - started;
    expect(reasons.size).toBe(0);
    expect(lines).toEqual(['asking the runtime why 3 pod(s) did not finish (at most 2s more)']);
    expect(tookMs).toBeGreaterThanOrEqual(2_300);
    expect(tookMs).toBeLessThan(4_000);
  });
});
