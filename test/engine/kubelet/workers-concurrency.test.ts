/**
 * Conformance: one serial worker per pod (the reference's goroutine per UID): pods progress
 * independently, a pod never has two syncs in flight, errors thrown synchronously by a syncer are
 * retried like rejected ones, and a status-cache wait does not outlive a termination request.
 */
import { describe, expect, it } from 'vitest';
import { createHarness, deferred, newNamedPod, until, untilAborted } from '../harness.js';

describe('one serial worker per pod', () => {
  it('a pod blocked in syncPod does not hold back another pod', async () => {
    const h = createHarness();
    const g = deferred();
    h.syncer.onSyncPod = (uid) => (uid === 'slow' ? g.promise : undefined);
    h.workers.updatePod({ pod: newNamedPod('slow', 'ns', 'slow', false), updateType: 'create' });
    h.workers.updatePod({ pod: newNamedPod('fast', 'ns', 'fast', false), updateType: 'create' });
    await h.drain(['slow']);
    expect(h.syncer.records('fast')).toEqual([{ name: 'fast', updateType: 'create' }]);
    expect(h.workers.snapshot().get('fast')!.working).toBe(false);
    expect(h.workers.snapshot().get('slow')!.working).toBe(true);
    g.resolve();
    await h.drain();
    await h.workers.close();
  });

  it('a pod never runs two syncs at once; an update during a sync runs after it', async () => {
    const h = createHarness();
    let inFlight = 0;
    let maxInFlight = 0;
    const g = deferred();
    let first = true;
    h.syncer.onSyncPod = async () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      if (first) {
        first = false;
        await g.promise;
      }
      inFlight--;
    };
    const pod = (name: string) => newNamedPod('1', 'ns', name, false);
    h.workers.updatePod({ pod: pod('a'), updateType: 'create' });
    await until(() => h.syncer.records('1')?.length === 1, 'first sync running');
    h.workers.updatePod({ pod: pod('b'), updateType: 'update' });
    h.workers.updatePod({ pod: pod('c'), updateType: 'update' });
    expect(h.workers.snapshot().get('1')!.pendingUpdate!.pod!.metadata!.name).toBe('c');
    g.resolve();
    await h.drain();
    expect(maxInFlight).toBe(1);
    // the intermediate update was superseded: only the latest pending one ran
    expect(h.syncer.records('1')!.map((r) => r.name)).toEqual(['a', 'c']);
    await h.workers.close();
  });
});

describe('robustness', () => {
  it('a syncer that throws synchronously is treated as a failed sync and retried', async () => {
    const h = createHarness({ backOffPeriodMs: 10_000 });
    let calls = 0;
    h.syncer.syncPod = () => {
      calls++;
      if (calls === 1) throw new Error('boom');
      return Promise.resolve(false);
    };
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'create' });
    await h.drain();
    expect(h.queue.forUid('1')[0]!.delayMs).toBeGreaterThanOrEqual(10_000);
    h.workers.updatePod({ pod, updateType: 'sync' });
    await h.drain();
    expect(calls).toBe(2);
    expect(h.workers.snapshot().get('1')!.working).toBe(false);
    await h.workers.close();
  });

  it('a worker waiting on the status cache is released by a termination request', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    let hung = true;
    const original = h.cache.getNewerThan.bind(h.cache);
    h.cache.getNewerThan = (uid: string, minTime: number, signal?: AbortSignal) => {
      if (!hung) return original(uid, minTime);
      hung = false;
      return new Promise((_, reject) => {
        signal?.addEventListener('abort', () => reject(signal.reason ?? new Error('aborted')), { once: true });
      });
    };
    h.workers.updatePod({ pod, updateType: 'create' });
    await until(() => !hung, 'the cache wait began');
    h.workers.updatePod({ pod, updateType: 'kill' });
    await h.drain();
    expect(h.workers.snapshot().get('1')!.finished).toBe(true);
    expect(h.syncer.records('1')!.map((r) => (r.terminated ? 'terminated' : r.updateType))).toEqual(['kill', 'terminated']);
    await h.workers.close();
  });
});

describe('ordering details of the reference', () => {
  it('killPodNow resolves when containers are stopped, before the terminated (cleanup) step finishes', async () => {
    const { killPodNow } = await import('../../../src/engine/index.js');
    const h = createHarness();
    const cleanup = deferred();
    h.syncer.onTerminated = () => cleanup.promise;
    const pod = newNamedPod('1', 'ns', 'p', false);
    await killPodNow(h.workers)(pod, false, 5);
    // resolved while syncTerminatedPod is still blocked
    expect(h.workers.snapshot().get('1')!.terminatedAt).toBeDefined();
    expect(h.workers.snapshot().get('1')!.finished).toBe(false);
    cleanup.resolve();
    await h.drain();
    expect(h.workers.snapshot().get('1')!.finished).toBe(true);
    await h.workers.close();
  });

  it('a runtime-only pod is acknowledged as terminating while syncTerminatingRuntimePod runs', async () => {
    const h = createHarness();
    let during: boolean | undefined;
    const orig = h.syncer.syncTerminatingRuntimePod.bind(h.syncer);
    h.syncer.syncTerminatingRuntimePod = async (signal, rp) => {
      during = h.workers.shouldPodContainersBeTerminating(rp.id);
      return orig(signal, rp);
    };
    h.workers.updatePod({ updateType: 'kill', runningPod: { id: 'r', name: 'r', namespace: 'ns', containers: [], sandboxes: [] } });
    await h.drain();
    expect(during).toBe(true);
    await h.workers.close();
  });

  it('a pod orphaned before its worker ever woke is forgotten and never synced', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
    const state = h.workers.syncKnownPods([]);
    expect(state.has('1')).toBe(false);
    expect(h.workers.snapshot().has('1')).toBe(false);
    await h.drain();
    expect(h.syncer.records('1')).toBeUndefined();
    expect(h.workers.snapshot().has('1')).toBe(false);
    // the UID can be used again afterwards
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
    await h.drain();
    expect(h.syncer.records('1')).toEqual([{ name: 'p', updateType: 'create' }]);
    await h.workers.close();
  });
});

describe('cancellation signals', () => {
  it('an ordinary update does not cancel a running syncPod', async () => {
    const h = createHarness();
    const g = deferred();
    let aborted = false;
    h.syncer.onSyncPod = async (_uid, signal) => {
      if (h.syncer.records('1')!.length > 1) return;
      signal.addEventListener('abort', () => (aborted = true), { once: true });
      await g.promise;
    };
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'create' });
    await until(() => h.syncer.records('1')?.length === 1, 'first sync running');
    h.workers.updatePod({ pod, updateType: 'update' });
    h.workers.updatePod({ pod, updateType: 'sync', killPodOptions: { gracePeriodSecondsOverride: 1 } });
    g.resolve();
    await h.drain();
    expect(aborted).toBe(false);
    expect(h.syncer.records('1')!.map((r) => r.updateType)).toEqual(['create', 'sync']);
    await h.workers.close();
  });

  it('after a cancellation the next sync gets a fresh, un-aborted signal', async () => {
    const h = createHarness();
    h.syncer.onSyncPod = (_uid, signal) => untilAborted(signal);
    let terminatingSignalAborted: boolean | undefined;
    h.syncer.onTerminating = (_uid, signal) => {
      terminatingSignalAborted = signal.aborted;
    };
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'create' });
    await until(() => h.syncer.records('1')?.length === 1, 'sync running');
    h.workers.updatePod({ pod, updateType: 'kill' });
    await h.drain();
    expect(terminatingSignalAborted).toBe(false);
    expect(h.workers.snapshot().get('1')!.finished).toBe(true);
    await h.workers.close();
  });
});
