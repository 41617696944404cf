/**
 * Conformance: UpdatePod rules of the reference that the Go tests exercise only indirectly —
 * runtime-pod kills for pods with a spec, mergeLastUpdate (StartTime not carried into activeUpdate,
 * the oldest StartTime kept while pending), terminal phases, natural completion (no grace period
 * handed down), evictions, the beforeWorkerWakes seam (once per wake-up) and close().
 */
import { describe, expect, it } from 'vitest';
import { createHarness, deferred, newNamedPod, newPodWithPhase, runningPod, until, untilAborted } from '../harness.js';

describe('runtime-pod kills for a pod the worker knows with a spec', () => {
  it('after the pod started, a runtime kill terminates it through syncTerminatingPod with its spec', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'real', false);
    h.workers.updatePod({ pod, updateType: 'create' });
    await h.drain();
    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('1', 'ghost', 'ns') });
    const s = h.workers.snapshot().get('1')!;
    expect(s.observedRuntime).toBe(true);
    expect(s.deleted).toBe(true);
    expect(s.gracePeriod).toBe(30);
    expect(s.pendingUpdate!.pod).toEqual(pod);
    expect(s.pendingUpdate!.runningPod).toBeUndefined();
    await h.drain();
    const recs = h.syncer.records('1')!;
    expect(recs.map((r) => (r.terminated ? 'terminated' : r.updateType))).toEqual(['create', 'kill', 'terminated']);
    expect(recs[1]!.runningPod).toBeUndefined();
    expect(recs[1]!.name).toBe('real');
    expect(recs[1]!.gracePeriod).toBe(30);
    // a pod with a spec stays tracked after termination (unlike a runtime-only pod)
    expect(h.workers.snapshot().get('1')!.finished).toBe(true);
    await h.workers.close();
  });

  it("before the pod started, a runtime kill uses the pending update's pod", async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'real', false);
    h.hold('1');
    h.workers.updatePod({ pod, updateType: 'create' });
    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('1', 'ghost', 'ns') });
    const s = h.workers.snapshot().get('1')!;
    expect(s.pendingUpdate!.pod).toEqual(pod);
    expect(s.pendingUpdate!.runningPod).toBeUndefined();
    expect(s.pendingUpdate!.updateType).toBe('kill');
    h.release('1');
    await h.drain();
    expect(h.syncer.records('1')!.map((r) => (r.terminated ? 'terminated' : r.updateType))).toEqual(['kill', 'terminated']);
    await h.workers.close();
  });
});

describe('mergeLastUpdate', () => {
  it('the active update does not carry StartTime; the pending update keeps the oldest StartTime', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.hold('1');
    h.workers.updatePod({ pod, updateType: 'create', startTime: 5_000 });
    h.workers.updatePod({ pod, updateType: 'update', startTime: 9_000 });
    expect(h.workers.snapshot().get('1')!.pendingUpdate!.startTime).toBe(5_000);
    expect(h.workers.snapshot().get('1')!.pendingUpdate!.updateType).toBe('update');
    h.release('1');
    await h.drain();
    const s = h.workers.snapshot().get('1')!;
    expect(s.activeUpdate!.startTime).toBeUndefined();
    expect(s.activeUpdate!.pod).toEqual(pod);
    await h.workers.close();
  });

  it('the latest pod spec becomes the active one', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'v1', false), updateType: 'create' });
    await h.drain();
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'v2', false), updateType: 'update' });
    await h.drain();
    expect(h.workers.snapshot().get('1')!.activeUpdate!.pod!.metadata!.name).toBe('v2');
    expect(h.syncer.records('1')!.map((r) => r.name)).toEqual(['v1', 'v2']);
    await h.workers.close();
  });
});

describe('transitions to terminating', () => {
  it('a terminal phase in an update terminates a running pod (not deleted, not evicted)', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
    await h.drain();
    h.workers.updatePod({ pod: newPodWithPhase('1', 'p', 'Failed'), updateType: 'update' });
    const s = h.workers.snapshot().get('1')!;
    expect(s.terminatingAt).toBe(h.clock.now());
    expect(s.deleted).toBe(false);
    expect(s.evicted).toBe(false);
    expect(s.gracePeriod).toBe(30);
    await h.drain();
    expect(h.workers.snapshot().get('1')!.finished).toBe(true);
    expect(h.workers.shouldPodContentBeRemoved('1')).toBe(false);
    await h.workers.close();
  });

  it('an eviction makes the pod content removable as soon as it is requested', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
    await h.drain();
    h.hold('1');
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'kill', killPodOptions: { evict: true } });
    expect(h.workers.shouldPodContentBeRemoved('1')).toBe(true);
    expect(h.workers.shouldPodRuntimeBeRemoved('1')).toBe(false);
    h.release('1');
    await h.drain();
    await h.workers.close();
  });

  it('a deletion makes the pod content removable only once it is terminated', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
    await h.drain();
    h.hold('1');
    const deleted = newNamedPod('1', 'ns', 'p', false);
    deleted.metadata!.deletionTimestamp = new Date(h.clock.now());
    h.workers.updatePod({ pod: deleted, updateType: 'update' });
    expect(h.workers.snapshot().get('1')!.deleted).toBe(true);
    expect(h.workers.shouldPodContentBeRemoved('1')).toBe(false);
    h.release('1');
    await h.drain();
    expect(h.workers.shouldPodContentBeRemoved('1')).toBe(true);
    await h.workers.close();
  });

  it('a natural completion (syncPod reports terminal) sets no grace period and hands none to syncTerminatingPod', async () => {
    const h = createHarness();
    h.syncer.terminal.add('1');
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
    await h.drain();
    const s = h.workers.snapshot().get('1')!;
    expect(s.finished).toBe(true);
    expect(s.startedTerminating).toBe(true);
    expect(s.gracePeriod).toBe(0);
    const kill = h.syncer.records('1')!.find((r) => r.updateType === 'kill')!;
    expect(kill.gracePeriod).toBeUndefined();
    await h.workers.close();
  });

  it('a natural completion marks the pod as terminating at the time the sync finished', async () => {
    const h = createHarness();
    h.syncer.terminal.add('1');
    h.syncer.onSyncPod = () => h.clock.tick(4_000);
    const t0 = h.clock.now();
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
    await h.drain();
    expect(h.workers.snapshot().get('1')!.terminatingAt).toBe(t0 + 4_000);
    await h.workers.close();
  });
});

describe('beforeWorkerWakes seam', () => {
  it('is called once per wake-up and before the pending update is consumed', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.hold('1');
    h.workers.updatePod({ pod, updateType: 'create' });
    await until(() => h.wakes.get('1') === 1, 'first wake-up');
    // held in the seam: the update is still pending
    expect(h.workers.snapshot().get('1')!.pendingUpdate!.updateType).toBe('create');
    expect(h.syncer.records('1')).toBeUndefined();
    // a second update while held replaces the pending one; one wake-up handles it
    h.workers.updatePod({ pod, updateType: 'update' });
    h.release('1');
    await h.drain();
    expect(h.syncer.records('1')).toEqual([{ name: 'p', updateType: 'update' }]);
    // kill: one wake-up for terminating, one for the terminated step
    const before = h.wakes.get('1')!;
    h.workers.updatePod({ pod, updateType: 'kill' });
    await h.drain();
    expect(h.wakes.get('1')! - before).toBe(2);
    await h.workers.close();
  });
});

describe('close()', () => {
  it('aborts a running sync and resolves', async () => {
    const h = createHarness();
    let aborted = false;
    h.syncer.onSyncPod = async (_uid, signal) => {
      await untilAborted(signal).catch((e) => {
        aborted = true;
        throw e;
      });
    };
    h.workers.updatePod({ pod: newNamedPod('1', 'ns', 'p', false), updateType: 'create' });
    await until(() => h.syncer.records('1')?.length === 1, 'syncPod running');
    await h.workers.close();
    expect(aborted).toBe(true);
  });
});

describe('more reference details', () => {
  it('a spec arriving for an orphan being terminated drives it with that spec, keeping the shorter grace period', async () => {
    const h = createHarness();
    h.hold('1');
    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('1', 'ghost', 'ns') });
    const pod = newNamedPod('1', 'ns', 'real', false);
    h.workers.updatePod({ pod, updateType: 'update' });
    const s = h.workers.snapshot().get('1')!;
    expect(s.gracePeriod).toBe(1);
    expect(s.pendingUpdate!.pod).toEqual(pod);
    expect(s.pendingUpdate!.killPodOptions).toEqual({ gracePeriodSecondsOverride: 1 });
    h.release('1');
    await h.drain();
    const recs = h.syncer.records('1')!;
    expect(recs.map((r) => (r.terminated ? 'terminated' : r.updateType))).toEqual(['kill', 'terminated']);
    expect(recs[0]!.runningPod).toBeUndefined();
    expect(recs[0]!.gracePeriod).toBe(1);
    // it had a spec, so it is remembered as finished rather than dropped
    expect(h.workers.snapshot().get('1')!.finished).toBe(true);
    await h.workers.close();
  });

  it('an eviction requested after termination already began does not mark the pod evicted, but is carried in the update', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'create' });
    await h.drain();
    h.hold('1');
    h.workers.updatePod({ pod, updateType: 'kill' });
    h.workers.updatePod({ pod, updateType: 'kill', killPodOptions: { evict: true } });
    const s = h.workers.snapshot().get('1')!;
    expect(s.evicted).toBe(false);
    expect(s.pendingUpdate!.killPodOptions).toEqual({ evict: true, gracePeriodSecondsOverride: 30 });
    h.release('1');
    await h.drain();
    expect(h.workers.snapshot().get('1')!.activeUpdate!.killPodOptions).toEqual({ evict: true, gracePeriodSecondsOverride: 30 });
    await h.workers.close();
  });

  it("a static pod killed before it could start: terminated and finished at the worker's wake-up, never acknowledged as terminating", async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newNamedPod('a', 'ns', 'st', true), updateType: 'update' });
    h.workers.updatePod({ pod: newNamedPod('b', 'ns', 'st', true), updateType: 'update' });
    await h.drain();
    const killAt = h.clock.now();
    h.hold('b');
    h.workers.updatePod({ pod: newNamedPod('b', 'ns', 'st', true), updateType: 'kill' });
    h.clock.tick(2_000);
    h.release('b');
    await h.drain();
    const s = h.workers.snapshot().get('b')!;
    expect(s.terminatingAt).toBe(killAt);
    expect(s.terminatedAt).toBe(killAt + 2_000);
    expect(s.finished).toBe(true);
    expect(s.working).toBe(false);
    expect(s.startedAt).toBeUndefined();
    expect(s.startedTerminating).toBe(false);
    expect(s.gracePeriod).toBe(30);
    expect(s.activeUpdate).toBeUndefined();
    expect(s.pendingUpdate).toBeUndefined();
    expect(h.syncer.records('b')).toBeUndefined();
    await h.workers.close();
  });

  it('a sync cancelled by termination is requeued with backoff; the termination steps follow at once', async () => {
    const h = createHarness({ resyncIntervalMs: 60_000, backOffPeriodMs: 10_000 });
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.syncer.onSyncPod = (_uid, signal) => untilAborted(signal);
    h.workers.updatePod({ pod, updateType: 'create' });
    await until(() => h.syncer.records('1')?.length === 1, 'syncPod running');
    h.workers.updatePod({ pod, updateType: 'kill' });
    await h.drain();
    const delays = h.queue.forUid('1').map((i) => i.delayMs);
    expect(delays).toHaveLength(2);
    expect(delays[0]).toBeGreaterThanOrEqual(10_000);
    expect(delays[0]).toBeLessThan(15_000);
    expect(delays[1]).toBe(0);
    expect(h.workers.snapshot().get('1')!.finished).toBe(true);
    await h.workers.close();
  });
});

describe('end-of-life details', () => {
  it('a runtime-only pod: housekeeping kills that arrive while it terminates do not resurrect it', async () => {
    const h = createHarness();
    const g = deferred();
    h.syncer.onTerminatingRuntime = () => g.promise;
    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('r', 'r', 'ns') });
    await until(() => h.syncer.records('r')?.length === 1, 'runtime kill running');
    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('r', 'r', 'ns') });
    expect(h.workers.snapshot().get('r')!.working).toBe(true);
    g.resolve();
    await h.drain();
    expect(h.syncer.records('r')).toHaveLength(1);
    expect(h.workers.snapshot().has('r')).toBe(false);
    await h.workers.close();
  });

  it('before the first SyncKnownPods a forgotten runtime pod could still have containers; after it, not', async () => {
    const h = createHarness();
    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('r', 'r', 'ns') });
    await h.drain();
    expect(h.workers.snapshot().has('r')).toBe(false);
    expect(h.workers.couldHaveRunningContainers('r')).toBe(true);
    expect(h.workers.isPodKnownTerminated('r')).toBe(false);
    h.workers.syncKnownPods([]);
    expect(h.workers.couldHaveRunningContainers('r')).toBe(false);
    expect(h.workers.shouldPodRuntimeBeRemoved('r')).toBe(true);
    await h.workers.close();
  });

  it('an update arriving during the terminated step is never run: the worker finishes', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    const g = deferred();
    h.syncer.onTerminated = () => g.promise;
    h.workers.updatePod({ pod, updateType: 'kill' });
    await until(() => h.syncer.records('1')?.some((r) => r.terminated) === true, 'terminated step running');
    h.workers.updatePod({ pod, updateType: 'update' });
    g.resolve();
    await h.drain();
    const s = h.workers.snapshot().get('1')!;
    expect(s.finished).toBe(true);
    expect(s.working).toBe(false);
    expect(h.syncer.records('1')!.filter((r) => r.terminated)).toHaveLength(1);
    await h.workers.close();
  });

  it('kill options in the active update are those of the latest update (not accumulated)', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'create' });
    await h.drain();
    h.syncer.failTerminating = () => new Error('keep terminating');
    h.workers.updatePod({ pod, updateType: 'kill', killPodOptions: { evict: true } });
    await h.drain();
    expect(h.workers.snapshot().get('1')!.activeUpdate!.killPodOptions).toEqual({ evict: true, gracePeriodSecondsOverride: 30 });
    h.workers.updatePod({ pod, updateType: 'update' });
    await h.drain();
    const s = h.workers.snapshot().get('1')!;
    expect(s.activeUpdate!.killPodOptions).toEqual({ gracePeriodSecondsOverride: 30 });
    expect(s.evicted).toBe(true); // the status flag, unlike the update, stays
    await h.workers.close();
  });
});
