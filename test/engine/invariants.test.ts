/**
 * The engine's semantics, one block per rule of the engine issue (points 1–8), beyond the
 * kubelet's own scenarios. Events have their own file.
 */
import { describe, expect, it, vi } from 'vitest';
import { mergeLastUpdate } from '../../src/engine/merge.js';
import { newUpdate, PodSyncRecord } from '../../src/engine/status.js';
import { SECOND, untilAborted, createHarness, deferred, emptyStatus, newNamedPod, newPodWithPhase, nextEvent, runningPod, withDeletionTimestamp } from './harness.js';

const steps = (h: ReturnType<typeof createHarness>, uid: string): string[] =>
  (h.syncer.processed.get(uid) ?? []).map((r) => (r.terminated ? 'terminated' : r.runningPod ? 'kill-runtime' : r.updateType === 'kill' ? `kill(${r.gracePeriod})` : `sync(${r.updateType})`));

describe('1. updatePod admission rules', () => {
  it('ignores every non-kill update of a runtime-only pod, completing its kill options at once', async () => {
    const h = createHarness();
    let completed = 0;
    for (const updateType of ['create', 'update', 'sync'] as const) {
      h.workers.updatePod({ updateType, runningPod: runningPod('r', 'r', 'ns'), killPodOptions: { onComplete: () => completed++ } });
    }
    await h.workers.whenIdle();
    expect(h.workers.snapshot().size).toBe(0);
    expect(h.syncer.processed.size).toBe(0);
    expect(completed).toBe(3);
  });

  it('records a terminal pod whose cached runtime shows nothing running as terminated: only the terminated step runs', async () => {
    const h = createHarness();
    const status = emptyStatus('done');
    status.containerStatuses.push({ id: 'c', name: 'c', state: 'exited', exitCode: 0 });
    status.sandboxStatuses.push({ id: 's', state: 'notready' });
    h.cache.statuses.set('done', status);
    h.workers.updatePod({ updateType: 'create', pod: newPodWithPhase('done', 'done', 'Failed') });
    expect(h.workers.isPodKnownTerminated('done')).toBe(true);
    expect(h.workers.couldHaveRunningContainers('done')).toBe(false);
    await h.workers.whenIdle();
    expect(steps(h, 'done')).toEqual(['terminated']);
    expect(h.workers.statusOf('done')!.finished).toBe(true);
  });

  it('terminates (not just cleans up) a terminal pod whose cached runtime still shows something running', async () => {
    for (const running of ['container', 'sandbox'] as const) {
      const h = createHarness();
      const status = emptyStatus('done');
      if (running === 'container') status.containerStatuses.push({ id: 'c', name: 'c', state: 'running' });
      else status.sandboxStatuses.push({ id: 's', state: 'ready' });
      h.cache.statuses.set('done', status);
      h.workers.updatePod({ updateType: 'create', pod: newPodWithPhase('done', 'done', 'Succeeded') });
      expect(h.workers.isPodKnownTerminated('done')).toBe(false);
      await h.workers.whenIdle();
      expect(steps(h, 'done')).toEqual(['kill(30)', 'terminated']);
    }
  });

  it('a create on a terminating UID only sets restartRequested', async () => {
    const h = createHarness();
    const gate = deferred();
    h.syncer.onTerminating = () => gate.promise;
    const pod = newNamedPod('u', 'ns', 'p', false);
    h.workers.updatePod({ updateType: 'create', pod });
    await h.workers.whenIdle();
    h.workers.updatePod({ updateType: 'kill', pod });
    const before = h.workers.statusOf('u')!;
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('u', 'ns', 'renamed', false) });
    const after = h.workers.statusOf('u')!;
    expect(after.restartRequested).toBe(true);
    expect(after.pendingUpdate).toEqual(before.pendingUpdate);
    gate.resolve();
    await h.workers.whenIdle();
    expect(steps(h, 'u')).toEqual(['sync(create)', 'kill(30)', 'terminated']);
    expect(h.syncer.processed.get('u')!.every((r) => r.name === 'p')).toBe(true);
    // the finished pod is forgotten at the next sync even though still desired, so it can restart
    const known = h.workers.syncKnownPods([pod]);
    expect(known.has('u')).toBe(false);
    h.workers.updatePod({ updateType: 'create', pod });
    await h.workers.whenIdle();
    expect(steps(h, 'u')).toEqual(['sync(create)', 'kill(30)', 'terminated', 'sync(create)']);
  });

  it('a finished pod ignores every update until syncKnownPods forgets it', async () => {
    const h = createHarness();
    const pod = newNamedPod('f', 'ns', 'f', false);
    h.workers.updatePod({ updateType: 'kill', pod });
    await h.workers.whenIdle();
    const done = h.workers.statusOf('f');
    expect(done!.finished).toBe(true);
    for (const updateType of ['update', 'sync', 'kill'] as const) h.workers.updatePod({ updateType, pod });
    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('f', 'f', 'ns') });
    await h.workers.whenIdle();
    expect(h.workers.statusOf('f')).toEqual({ ...done, observedRuntime: true });
    expect(steps(h, 'f')).toEqual(['kill(30)', 'terminated']);
    h.workers.syncKnownPods([]);
    expect(h.workers.statusOf('f')).toBeUndefined();
    h.workers.updatePod({ updateType: 'create', pod });
    await h.workers.whenIdle();
    expect(steps(h, 'f')).toEqual(['kill(30)', 'terminated', 'sync(create)']);
  });

  it('a runtime-only kill for a pod known with a spec uses the newest spec', async () => {
    const h = createHarness();
    const pod = newNamedPod('k', 'ns', 'k', false);
    h.workers.updatePod({ updateType: 'create', pod });
    await h.workers.whenIdle();
    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('k', 'k', 'ns') });
    const pending = h.workers.statusOf('k')!.pendingUpdate!;
    expect(pending.pod).toBe(pod);
    expect(pending.runningPod).toBeUndefined();
    await h.workers.whenIdle();
    expect(steps(h, 'k')).toEqual(['sync(create)', 'kill(30)', 'terminated']);
    const status = h.workers.statusOf('k')!;
    expect(status.deleted).toBe(true);
    expect(status.observedRuntime).toBe(true);
  });

  it('rejects an update with neither pod nor running pod', () => {
    const h = createHarness();
    expect(() => h.workers.updatePod({ updateType: 'create' })).toThrow(/pod or a runningPod/);
  });
});

describe('2. transitions to terminating', () => {
  const cases = [
    { desc: 'deletionTimestamp', pod: () => withDeletionTimestamp(newNamedPod('t', 'ns', 't', false), 5 * SECOND), type: 'update' as const, deleted: true, evicted: false },
    { desc: 'Succeeded phase', pod: () => newPodWithPhase('t', 't', 'Succeeded'), type: 'update' as const, deleted: false, evicted: false },
    { desc: 'Failed phase', pod: () => newPodWithPhase('t', 't', 'Failed'), type: 'update' as const, deleted: false, evicted: false },
    { desc: 'kill', pod: () => newNamedPod('t', 'ns', 't', false), type: 'kill' as const, deleted: false, evicted: false },
    { desc: 'eviction', pod: () => newNamedPod('t', 'ns', 't', false), type: 'kill' as const, deleted: false, evicted: true, evict: true },
  ];
  for (const tc of cases) {
    it(`on ${tc.desc}`, async () => {
      const h = createHarness();
      h.workers.updatePod({ updateType: 'create', pod: newNamedPod('t', 'ns', 't', false) });
      await h.workers.whenIdle();
      expect(h.workers.isPodTerminationRequested('t')).toBe(false);
      h.clock.tick();
      h.workers.updatePod({ updateType: tc.type, pod: tc.pod(), killPodOptions: tc.evict ? { evict: true } : undefined });
      const s = h.workers.statusOf('t')!;
      expect(s.terminatingAt).toBe(2 * SECOND);
      expect(s.deleted).toBe(tc.deleted);
      expect(s.evicted).toBe(tc.evicted);
      // the worker has not seen it yet: containers may still be starting
      expect(h.workers.shouldPodContainersBeTerminating('t')).toBe(false);
      await h.workers.whenIdle();
      expect(h.workers.shouldPodContainersBeTerminating('t')).toBe(true);
      expect(h.workers.statusOf('t')!.finished).toBe(true);
      expect(h.workers.shouldPodContentBeRemoved('t')).toBe(tc.deleted || tc.evicted);
    });
  }

  it('a plain update does not terminate, and kill options on it complete at once', async () => {
    const h = createHarness();
    let completed = 0;
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('t', 'ns', 't', false), killPodOptions: { onComplete: () => completed++ } });
    expect(completed).toBe(1);
    expect(h.workers.statusOf('t')!.pendingUpdate!.killPodOptions).toBeUndefined();
    await h.workers.whenIdle();
    expect(h.workers.isPodTerminationRequested('t')).toBe(false);
  });

  it('a kill followed by a non-evicting kill keeps the pod evicted', async () => {
    const h = createHarness();
    const gate = deferred();
    h.syncer.onTerminating = () => gate.promise;
    const pod = newNamedPod('e', 'ns', 'e', false);
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { evict: true } });
    h.workers.updatePod({ updateType: 'kill', pod });
    gate.resolve();
    await h.workers.whenIdle();
    expect(h.workers.statusOf('e')!.evicted).toBe(true);
  });
});

describe('3. grace periods', () => {
  it('deletionGracePeriodSeconds is bedrock, an override only shortens, the spec is the default', async () => {
    const h = createHarness();
    const gate = deferred();
    h.syncer.onTerminating = () => gate.promise;
    const pod = withDeletionTimestamp(newNamedPod('g', 'ns', 'g', false), SECOND, 20);
    h.workers.updatePod({ updateType: 'update', pod, killPodOptions: { gracePeriodSecondsOverride: 25 } });
    expect(h.workers.statusOf('g')!.gracePeriod).toBe(20);
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 40 } });
    expect(h.workers.statusOf('g')!.gracePeriod).toBe(20);
    h.workers.updatePod({ updateType: 'kill', pod: newNamedPod('g', 'ns', 'g', false) });
    expect(h.workers.statusOf('g')!.gracePeriod).toBe(20); // never grows back to the spec's 30
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: -5 } });
    expect(h.workers.statusOf('g')!.gracePeriod).toBe(1); // never below 1
    gate.resolve();
    await h.workers.whenIdle();
    expect(steps(h, 'g')).toEqual(['kill(1)', 'terminated']);
  });

  it('a shorter grace aborts the in-flight terminating sync, which reruns at once with it', async () => {
    const h = createHarness();
    const calls: number[] = [];
    h.syncer.onTerminating = (_uid, signal) => {
      const grace = h.syncer.processed.get('g')!.at(-1)!.gracePeriod!;
      calls.push(grace);
      return grace > 5 ? untilAborted(signal) : undefined;
    };
    const pod = newNamedPod('g', 'ns', 'g', false);
    const started = nextEvent(h.workers, (e) => e.type === 'sync-started' && e.phase === 'terminating');
    h.workers.updatePod({ updateType: 'kill', pod });
    await started;
    const shortened = nextEvent(h.workers, (e) => e.type === 'grace-shortened');
    const failed = nextEvent(h.workers, (e) => e.type === 'sync-failed');
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 5 } });
    expect(await shortened).toMatchObject({ from: 30, to: 5 });
    expect(await failed).toMatchObject({ phase: 'terminating', aborted: true });
    await h.workers.whenIdle();
    expect(calls).toEqual([30, 5]);
    expect(steps(h, 'g')).toEqual(['kill(30)', 'kill(5)', 'terminated']);
  });

  it('an equal or longer grace does not abort the in-flight sync', async () => {
    const h = createHarness();
    const gate = deferred();
    let aborted = false;
    h.syncer.onTerminating = (_uid, signal) => {
      signal.addEventListener('abort', () => (aborted = true));
      return gate.promise;
    };
    const pod = newNamedPod('g', 'ns', 'g', false);
    const started = nextEvent(h.workers, (e) => e.type === 'sync-started');
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 10 } });
    await started;
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 10 } });
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 50 } });
    gate.resolve();
    await h.workers.whenIdle();
    expect(aborted).toBe(false);
    expect(steps(h, 'g')).toEqual(['kill(10)', 'terminated']);
  });

  it('a new termination aborts an in-flight syncPod, then terminates', async () => {
    const h = createHarness();
    h.syncer.onSyncPod = (_uid, signal) => untilAborted(signal);
    const pod = newNamedPod('s', 'ns', 's', false);
    const started = nextEvent(h.workers, (e) => e.type === 'sync-started');
    h.workers.updatePod({ updateType: 'create', pod });
    await started;
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 3 } });
    await h.workers.whenIdle();
    expect(steps(h, 's')).toEqual(['sync(create)', 'kill(3)', 'terminated']);
    // the cancelled sync backs off (the kubelet treats a cancellation as an error)
    const delays = h.queue.items.filter((i) => i.uid === 's').map((i) => i.delayMs);
    expect(delays[0]).toBeGreaterThanOrEqual(1);
  });
});

describe('4. one serial worker per UID, latest update wins, merge', () => {
  it('never runs two syncer calls for one UID at once, and always delivers the latest update', async () => {
    const h = createHarness();
    let inFlight = 0;
    let maxInFlight = 0;
    const first = deferred();
    const entered = deferred();
    h.syncer.onSyncPod = async () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      entered.resolve();
      await first.promise;
      inFlight--;
    };
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('x', 'ns', 'v0', false) });
    await entered.promise;
    for (let i = 1; i <= 5; i++) h.workers.updatePod({ updateType: 'update', pod: newNamedPod('x', 'ns', `v${i}`, false) });
    expect(h.workers.statusOf('x')!.pendingUpdate!.pod!.metadata!.name).toBe('v5');
    first.resolve();
    await h.workers.whenIdle();
    expect(maxInFlight).toBe(1);
    expect(h.syncer.processed.get('x')!.map((r) => r.name)).toEqual(['v0', 'v5']);
  });

  it('working is true from the pending update until the worker is done with it', async () => {
    const h = createHarness();
    const gate = deferred();
    h.syncer.onSyncPod = () => gate.promise;
    const pod = newNamedPod('w', 'ns', 'w', false);
    h.workers.updatePod({ updateType: 'create', pod });
    expect(h.workers.statusOf('w')!.working).toBe(true);
    expect(h.syncer.processed.size).toBe(0); // never synchronously
    await nextEvent(h.workers, (e) => e.type === 'sync-started');
    expect(h.workers.statusOf('w')!.working).toBe(true);
    expect(h.workers.statusOf('w')!.pendingUpdate).toBeUndefined();
    gate.resolve();
    await h.workers.whenIdle();
    expect(h.workers.statusOf('w')!.working).toBe(false);
  });

  it('merge keeps the last real pod and mirror pod, takes the running pod and copies kill options without callbacks', () => {
    const record = new PodSyncRecord('p_ns', 0);
    const pod1 = newNamedPod('p', 'ns', 'p1', false);
    const mirror = newNamedPod('p', 'ns', 'mirror', false);
    mergeLastUpdate(record, newUpdate('create', pod1, mirror, undefined, undefined, 5));
    expect(record.activeUpdate).toMatchObject({ updateType: 'sync', pod: pod1, mirrorPod: mirror, startTime: undefined });
    const rp = runningPod('p', 'p', 'ns');
    mergeLastUpdate(record, newUpdate('kill', newNamedPod('p', 'ns', 'synthetic', false), undefined, rp, { evict: true, onComplete: () => {} }, undefined));
    expect(record.activeUpdate!.pod).toBe(pod1); // a runtime update never replaces a known pod
    expect(record.activeUpdate!.runningPod).toBe(rp);
    expect(record.activeUpdate!.mirrorPod).toBe(mirror);
    expect(record.activeUpdate!.killPodOptions).toEqual({ evict: true });
    const pod2 = newNamedPod('p', 'ns', 'p2', false);
    mergeLastUpdate(record, newUpdate('update', pod2, undefined, undefined, { gracePeriodSecondsOverride: 7, podStatusFunc: () => {} }, undefined));
    expect(record.activeUpdate!.pod).toBe(pod2);
    expect(record.activeUpdate!.runningPod).toBeUndefined();
    expect(record.activeUpdate!.killPodOptions).toEqual({ gracePeriodSecondsOverride: 7 });
    // a runtime update provides a pod when none is known
    const fresh = new PodSyncRecord('q_ns', 0);
    mergeLastUpdate(fresh, newUpdate('kill', undefined, undefined, rp, undefined, undefined));
    expect(fresh.activeUpdate!.pod).toBeUndefined();
    expect(fresh.activeUpdate!.runningPod).toBe(rp);
  });
});

describe('5. static pods', () => {
  it('start strictly one at a time in arrival order, skipping waiters that terminate', async () => {
    const h = createHarness();
    const mk = (uid: string) => newNamedPod(uid, 'kube-system', 'etcd', true);
    for (const uid of ['a', 'b', 'c', 'd']) h.workers.updatePod({ updateType: 'create', pod: mk(uid) });
    await h.workers.whenIdle();
    expect([...h.syncer.processed.keys()]).toEqual(['a']);
    expect(h.workers.statusOf('b')!.pendingUpdate).toBeDefined();
    h.workers.updatePod({ updateType: 'kill', pod: mk('b') });
    h.workers.updatePod({ updateType: 'kill', pod: mk('a') });
    await h.workers.whenIdle();
    expect(h.workers.isPodForMirrorPodTerminatingByFullName('etcd_kube-system')).toBe(false);
    // d asks first, but c is next in line
    h.workers.updatePod({ updateType: 'update', pod: mk('d') });
    await h.workers.whenIdle();
    expect(h.syncer.processed.has('d')).toBe(false);
    h.workers.updatePod({ updateType: 'update', pod: mk('c') });
    await h.workers.whenIdle();
    expect(steps(h, 'c')).toEqual(['sync(update)']);
    expect(h.syncer.processed.has('b')).toBe(false); // killed before it could start: no syncer call
    expect(h.workers.statusOf('b')!.finished).toBe(true);
  });

  it('reports a started static pod as terminating by full name until it is terminated', async () => {
    const h = createHarness();
    const gate = deferred();
    h.syncer.onTerminating = () => gate.promise;
    const pod = newNamedPod('s', 'kube-system', 'api', true);
    h.workers.updatePod({ updateType: 'create', pod });
    await h.workers.whenIdle();
    expect(h.workers.isPodForMirrorPodTerminatingByFullName('api_kube-system')).toBe(false);
    h.workers.updatePod({ updateType: 'kill', pod });
    expect(h.workers.isPodForMirrorPodTerminatingByFullName('api_kube-system')).toBe(true);
    gate.resolve();
    await h.workers.whenIdle();
    expect(h.workers.isPodForMirrorPodTerminatingByFullName('api_kube-system')).toBe(false);
  });
});

describe('6. worker loop', () => {
  it('asks the cache for a status newer than the end of the previous sync', async () => {
    const h = createHarness();
    const pod = newNamedPod('c', 'ns', 'c', false);
    h.workers.updatePod({ updateType: 'create', pod });
    await h.workers.whenIdle();
    h.clock.tick(5 * SECOND);
    h.workers.updatePod({ updateType: 'update', pod });
    await h.workers.whenIdle();
    expect(h.cache.newerThanCalls).toEqual([
      { uid: 'c', minTime: 0 },
      { uid: 'c', minTime: 1 * SECOND },
    ]);
  });

  it('requeues: phase change at once, success after the resync interval with jitter', async () => {
    const h = createHarness({ resyncIntervalMs: 60_000, backOffPeriodMs: 10_000 });
    const pod = newNamedPod('q', 'ns', 'q', false);
    h.workers.updatePod({ updateType: 'create', pod });
    await h.workers.whenIdle();
    const resync = h.queue.items.at(-1)!;
    expect(resync.delayMs).toBeGreaterThanOrEqual(60_000);
    expect(resync.delayMs).toBeLessThan(90_000);
    const reqs = nextEvent(h.workers, (e) => e.type === 'requeued' && e.reason === 'phase-change');
    h.workers.updatePod({ updateType: 'kill', pod });
    expect(await reqs).toMatchObject({ delayMs: 0 });
    await h.workers.whenIdle();
    expect(h.queue.items.at(-1)).toEqual({ uid: 'q', delayMs: 0 });
  });

  it('requeues: "network is not ready" after about a second, other errors after the back-off', async () => {
    const h = createHarness({ resyncIntervalMs: 60_000, backOffPeriodMs: 10_000 });
    let error = new Error('runtime network not ready: network is not ready: cni config uninitialized');
    h.syncer.onSyncPod = () => {
      throw error;
    };
    const pod = newNamedPod('n', 'ns', 'n', false);
    const failed = nextEvent(h.workers, (e) => e.type === 'sync-failed');
    h.workers.updatePod({ updateType: 'create', pod });
    const f = await failed;
    await h.workers.whenIdle();
    expect(f.error).toContain('network is not ready');
    expect(f.retryInMs).toBeGreaterThanOrEqual(1_000);
    expect(f.retryInMs).toBeLessThan(1_500);
    expect(h.queue.items.at(-1)!.delayMs).toBe(f.retryInMs);
    error = new Error('rpc error: deadline exceeded');
    h.workers.updatePod({ updateType: 'update', pod });
    await h.workers.whenIdle();
    const backoff = h.queue.items.at(-1)!.delayMs;
    expect(backoff).toBeGreaterThanOrEqual(10_000);
    expect(backoff).toBeLessThan(15_000);
    expect(h.workers.statusOf('n')!.working).toBe(false);
  });

  it('a failing cache read records FailedSync and backs off without calling the syncer', async () => {
    const recorded: string[] = [];
    const h = createHarness();
    const { PodWorkerEngine } = await import('../../src/engine/workers.js');
    const workers = new PodWorkerEngine({
      syncer: h.syncer,
      cache: h.cache,
      workQueue: h.queue,
      clock: h.clock,
      recorder: { event: (_pod, type, reason, message) => recorded.push(`${type} ${reason} ${message}`) },
    });
    h.cache.failNewerThan = new Error('cache timed out');
    workers.updatePod({ updateType: 'create', pod: newNamedPod('e', 'ns', 'e', false) });
    await workers.whenIdle();
    expect(recorded).toEqual(['Warning FailedSync error determining status: cache timed out']);
    expect(h.syncer.processed.size).toBe(0);
    expect(h.queue.items.at(-1)!.delayMs).toBeGreaterThanOrEqual(10_000);
  });

  it('retries a failing terminating step until it succeeds, keeping the grace', async () => {
    const h = createHarness();
    let failures = 2;
    h.syncer.onTerminating = () => {
      if (failures-- > 0) throw new Error('kill failed');
    };
    const pod = newNamedPod('r', 'ns', 'r', false);
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 7 } });
    await h.workers.whenIdle();
    expect(h.workers.statusOf('r')!.terminatedAt).toBeUndefined();
    // the kubelet's sync loop would re-deliver the pod after the back-off
    h.workers.updatePod({ updateType: 'sync', pod });
    await h.workers.whenIdle();
    h.workers.updatePod({ updateType: 'sync', pod });
    await h.workers.whenIdle();
    expect(steps(h, 'r')).toEqual(['kill(7)', 'kill(7)', 'kill(7)', 'terminated']);
  });
});

describe('7. syncKnownPods drives unfinished orphans by replaying their last update', () => {
  it('an orphan whose terminating step failed is retried by the next syncKnownPods (force-deleted pod fix)', async () => {
    const h = createHarness();
    let failures = 1;
    h.syncer.onTerminating = () => {
      if (failures-- > 0) throw new Error('rpc error: unavailable');
    };
    const pod = withDeletionTimestamp(newNamedPod('o', 'ns', 'o', false), SECOND, 0);
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('o', 'ns', 'o', false) });
    await h.workers.whenIdle();
    h.workers.updatePod({ updateType: 'update', pod });
    await h.workers.whenIdle();
    // force-deleted: no more updates will come for it, the pod is stuck terminating
    expect(h.workers.statusOf('o')!.terminatedAt).toBeUndefined();
    const known = h.workers.syncKnownPods([]);
    expect(known.get('o')).toEqual({ state: 'terminating', orphan: true, hasConfig: true, static: false });
    expect(h.workers.statusOf('o')!.working).toBe(true);
    await h.workers.whenIdle();
    expect(steps(h, 'o')).toEqual(['sync(create)', 'kill(1)', 'kill(1)', 'terminated']);
    expect(h.workers.syncKnownPods([]).size).toBe(0);
  });

  it('an orphan never started is forgotten without any syncer call', async () => {
    const h = createHarness();
    h.hold('n');
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('n', 'ns', 'n', false) });
    expect(h.workers.syncKnownPods([]).size).toBe(0);
    expect(h.workers.statusOf('n')).toBeUndefined();
    h.release('n');
    await h.workers.whenIdle();
    expect(h.syncer.processed.size).toBe(0);
  });

  it('a running orphan is terminated with its grace period and finishes', async () => {
    const h = createHarness();
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('r', 'ns', 'r', false) });
    await h.workers.whenIdle();
    const known = h.workers.syncKnownPods([]);
    expect(known.get('r')!.state).toBe('terminating');
    expect(h.workers.statusOf('r')).toMatchObject({ gracePeriod: 30, deleted: true });
    await h.workers.whenIdle();
    expect(h.workers.statusOf('r')!.finished).toBe(true);
  });
});

describe('8. onComplete exactly once', () => {
  it('calls every kill callback once when the pod terminates, and at once afterwards', async () => {
    const h = createHarness();
    const gate = deferred();
    h.syncer.onTerminating = () => gate.promise;
    const pod = newNamedPod('o', 'ns', 'o', false);
    const counts = [0, 0, 0, 0];
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { onComplete: () => counts[0]!++ } });
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { onComplete: () => counts[1]!++ } });
    await nextEvent(h.workers, (e) => e.type === 'sync-started');
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { onComplete: () => counts[2]!++ } });
    expect(counts).toEqual([0, 0, 0, 0]);
    gate.resolve();
    await h.workers.whenIdle();
    expect(counts).toEqual([1, 1, 1, 0]);
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { onComplete: () => counts[3]!++ } });
    expect(counts).toEqual([1, 1, 1, 1]);
    h.workers.syncKnownPods([]);
    await h.workers.whenIdle();
    expect(counts).toEqual([1, 1, 1, 1]);
  });

  it('completes a kill of a pod that is forgotten or terminated before it started', async () => {
    const h = createHarness();
    let forgotten = 0;
    h.hold('x');
    h.workers.updatePod({ updateType: 'kill', pod: newNamedPod('x', 'ns', 'x', false), killPodOptions: { onComplete: () => forgotten++ } });
    h.workers.syncKnownPods([]);
    expect(forgotten).toBe(1);
    h.release('x');

    // a static pod killed while waiting for its turn never starts; its kill still completes
    let waiting = 0;
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('s1', 'ns', 'same', true) });
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('s2', 'ns', 'same', true) });
    await h.workers.whenIdle();
    h.workers.updatePod({ updateType: 'kill', pod: newNamedPod('s2', 'ns', 'same', true), killPodOptions: { onComplete: () => waiting++ } });
    await h.workers.whenIdle();
    expect(waiting).toBe(1);
    expect(h.syncer.processed.has('s2')).toBe(false);
  });

  it('completes the kill of a runtime-only pod once it is stopped', async () => {
    const h = createHarness();
    let done = 0;
    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('r', 'r', 'ns'), killPodOptions: { onComplete: () => done++ } });
    expect(done).toBe(0);
    await h.workers.whenIdle();
    expect(done).toBe(1);
    expect(steps(h, 'r')).toEqual(['kill-runtime']);
  });

  it('a throwing callback does not break the transition', async () => {
    const h = createHarness();
    h.workers.updatePod({
      updateType: 'kill',
      pod: newNamedPod('t', 'ns', 't', false),
      killPodOptions: {
        onComplete: () => {
          throw new Error('boom');
        },
      },
    });
    await h.workers.whenIdle();
    expect(h.workers.statusOf('t')!.finished).toBe(true);
  });
});

describe('lifecycle', () => {
  it('close aborts running syncs, resolves idle waiters and refuses further updates', async () => {
    const h = createHarness();
    let aborted = false;
    h.syncer.onSyncPod = async (_uid, signal) => {
      try {
        await untilAborted(signal);
      } finally {
        aborted = signal.aborted;
      }
    };
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('c', 'ns', 'c', false) });
    await nextEvent(h.workers, (e) => e.type === 'sync-started');
    const idle = h.workers.whenIdle();
    await h.workers.close();
    await idle;
    expect(aborted).toBe(true);
    expect(() => h.workers.updatePod({ updateType: 'update', pod: newNamedPod('c', 'ns', 'c', false) })).toThrow(/closed/);
  });

  it('whenIdle can ignore held workers', async () => {
    const h = createHarness();
    h.hold('a');
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('a', 'ns', 'a', false) });
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('b', 'ns', 'b', false) });
    await h.workers.whenIdle({ except: ['a'] });
    expect(h.syncer.processed.has('b')).toBe(true);
    expect(h.syncer.processed.has('a')).toBe(false);
    expect(h.workers.statusOf('a')!.working).toBe(true);
    h.release('a');
    await h.workers.whenIdle();
    expect(h.syncer.processed.has('a')).toBe(true);
  });
});

describe('seams and views', () => {
  it('awaits beforeWorkerWakes once per wake-up, before the pending update is consumed', async () => {
    const h = createHarness();
    const seen: (string | undefined)[] = [];
    const { PodWorkerEngine } = await import('../../src/engine/workers.js');
    const workers = new PodWorkerEngine({
      syncer: h.syncer,
      cache: h.cache,
      workQueue: h.queue,
      clock: h.clock,
      beforeWorkerWakes: (uid) => {
        seen.push(workers.statusOf(uid)!.pendingUpdate?.updateType);
      },
    });
    const pod = newNamedPod('b', 'ns', 'b', false);
    workers.updatePod({ updateType: 'create', pod });
    workers.updatePod({ updateType: 'update', pod }); // coalesced with the create: one wake-up
    expect(seen).toEqual([]);
    await workers.whenIdle();
    workers.updatePod({ updateType: 'kill', pod });
    await workers.whenIdle();
    // update; then kill, the replayed terminated step
    expect(seen).toEqual(['update', 'kill', 'sync']);
  });

  it('hands out copies: changing a view changes nothing in the engine', async () => {
    const h = createHarness();
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('v', 'ns', 'v', false) });
    await h.workers.whenIdle();
    const view = h.workers.snapshot().get('v')!;
    view.finished = true;
    view.terminatingAt = 1;
    view.activeUpdate!.killPodOptions = { gracePeriodSecondsOverride: 1 };
    expect(h.workers.statusOf('v')!.finished).toBe(false);
    expect(h.workers.statusOf('v')!.terminatingAt).toBeUndefined();
    expect(h.workers.statusOf('v')!.activeUpdate!.killPodOptions).toBeUndefined();
    expect(h.workers.isPodTerminationRequested('v')).toBe(false);
  });

  it('reports a static pod waiting for its turn as known config from its pending update', async () => {
    const h = createHarness();
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('a', 'ns', 'same', true) });
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('b', 'ns', 'same', true) });
    await h.workers.whenIdle();
    const known = h.workers.syncKnownPods([newNamedPod('a', 'ns', 'same', true), newNamedPod('b', 'ns', 'same', true)]);
    expect(known.get('b')).toEqual({ state: 'sync', orphan: false, hasConfig: true, static: true });
    expect(h.workers.statusOf('b')!.working).toBe(false);
    expect(h.workers.statusOf('b')!.startedAt).toBeUndefined();
    expect(h.workers.statusOf('b')!.pendingUpdate?.updateType).toBe('create');
  });

  it('a grace shortened while no sync runs is simply used by the next terminating sync', async () => {
    const h = createHarness();
    const pod = newNamedPod('i', 'ns', 'i', false);
    h.hold('i');
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 20 } });
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 4 } });
    h.release('i');
    await h.workers.whenIdle();
    expect(steps(h, 'i')).toEqual(['kill(4)', 'terminated']);
    expect(h.events.filter((e) => e.type === 'sync-failed')).toEqual([]);
  });

  it('close releases the default queue timer', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      const { createPodWorkers } = await import('../../src/engine/index.js');
      const h = createHarness();
      const workers = createPodWorkers({ syncer: h.syncer, cache: h.cache });
      workers.updatePod({ updateType: 'create', pod: newNamedPod('t', 'ns', 't', false) });
      await workers.whenIdle();
      expect(vi.getTimerCount()).toBe(1); // one shared resync timer
      await workers.close();
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
