/**
 * The kubelet's TestSyncKnownPods and Test_removeTerminatedWorker, plus the restartRequested and
 * orphan-replay paths of SyncKnownPods. Go's len(podUpdates) / len(podSyncStatuses) are workerCount
 * and the set of tracked (snapshot) pods. Test_removeTerminatedWorker runs twice: as the Go table
 * (hand-made statuses injected, removeTerminatedWorker called directly) and through SyncKnownPods
 * (the engine driven into each state).
 */
import { describe, expect, it } from 'vitest';
import { newUpdate, PodSyncRecord } from '../../../src/engine/status.js';
import { StaticPodStarts } from '../../../src/engine/static-pods.js';
import type { UpdateView, V1Pod } from '../../../src/engine/types.js';
import { SECOND, createHarness, newNamedPod, until, type Harness } from '../harness.js';

const pod = (uid: string, name = 'name') => newNamedPod(uid, 'ns', name, false);

describe('TestSyncKnownPods', () => {
  it('forgets finished pods that are no longer desired and drives the rest to completion', async () => {
    const h = createHarness();
    const { workers } = h;
    const numPods = 20;
    for (let i = 0; i < numPods; i++) workers.updatePod({ pod: pod(String(i)), updateType: 'update' });
    await h.drain();
    expect(workers.snapshot().size).toBe(numPods);
    expect(workers.workerCount).toBe(numPods);

    const desired = new Set(['2', '14']);
    const desiredPodList = [pod('2'), pod('14')];

    // kill all but the desired pods (even ones deleted in the API)
    for (let i = 0; i < numPods; i++) {
      const p = pod(String(i));
      if (desired.has(String(i))) continue;
      if (i % 2 === 0) p.metadata!.deletionTimestamp = new Date(h.clock.now());
      workers.updatePod({ pod: p, updateType: 'kill' });
    }
    await h.drain();

    expect(workers.shouldPodContainersBeTerminating('0')).toBe(true);
    expect(workers.shouldPodContainersBeTerminating('1')).toBe(true);
    expect(workers.shouldPodContainersBeTerminating('2')).toBe(false);
    expect(workers.isPodTerminationRequested('0')).toBe(true);
    expect(workers.isPodTerminationRequested('2')).toBe(false);

    expect(workers.couldHaveRunningContainers('0')).toBe(false);
    expect(workers.couldHaveRunningContainers('1')).toBe(false);
    expect(workers.couldHaveRunningContainers('2')).toBe(true);

    expect(workers.shouldPodContentBeRemoved('0')).toBe(true); // deleted and terminated
    expect(workers.shouldPodContentBeRemoved('1')).toBe(false); // terminated but not deleted
    expect(workers.shouldPodContentBeRemoved('2')).toBe(false); // not terminated

    // an unknown pod before the first SyncKnownPods
    expect(workers.shouldPodContainersBeTerminating('abc')).toBe(false);
    expect(workers.couldHaveRunningContainers('abc')).toBe(true);
    expect(workers.shouldPodContentBeRemoved('abc')).toBe(false);
    expect(workers.shouldPodRuntimeBeRemoved('abc')).toBe(false);
    expect(workers.shouldPodBeFinished('abc')).toBe(false);
    expect(workers.isPodKnownTerminated('abc')).toBe(false);

    workers.syncKnownPods(desiredPodList);
    expect(workers.workerCount).toBe(2);
    expect(new Set(workers.snapshot().keys())).toEqual(new Set(['2', '14']));
    expect(workers.isPodTerminationRequested('2')).toBe(false);

    // an unknown pod after the first SyncKnownPods
    expect(workers.shouldPodContainersBeTerminating('abc')).toBe(true);
    expect(workers.couldHaveRunningContainers('abc')).toBe(false);
    expect(workers.shouldPodContentBeRemoved('abc')).toBe(true);
    expect(workers.shouldPodRuntimeBeRemoved('abc')).toBe(true);
    expect(workers.shouldPodBeFinished('abc')).toBe(true);
    expect(workers.isPodTerminationRequested('abc')).toBe(false);
    expect(workers.isPodKnownTerminated('abc')).toBe(false);

    // workers that are not terminated stay tracked even if config no longer sees them; they are
    // driven to completion
    workers.syncKnownPods([]);
    await h.drain();
    expect(workers.workerCount).toBe(0);
    expect(new Set(workers.snapshot().keys())).toEqual(new Set(['2', '14']));
    for (const uid of desired) {
      const s = workers.snapshot().get(uid)!;
      expect(s.working).toBe(false);
      expect(s.finished).toBe(true);
      expect(s.deleted).toBe(true);
      expect(h.syncer.records(uid)!.map((r) => (r.terminated ? 'terminated' : r.updateType))).toEqual(['update', 'kill', 'terminated']);
    }

    for (const uid of desired) workers.updatePod({ pod: pod(uid), updateType: 'kill' });
    await h.drain();

    // once those pods terminate (via some other flow) the workers are cleared
    workers.syncKnownPods([]);
    expect(workers.workerCount).toBe(0);
    expect(workers.snapshot().size).toBe(0);
    await workers.close();
  });

  it('reports each known worker: state, orphan, hasConfig, static', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: pod('running'), updateType: 'update' });
    h.workers.updatePod({ pod: newNamedPod('static', 'ns', 'st', true), updateType: 'update' });
    await h.drain();
    const state = h.workers.syncKnownPods([pod('running')]);
    expect(Object.fromEntries(state)).toEqual({
      running: { state: 'sync', orphan: false, hasConfig: true, static: false },
      static: { state: 'terminating', orphan: true, hasConfig: true, static: true },
    });
    await h.drain();
    await h.workers.close();
  });

  it('syncKnownPods never runs a sync synchronously', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: pod('1'), updateType: 'update' });
    await h.drain();
    h.syncer.processed.clear();
    h.workers.syncKnownPods([]);
    expect(h.syncer.processed.size).toBe(0);
    expect(h.workers.snapshot().get('1')!.working).toBe(true);
    await h.drain();
    expect(h.syncer.processed.size).toBe(1);
    await h.workers.close();
  });
});

describe('restartRequested (a create for a UID that is terminating)', () => {
  it('is recorded, ignored until termination completes, and SyncKnownPods then clears the history so the pod can start again', async () => {
    const h = createHarness();
    const { workers, syncer } = h;
    workers.updatePod({ pod: pod('1', 'first'), updateType: 'create' });
    await h.drain();
    h.hold('1');
    workers.updatePod({ pod: pod('1', 'first'), updateType: 'kill' });
    workers.updatePod({ pod: pod('1', 'second'), updateType: 'create' });
    const s = workers.snapshot().get('1')!;
    expect(s.restartRequested).toBe(true);
    // the create was dropped: the pending update is still the kill
    expect(s.pendingUpdate!.updateType).toBe('kill');
    expect(s.pendingUpdate!.pod!.metadata!.name).toBe('first');
    h.release('1');
    await h.drain();
    expect(workers.snapshot().get('1')!.finished).toBe(true);

    // still desired: restartRequested makes SyncKnownPods forget the finished worker
    const state = workers.syncKnownPods([pod('1', 'second')]);
    expect(state.has('1')).toBe(false);
    expect(workers.snapshot().has('1')).toBe(false);

    // the caller then sends a create, and the pod starts afresh
    syncer.processed.clear();
    workers.updatePod({ pod: pod('1', 'second'), updateType: 'create' });
    await h.drain();
    expect(syncer.records('1')).toEqual([{ name: 'second', updateType: 'create' }]);
    const fresh = workers.snapshot().get('1')!;
    expect(fresh.terminatingAt).toBeUndefined();
    expect(fresh.restartRequested).toBe(false);
    await workers.close();
  });

  it('a still-desired pod that is terminating with restartRequested is kept until it finishes', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: pod('1'), updateType: 'create' });
    await h.drain();
    h.hold('1');
    h.workers.updatePod({ pod: pod('1'), updateType: 'kill' });
    h.workers.updatePod({ pod: pod('1'), updateType: 'create' });
    const state = h.workers.syncKnownPods([pod('1')]);
    expect(Object.fromEntries(state)).toEqual({ '1': { state: 'terminating', orphan: false, hasConfig: true, static: false } });
    expect(h.workers.snapshot().has('1')).toBe(true);
    h.release('1');
    await h.drain();
    await h.workers.close();
  });

  it('a create for a pod that has never been seen before and is already terminal does not request restart', async () => {
    const h = createHarness();
    const p = pod('1');
    p.status = { phase: 'Failed' };
    h.workers.updatePod({ pod: p, updateType: 'create' });
    expect(h.workers.snapshot().get('1')!.restartRequested).toBe(false);
    await h.drain();
    expect(h.workers.snapshot().get('1')!.restartRequested).toBe(false);
    await h.workers.close();
  });
});

/** Drives pod `uid` to a terminating state with no pending update (syncTerminatingPod keeps failing). */
async function terminatingWithNoPending(h: Harness, uid: string): Promise<void> {
  h.workers.updatePod({ pod: newNamedPod(uid, 'ns', '1', false), updateType: 'update' });
  await h.drain();
  h.syncer.failTerminating = (u) => (u === uid ? new Error('runtime unavailable') : undefined);
  h.workers.updatePod({ pod: newNamedPod(uid, 'ns', '1', false), updateType: 'kill' });
  await h.drain();
  const s = h.workers.snapshot().get(uid)!;
  expect(s.terminatingAt).toBeDefined();
  expect(s.terminatedAt).toBeUndefined();
  expect(s.pendingUpdate).toBeUndefined();
  expect(s.working).toBe(false);
}

/** Drives pod `uid` to terminated-not-finished with no pending update (syncTerminatedPod keeps failing). */
async function terminatedWithNoPending(h: Harness, uid: string): Promise<void> {
  h.workers.updatePod({ pod: newNamedPod(uid, 'ns', '1', false), updateType: 'update' });
  await h.drain();
  h.syncer.failTerminated = (u) => (u === uid ? new Error('cleanup failed') : undefined);
  h.workers.updatePod({ pod: newNamedPod(uid, 'ns', '1', false), updateType: 'kill' });
  await h.drain();
  const s = h.workers.snapshot().get(uid)!;
  expect(s.terminatedAt).toBeDefined();
  expect(s.finished).toBe(false);
  expect(s.pendingUpdate).toBeUndefined();
  expect(s.working).toBe(false);
}

describe('Test_removeTerminatedWorker (through SyncKnownPods)', () => {
  const uid = 'pod-uid';

  it('finished worker: removed (orphaned)', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: pod(uid), updateType: 'kill' });
    await h.drain();
    expect(h.workers.snapshot().get(uid)!.finished).toBe(true);
    expect(h.workers.syncKnownPods([]).has(uid)).toBe(false);
    expect(h.workers.snapshot().has(uid)).toBe(false);
    await h.workers.close();
  });

  it('finished worker that is still desired: kept (no restart requested)', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: pod(uid), updateType: 'kill' });
    await h.drain();
    const state = h.workers.syncKnownPods([pod(uid)]);
    expect(state.get(uid)).toEqual({ state: 'terminated', orphan: false, hasConfig: true, static: false });
    expect(h.workers.snapshot().get(uid)!.finished).toBe(true);
    await h.workers.close();
  });

  it('waiting-to-start static worker still desired: not removed, pending kept', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newNamedPod('another-pod-uid', 'ns', 'fake', true), updateType: 'update' });
    h.workers.updatePod({ pod: newNamedPod(uid, 'ns', 'fake', true), updateType: 'update' });
    await h.drain();
    const state = h.workers.syncKnownPods([newNamedPod('another-pod-uid', 'ns', 'fake', true), newNamedPod(uid, 'ns', 'fake', true)]);
    expect(state.get(uid)).toEqual({ state: 'sync', orphan: false, hasConfig: true, static: true });
    expect(h.workers.snapshot().get(uid)!.pendingUpdate).toBeDefined();
    await h.workers.close();
  });

  it('orphaned not-started worker: removed, and it never syncs', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newNamedPod('another-pod-uid', 'ns', 'fake', true), updateType: 'update' });
    h.workers.updatePod({ pod: newNamedPod(uid, 'ns', 'fake', true), updateType: 'update' });
    await h.drain();
    const state = h.workers.syncKnownPods([newNamedPod('another-pod-uid', 'ns', 'fake', true)]);
    expect(state.has(uid)).toBe(false);
    expect(h.workers.snapshot().has(uid)).toBe(false);
    await h.drain();
    expect(h.syncer.records(uid)).toBeUndefined();
    await h.workers.close();
  });

  it('orphaned started worker: not removed; termination begins at once (grace from the spec) and replays the last update', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: pod(uid, '1'), updateType: 'update' });
    await h.drain();
    h.clock.tick(5000);
    const state = h.workers.syncKnownPods([]);
    expect(state.get(uid)).toEqual({ state: 'terminating', orphan: true, hasConfig: true, static: false });
    const s = h.workers.snapshot().get(uid)!;
    expect(s.terminatingAt).toBe(h.clock.now());
    expect(s.gracePeriod).toBe(30);
    expect(s.deleted).toBe(true);
    expect(s.working).toBe(true);
    expect(s.pendingUpdate).toEqual(s.activeUpdate);
    await h.drain();
    expect(h.workers.snapshot().get(uid)!.finished).toBe(true);
    await h.workers.close();
  });

  it('orphaned terminating worker: not removed; its last update is replayed as pending', async () => {
    const h = createHarness();
    await terminatingWithNoPending(h, uid);
    h.hold(uid);
    const active = h.workers.snapshot().get(uid)!.activeUpdate;
    h.workers.syncKnownPods([]);
    const s = h.workers.snapshot().get(uid)!;
    expect(s.pendingUpdate).toEqual(active);
    expect(s.pendingUpdate!.pod!.metadata!.name).toBe('1');
    expect(s.working).toBe(true);
    expect(s.deleted).toBe(true);
    // the replay reaches the worker
    h.syncer.failTerminating = undefined;
    h.release(uid);
    await h.drain();
    expect(h.workers.snapshot().get(uid)!.finished).toBe(true);
    await h.workers.close();
  });

  it('orphaned terminating worker with a pending update: the pending update is kept', async () => {
    const h = createHarness();
    await terminatingWithNoPending(h, uid);
    h.hold(uid);
    h.workers.updatePod({ pod: newNamedPod(uid, 'ns', '2', false), updateType: 'update' });
    h.workers.syncKnownPods([]);
    const s = h.workers.snapshot().get(uid)!;
    expect(s.pendingUpdate!.pod!.metadata!.name).toBe('2');
    expect(s.working).toBe(true);
    h.syncer.failTerminating = undefined;
    h.release(uid);
    await h.drain();
    await h.workers.close();
  });

  it('orphaned terminated worker: not removed; its last update is replayed as pending', async () => {
    const h = createHarness();
    await terminatedWithNoPending(h, uid);
    h.hold(uid);
    const active = h.workers.snapshot().get(uid)!.activeUpdate;
    const state = h.workers.syncKnownPods([]);
    expect(state.get(uid)).toEqual({ state: 'terminated', orphan: true, hasConfig: true, static: false });
    const s = h.workers.snapshot().get(uid)!;
    expect(s.pendingUpdate).toEqual(active);
    expect(s.working).toBe(true);
    h.syncer.failTerminated = undefined;
    h.release(uid);
    await h.drain();
    expect(h.workers.snapshot().get(uid)!.finished).toBe(true);
    // and the next SyncKnownPods forgets it
    h.workers.syncKnownPods([]);
    expect(h.workers.snapshot().has(uid)).toBe(false);
    await h.workers.close();
  });

  it('orphaned terminated worker with a pending update: the pending update is kept', async () => {
    const h = createHarness();
    await terminatedWithNoPending(h, uid);
    h.hold(uid);
    h.workers.updatePod({ pod: newNamedPod(uid, 'ns', '2', false), updateType: 'update' });
    h.workers.syncKnownPods([]);
    const s = h.workers.snapshot().get(uid)!;
    expect(s.pendingUpdate!.pod!.metadata!.name).toBe('2');
    expect(s.working).toBe(true);
    h.syncer.failTerminated = undefined;
    h.release(uid);
    await h.drain();
    await until(() => h.workers.snapshot().get(uid)!.finished);
    await h.workers.close();
  });

  it('an orphaned runtime-only pod (observed in the runtime) is driven through syncTerminatingRuntimePod, then forgotten', async () => {
    const h = createHarness();
    h.workers.updatePod({ updateType: 'kill', runningPod: { id: uid, name: 'orphan', namespace: 'ns', containers: [], sandboxes: [] } });
    const state = h.workers.syncKnownPods([]);
    expect(state.get(uid)).toEqual({ state: 'terminating', orphan: true, hasConfig: false, static: false });
    await h.drain();
    expect(h.syncer.records(uid)!.map((r) => r.runningPod?.id)).toEqual([uid]);
    expect(h.workers.snapshot().has(uid)).toBe(false);
    await h.workers.close();
  });
});

interface RemoveCase {
  desc: string;
  orphan?: boolean;
  record: () => PodSyncRecord;
  started?: Record<string, string>;
  waiting?: Record<string, string[]>;
  removed: boolean;
  expectGracePeriod?: number;
  expectPending?: UpdateView;
}

const podUID = 'pod-uid';
const podNamed = (name: string): V1Pod => ({ metadata: { uid: podUID, name } });

function record(init: Partial<PodSyncRecord> & { active?: string; pending?: string }): PodSyncRecord {
  const r = new PodSyncRecord(init.fullname ?? '', 0);
  if (init.startedAt !== undefined) r.startedAt = init.startedAt;
  if (init.terminatingAt !== undefined) r.terminatingAt = init.terminatingAt;
  if (init.terminatedAt !== undefined) r.terminatedAt = init.terminatedAt;
  r.finished = init.finished ?? false;
  r.working = init.working ?? false;
  if (init.active !== undefined) r.activeUpdate = newUpdate('sync', podNamed(init.active), undefined, undefined, undefined, undefined);
  if (init.pending !== undefined) r.pendingUpdate = newUpdate('sync', podNamed(init.pending), undefined, undefined, undefined, undefined);
  return r;
}

describe('Test_removeTerminatedWorker', () => {
  const cases: RemoveCase[] = [
    { desc: 'finished worker', record: () => record({ finished: true }), removed: true },
    {
      desc: 'waiting to start worker because of another started pod with the same fullname',
      record: () => record({ fullname: 'fake-fullname' }),
      started: { 'fake-fullname': 'another-pod-uid' },
      waiting: { 'fake-fullname': [podUID] },
      removed: false,
    },
    {
      desc: 'not yet started worker',
      record: () => record({ fullname: 'fake-fullname' }),
      waiting: { 'fake-fullname': [podUID] },
      removed: false,
    },
    { desc: 'orphaned not started worker', record: () => record({ fullname: 'fake-fullname' }), orphan: true, removed: true },
    {
      desc: 'orphaned started worker',
      record: () => record({ fullname: 'fake-fullname', startedAt: 1 * SECOND }),
      orphan: true,
      removed: false,
      expectGracePeriod: 1,
    },
    {
      desc: 'orphaned terminating worker with no activeUpdate',
      record: () => record({ fullname: 'fake-fullname', startedAt: 1 * SECOND, terminatingAt: 2 * SECOND }),
      orphan: true,
      removed: false,
    },
    {
      desc: 'orphaned terminating worker',
      record: () => record({ fullname: 'fake-fullname', startedAt: 1 * SECOND, terminatingAt: 2 * SECOND, active: '1' }),
      orphan: true,
      removed: false,
      expectPending: { updateType: 'sync', pod: podNamed('1') },
    },
    {
      desc: 'orphaned terminating worker with pendingUpdate',
      record: () => record({ fullname: 'fake-fullname', startedAt: 1 * SECOND, terminatingAt: 2 * SECOND, working: true, pending: '2', active: '1' }),
      orphan: true,
      removed: false,
      expectPending: { updateType: 'sync', pod: podNamed('2') },
    },
    {
      desc: 'orphaned terminated worker with no activeUpdate',
      record: () => record({ fullname: 'fake-fullname', startedAt: 1 * SECOND, terminatingAt: 2 * SECOND, terminatedAt: 3 * SECOND }),
      orphan: true,
      removed: false,
    },
    {
      desc: 'orphaned terminated worker',
      record: () => record({ fullname: 'fake-fullname', startedAt: 1 * SECOND, terminatingAt: 2 * SECOND, terminatedAt: 3 * SECOND, active: '1' }),
      orphan: true,
      removed: false,
      expectPending: { updateType: 'sync', pod: podNamed('1') },
    },
    {
      desc: 'orphaned terminated worker with pendingUpdate',
      record: () =>
        record({
          fullname: 'fake-fullname',
          startedAt: 1 * SECOND,
          terminatingAt: 2 * SECOND,
          terminatedAt: 3 * SECOND,
          working: true,
          pending: '2',
          active: '1',
        }),
      orphan: true,
      removed: false,
      expectPending: { updateType: 'sync', pod: podNamed('2') },
    },
  ];

  for (const tc of cases) {
    it(tc.desc, async () => {
      const statuses = new Map<string, PodSyncRecord>();
      const r = tc.record();
      statuses.set(podUID, r);
      const hadPending = r.pendingUpdate !== undefined;
      const staticPods = new StaticPodStarts();
      for (const [name, uid] of Object.entries(tc.started ?? {})) staticPods.started.set(name, uid);
      for (const [name, uids] of Object.entries(tc.waiting ?? {})) staticPods.waiting.set(name, [...uids]);
      const h = createHarness({ internals: { statuses, staticPods } });
      const wakes: string[] = [];
      h.workers.subscribe((e) => {
        if (e.type === 'sync-started') wakes.push(e.uid);
      });

      h.workers.removeTerminatedWorker(podUID, r, tc.orphan ?? false);
      const status = h.workers.statusOf(podUID);
      if (tc.removed) {
        expect(status).toBeUndefined();
        await h.workers.close();
        return;
      }
      expect(status).toBeDefined();
      if (tc.expectGracePeriod !== undefined) expect(status!.gracePeriod).toBe(tc.expectGracePeriod);
      expect(status!.pendingUpdate).toEqual(tc.expectPending);
      if (tc.expectPending !== undefined) {
        expect(status!.working).toBe(true);
        if (!hadPending) {
          // the worker was notified: it wakes and acts on the replayed update
          await h.workers.whenIdle();
          expect(wakes.length).toBeGreaterThan(0);
          expect(new Set(wakes)).toEqual(new Set([podUID]));
        }
      }
      await h.workers.close();
    });
  }
});
