/**
 * The kubelet's TestSyncKnownPods and Test_removeTerminatedWorker (every table case): finished pods
 * are forgotten once orphaned, unfinished orphans are driven to completion, and the predicates
 * answer for unknown pods according to whether the workers have synced once.
 */
import { describe, expect, it } from 'vitest';
import { newUpdate, PodSyncRecord } from '../../src/engine/status.js';
import { StaticPodStarts } from '../../src/engine/static-pods.js';
import type { UpdateView, V1Pod } from '../../src/engine/types.js';
import { SECOND, createHarness, newNamedPod, withDeletionTimestamp } from './helpers.js';

describe('TestSyncKnownPods', () => {
  it('forgets terminated orphans, keeps desired pods and drives running orphans to the end', async () => {
    const h = createHarness();
    const w = h.workers;
    const numPods = 20;
    for (let i = 0; i < numPods; i++) {
      w.updatePod({ pod: newNamedPod(String(i), 'ns', 'name', false), updateType: 'update' });
    }
    await w.whenIdle();
    expect(w.workerCount).toBe(numPods);

    const desired = new Set(['2', '14']);
    const desiredPodList = [newNamedPod('2', 'ns', 'name', false), newNamedPod('14', 'ns', 'name', false)];

    // kill all but the desired pods (even ones through an API deletion)
    for (let i = 0; i < numPods; i++) {
      const pod = newNamedPod(String(i), 'ns', 'name', false);
      if (desired.has(String(i))) continue;
      if (i % 2 === 0) withDeletionTimestamp(pod, Date.now());
      w.updatePod({ pod, updateType: 'kill' });
    }
    await w.whenIdle();

    expect(w.shouldPodContainersBeTerminating('0')).toBe(true);
    expect(w.shouldPodContainersBeTerminating('1')).toBe(true);
    expect(w.shouldPodContainersBeTerminating('2')).toBe(false);
    expect(w.isPodTerminationRequested('0')).toBe(true);
    expect(w.isPodTerminationRequested('2')).toBe(false);

    expect(w.couldHaveRunningContainers('0')).toBe(false); // deleted and terminated
    expect(w.couldHaveRunningContainers('1')).toBe(false); // terminated
    expect(w.couldHaveRunningContainers('2')).toBe(true);

    expect(w.shouldPodContentBeRemoved('0')).toBe(true); // deleted and terminated
    expect(w.shouldPodContentBeRemoved('1')).toBe(false); // terminated, not deleted
    expect(w.shouldPodContentBeRemoved('2')).toBe(false); // not terminated

    // an unknown pod before the first syncKnownPods
    expect(w.shouldPodContainersBeTerminating('abc')).toBe(false);
    expect(w.couldHaveRunningContainers('abc')).toBe(true);
    expect(w.shouldPodContentBeRemoved('abc')).toBe(false);

    w.syncKnownPods(desiredPodList);
    expect(w.workerCount).toBe(2);
    expect(new Set(w.snapshot().keys())).toEqual(new Set(['2', '14']));
    expect(w.isPodTerminationRequested('2')).toBe(false);

    // an unknown pod after the first syncKnownPods
    expect(w.shouldPodContainersBeTerminating('abc')).toBe(true);
    expect(w.couldHaveRunningContainers('abc')).toBe(false);
    expect(w.shouldPodContentBeRemoved('abc')).toBe(true);

    // workers that are not terminated stay tracked even when config no longer has them: they are
    // driven to termination and finish, but are not forgotten yet
    w.syncKnownPods([]);
    await w.whenIdle();
    expect(w.workerCount).toBe(0);
    expect(w.snapshot().size).toBe(2);
    for (const uid of desired) {
      const status = w.statusOf(uid)!;
      expect(status.finished).toBe(true);
      expect(status.deleted).toBe(true);
    }
    expect(h.syncer.processed.get('2')!.map((r) => (r.terminated ? 'terminated' : r.updateType))).toEqual(['update', 'kill', 'terminated']);

    for (const uid of desired) w.updatePod({ pod: newNamedPod(uid, 'ns', 'name', false), updateType: 'kill' });
    await w.whenIdle();

    // once terminated (by whatever path), the next sync forgets them
    w.syncKnownPods([]);
    expect(w.workerCount).toBe(0);
    expect(w.snapshot().size).toBe(0);
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
      record: () =>
        record({ fullname: 'fake-fullname', startedAt: 1 * SECOND, terminatingAt: 2 * SECOND, working: true, pending: '2', active: '1' }),
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
      record: () =>
        record({ fullname: 'fake-fullname', startedAt: 1 * SECOND, terminatingAt: 2 * SECOND, terminatedAt: 3 * SECOND, active: '1' }),
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
    });
  }
});
