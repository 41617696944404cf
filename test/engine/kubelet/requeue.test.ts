/**
 * Conformance: the reference's completeWork requeue rules and the status-cache handshake, observed
 * through the WorkQueue seam with a fake clock: resync after success (jittered [1, 1.5) × interval),
 * backoff after an error ([1, 1.5) × backoff), a short backoff when the network is not ready
 * ([1, 1.5) s), an immediate requeue on a phase change, and nothing after the final step. Also
 * FailedSync when the cache cannot answer, and getNewerThan's minTime following the last sync.
 */
import { describe, expect, it, vi } from 'vitest';
import { createPodWorkers } from '../../../src/engine/index.js';
import { FakeCache, createHarness, newNamedPod, runningPod } from '../harness.js';

const inRange = (v: number, lo: number, hi: number) => {
  expect(v).toBeGreaterThanOrEqual(lo);
  expect(v).toBeLessThan(hi);
};

describe('requeue via the WorkQueue', () => {
  it('a successful sync is requeued at the resync interval with jitter', async () => {
    const h = createHarness({ resyncIntervalMs: 60_000, backOffPeriodMs: 10_000 });
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
    await h.drain();
    const items = h.queue.forUid('1');
    expect(items).toHaveLength(1);
    inRange(items[0]!.delayMs, 60_000, 90_000);
    await h.workers.close();
  });

  it('a failed sync is requeued after the backoff period with jitter, and the pod stays in sync', async () => {
    const h = createHarness({ resyncIntervalMs: 60_000, backOffPeriodMs: 10_000 });
    h.syncer.failSyncPod = () => new Error('image pull failed');
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
    await h.drain();
    const items = h.queue.forUid('1');
    expect(items).toHaveLength(1);
    inRange(items[0]!.delayMs, 10_000, 15_000);
    const s = h.workers.snapshot().get('1')!;
    expect(s.working).toBe(false);
    expect(s.terminatingAt).toBeUndefined();
    expect(s.startedAt).toBeDefined();
    // the worker itself records no event for a syncer error (the syncer reports its own)
    expect(h.recorder.events).toEqual([]);
    await h.workers.close();
  });

  it('a "network is not ready" error backs off for about one second', async () => {
    const h = createHarness({ resyncIntervalMs: 60_000, backOffPeriodMs: 10_000 });
    h.syncer.failSyncPod = () => new Error('network is not ready: container runtime network not ready: cni config uninitialized');
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
    await h.drain();
    const items = h.queue.forUid('1');
    expect(items).toHaveLength(1);
    inRange(items[0]!.delayMs, 1_000, 1_500);
    await h.workers.close();
  });

  it('phase changes requeue at once; the final step queues nothing', async () => {
    const h = createHarness({ resyncIntervalMs: 60_000, backOffPeriodMs: 10_000 });
    h.syncer.terminal.add('1');
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
    await h.drain();
    // sync → terminal (0), terminating → terminated (0), terminated: no requeue
    expect(h.queue.forUid('1').map((i) => i.delayMs)).toEqual([0, 0]);
    expect(h.workers.snapshot().get('1')!.finished).toBe(true);
    await h.workers.close();
  });

  it('a failed syncTerminatingPod is retried with backoff and the pod stays terminating', async () => {
    const h = createHarness({ resyncIntervalMs: 60_000, backOffPeriodMs: 10_000 });
    h.syncer.failTerminating = () => new Error('kill failed');
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'kill' });
    await h.drain();
    const items = h.queue.forUid('1');
    expect(items).toHaveLength(1);
    inRange(items[0]!.delayMs, 10_000, 15_000);
    expect(h.workers.snapshot().get('1')!.terminatedAt).toBeUndefined();
    // the kubelet's next update (the work queue firing) retries the termination
    h.syncer.failTerminating = undefined;
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'sync' });
    await h.drain();
    expect(h.workers.snapshot().get('1')!.finished).toBe(true);
    expect(
      h.syncer
        .records('1')!
        .filter((r) => r.updateType === 'kill')
        .map((r) => r.gracePeriod),
    ).toEqual([30, 30]);
    await h.workers.close();
  });

  it('a runtime-only pod is terminated without asking the status cache', async () => {
    const h = createHarness();
    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('r', 'r', 'ns') });
    await h.drain();
    expect(h.cache.newerThanCalls).toEqual([]);
    expect(h.syncer.records('r')).toHaveLength(1);
    await h.workers.close();
  });
});

describe('status cache handshake', () => {
  it('when the cache cannot answer, the worker records FailedSync, does not sync, and backs off', async () => {
    const h = createHarness({ resyncIntervalMs: 60_000, backOffPeriodMs: 10_000 });
    h.cache.failNewerThan = new Error('cache closed');
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'create' });
    await h.drain();
    expect(h.syncer.records('1')).toBeUndefined();
    expect(h.recorder.events).toHaveLength(1);
    expect(h.recorder.events[0]!.type).toBe('Warning');
    expect(h.recorder.events[0]!.reason).toBe('FailedSync');
    expect(h.recorder.events[0]!.message).toContain('cache closed');
    expect(h.recorder.events[0]!.pod.metadata!.uid).toBe('1');
    inRange(h.queue.forUid('1')[0]!.delayMs, 10_000, 15_000);
    await h.workers.close();
  });

  it('each sync waits for a status newer than the end of the previous sync', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.syncer.onSyncPod = () => h.clock.tick(7_000); // the sync takes 7 s of fake time
    h.workers.updatePod({ pod, updateType: 'create' });
    await h.drain();
    const endOfFirst = h.clock.now();
    h.clock.tick(1_000);
    h.workers.updatePod({ pod, updateType: 'update' });
    await h.drain();
    expect(h.cache.newerThanCalls).toHaveLength(2);
    expect(h.cache.newerThanCalls[0]!.minTime).toBeLessThanOrEqual(h.workers.snapshot().get('1')!.syncedAt!);
    expect(h.cache.newerThanCalls[1]!.minTime).toBe(endOfFirst);
    await h.workers.close();
  });
});

describe('default work queue', () => {
  it('without a WorkQueue the engine re-syncs the pod on its own after the resync interval', async () => {
    const cache = new FakeCache();
    const types: string[] = [];
    let second!: () => void;
    const secondSync = new Promise<void>((r) => (second = r));
    const workers = createPodWorkers({
      cache,
      resyncIntervalMs: 20,
      syncer: {
        async syncPod(_s, updateType) {
          types.push(updateType);
          if (types.length === 2) second();
          return false;
        },
        async syncTerminatingPod() {},
        async syncTerminatingRuntimePod() {},
        async syncTerminatedPod() {},
      },
    });
    workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
    await secondSync;
    expect(types[0]).toBe('create');
    expect(types[1]).toBe('sync');
    await workers.close();
  });
});

describe('default work queue timing (fake timers)', () => {
  function syncerCounting() {
    const calls: string[] = [];
    let failTerminatingOnce = false;
    return {
      calls,
      failNextTerminating() {
        failTerminatingOnce = true;
      },
      syncer: {
        async syncPod(_s: AbortSignal, updateType: string) {
          calls.push(`sync:${updateType}`);
          return false;
        },
        async syncTerminatingPod() {
          calls.push('terminating');
          if (failTerminatingOnce) {
            failTerminatingOnce = false;
            throw new Error('runtime unavailable');
          }
        },
        async syncTerminatingRuntimePod() {
          calls.push('terminating-runtime');
        },
        async syncTerminatedPod() {
          calls.push('terminated');
        },
      },
    };
  }

  it('re-syncs after the default 60 s interval (jittered up to 90 s), and close() releases every timer', async () => {
    vi.useFakeTimers();
    try {
      const s = syncerCounting();
      const workers = createPodWorkers({ cache: new FakeCache(), syncer: s.syncer });
      workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
      await vi.advanceTimersByTimeAsync(0);
      expect(s.calls).toEqual(['sync:create']);
      await vi.advanceTimersByTimeAsync(59_000);
      expect(s.calls).toEqual(['sync:create']);
      await vi.advanceTimersByTimeAsync(31_000);
      expect(s.calls).toEqual(['sync:create', 'sync:sync']);
      await workers.close();
      expect(vi.getTimerCount()).toBe(0);
      await vi.advanceTimersByTimeAsync(600_000);
      expect(s.calls).toEqual(['sync:create', 'sync:sync']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('retries a failed termination after the default 10 s backoff (jittered up to 15 s) and then finishes', async () => {
    vi.useFakeTimers();
    try {
      const s = syncerCounting();
      s.failNextTerminating();
      const workers = createPodWorkers({ cache: new FakeCache(), syncer: s.syncer });
      workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'kill' });
      await vi.advanceTimersByTimeAsync(0);
      expect(s.calls).toEqual(['terminating']);
      await vi.advanceTimersByTimeAsync(9_900);
      expect(s.calls).toEqual(['terminating']);
      await vi.advanceTimersByTimeAsync(5_200);
      expect(s.calls).toEqual(['terminating', 'terminating', 'terminated']);
      expect(workers.snapshot().get('1')!.finished).toBe(true);
      // nothing more is scheduled for a finished pod
      await vi.advanceTimersByTimeAsync(600_000);
      expect(s.calls).toEqual(['terminating', 'terminating', 'terminated']);
      await workers.close();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('a supplied WorkQueue replaces the internal one', () => {
  it('the engine only enqueues; it never re-syncs on its own', async () => {
    vi.useFakeTimers();
    try {
      const h = createHarness({ resyncIntervalMs: 1_000, backOffPeriodMs: 1_000 });
      h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
      for (let i = 0; i < 50 && h.syncer.records('1') === undefined; i++) await vi.advanceTimersByTimeAsync(0);
      expect(h.syncer.records('1')).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(600_000);
      expect(h.syncer.records('1')).toHaveLength(1);
      expect(h.queue.forUid('1')).toHaveLength(1);
      await h.workers.close();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('jitter', () => {
  it('resync delays are spread over [interval, 1.5 × interval), not all identical', async () => {
    const h = createHarness({ resyncIntervalMs: 60_000 });
    for (let i = 0; i < 20; i++) h.workers.updatePod({ pod: newNamedPod(String(i), 'ns', 'p', false), updateType: 'create' });
    await h.drain();
    const delays = h.queue.items.map((i) => i.delayMs);
    expect(delays).toHaveLength(20);
    for (const d of delays) inRange(d, 60_000, 90_000);
    expect(new Set(delays).size).toBeGreaterThan(1);
    await h.workers.close();
  });
});
