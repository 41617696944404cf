/**
 * Conformance: fakes a surface-only test author might plausibly write. The Go FakeCache answers
 * Get with an error (NotFound) — a port may throw from `get`; Go's kubecontainer.Pod literals carry
 * only ID/Name/Namespace — a port may leave `containers`/`sandboxes` out; the recorder is optional.
 * The engine should keep the reference's behaviour in each case.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { calculateEffectiveGracePeriod, createPodWorkers, killPodNow, type PodStatus, type RunningPod } from '../../../src/engine/index.js';
import { FakeCache, FakeQueue, RecordingSyncer, newPodWithPhase } from '../harness.js';

describe('surface robustness', () => {
  it('a cache whose get() throws (the Go NotFound error) counts as "no cached terminal state"', async () => {
    const cache = new FakeCache();
    cache.get = () => {
      throw new Error('rpc error: code = NotFound desc = No such pod');
    };
    const syncer = new RecordingSyncer();
    const workers = createPodWorkers({ syncer, cache, workQueue: new FakeQueue() });
    expect(() => workers.updatePod({ pod: newPodWithPhase('1', 'done-pod', 'Succeeded'), updateType: 'create' })).not.toThrow();
    const s = workers.snapshot().get('1')!;
    expect(s.terminatingAt).toBeDefined();
    expect(s.terminatedAt).toBeUndefined(); // must go through syncTerminatingPod
    await workers.whenIdle();
    expect(syncer.records('1')!.map((r) => (r.terminated ? 'terminated' : r.updateType))).toEqual(['kill', 'terminated']);
    await workers.close();
  });

  it('a running pod given as { id, name, namespace } only is still killed', async () => {
    const syncer = new RecordingSyncer();
    const workers = createPodWorkers({ syncer, cache: new FakeCache(), workQueue: new FakeQueue() });
    const rp = { id: '1', name: 'orphaned-pod', namespace: 'ns' } as RunningPod;
    workers.updatePod({ updateType: 'kill', runningPod: rp });
    expect(workers.snapshot().get('1')!.fullname).toBe('orphaned-pod_ns');
    await workers.whenIdle();
    expect(syncer.records('1')).toHaveLength(1);
    expect(syncer.records('1')![0]!.runningPod).toEqual(rp);
    await workers.close();
  });

  it('FailedSync without a recorder does not break the worker', async () => {
    const cache = new FakeCache();
    cache.failNewerThan = new Error('cache closed');
    const syncer = new RecordingSyncer();
    const queue = new FakeQueue();
    const workers = createPodWorkers({ syncer, cache, workQueue: queue, backOffPeriodMs: 10_000 });
    workers.updatePod({ pod: newPodWithPhase('1', 'p', 'Running'), updateType: 'create' });
    await workers.whenIdle();
    expect(queue.forUid('1')[0]!.delayMs).toBeGreaterThanOrEqual(10_000);
    cache.failNewerThan = undefined;
    workers.updatePod({ pod: newPodWithPhase('1', 'p', 'Running'), updateType: 'sync' });
    await workers.whenIdle();
    expect(syncer.records('1')).toHaveLength(1);
    await workers.close();
  });

  it("a cached status given as an empty object (Go's `&kubecontainer.PodStatus{}`) counts as terminal", async () => {
    const cache = new FakeCache();
    cache.runtimeStatus = {} as PodStatus;
    const syncer = new RecordingSyncer();
    const workers = createPodWorkers({ syncer, cache, workQueue: new FakeQueue() });
    expect(() => workers.updatePod({ pod: newPodWithPhase('1', 'done-pod', 'Succeeded'), updateType: 'create' })).not.toThrow();
    const s = workers.snapshot().get('1')!;
    expect(s.terminatedAt).toBeDefined();
    expect(s.finished).toBe(false);
    await workers.whenIdle();
    expect(syncer.records('1')).toEqual([{ name: 'done-pod', terminated: true }]);
    await workers.close();
  });

  it("a pod with no spec (Go's zero PodSpec) gets the minimum grace period of 1", async () => {
    const bare: V1Pod = { metadata: { uid: 'pod-uid', name: '1' } };
    expect(calculateEffectiveGracePeriod({ gracePeriod: 0 }, bare)).toEqual({ gracePeriod: 1, shortened: false });
    const syncer = new RecordingSyncer();
    const workers = createPodWorkers({ syncer, cache: new FakeCache(), workQueue: new FakeQueue() });
    expect(() => workers.updatePod({ pod: bare, updateType: 'kill' })).not.toThrow();
    expect(workers.snapshot().get('pod-uid')!.gracePeriod).toBe(1);
    await workers.whenIdle();
    expect(syncer.records('pod-uid')![0]!.gracePeriod).toBe(1);
    await killPodNow(workers)({ metadata: { uid: 'other', name: '2' } }, false);
    await workers.close();
  });

  it('TestFakePodWorkers\' first case: an empty pod object ({}, UID "") is synced like any other', async () => {
    const syncer = new RecordingSyncer();
    const workers = createPodWorkers({ syncer, cache: new FakeCache(), workQueue: new FakeQueue() });
    const pod: V1Pod = {};
    const mirror: V1Pod = {};
    expect(() => workers.updatePod({ pod, mirrorPod: mirror, updateType: 'update' })).not.toThrow();
    await workers.whenIdle();
    expect(syncer.syncPodArgs).toHaveLength(1);
    expect(syncer.syncPodArgs[0]!.mirrorPod).toBe(mirror);
    expect(workers.snapshot().get('')!.fullname).toBe('_');
    await workers.close();
  });

  it('a negative grace override is clamped to 1, like any value below 1', () => {
    const pod: V1Pod = { metadata: { uid: '1', name: 'p', namespace: 'ns' }, spec: { containers: [], terminationGracePeriodSeconds: 30 } };
    expect(calculateEffectiveGracePeriod({ gracePeriod: 0 }, pod, { gracePeriodSecondsOverride: -5 }).gracePeriod).toBe(1);
    expect(calculateEffectiveGracePeriod({ gracePeriod: 10 }, pod, { gracePeriodSecondsOverride: -5 })).toEqual({ gracePeriod: 1, shortened: true });
  });

  it('a deletionTimestamp that arrives as a string (raw API JSON) still marks the pod deleted', async () => {
    const syncer = new RecordingSyncer();
    const workers = createPodWorkers({ syncer, cache: new FakeCache(), workQueue: new FakeQueue() });
    const pod = { metadata: { uid: '1', name: 'p', namespace: 'ns', deletionTimestamp: '2026-01-01T00:00:00Z' }, spec: { containers: [] } } as unknown as V1Pod;
    workers.updatePod({ pod, updateType: 'update' });
    const s = workers.snapshot().get('1')!;
    expect(s.deleted).toBe(true);
    expect(s.terminatingAt).toBeDefined();
    await workers.whenIdle();
    expect(workers.shouldPodContentBeRemoved('1')).toBe(true);
    await workers.close();
  });
});
