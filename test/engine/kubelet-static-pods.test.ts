/**
 * The kubelet's static-pod scenarios: TestStaticPodExclusion (one static pod per full name, in
 * arrival order, through kills, restarts and out-of-order delivery) and Test_allowPodStart (every
 * table case).
 */
import { describe, expect, it } from 'vitest';
import { PodSyncRecord } from '../../src/engine/status.js';
import { StaticPodStarts } from '../../src/engine/static-pods.js';
import { PodWorkerEngine } from '../../src/engine/workers.js';
import type { V1Pod } from '../../src/engine/types.js';
import { FakeCache, FakeQueue, RecordingSyncer, createHarness, newNamedPod, newStaticPod } from './helpers.js';

const obj = <V>(m: Map<string, V>): Record<string, V> => Object.fromEntries(m);

describe('TestStaticPodExclusion', () => {
  it('starts one static pod per full name at a time, in arrival order', async () => {
    const staticPods = new StaticPodStarts();
    const h = createHarness({ internals: { staticPods } });
    const w = h.workers;
    const update = (uid: string, isStatic: boolean, updateType: 'update' | 'kill' | 'create' = 'update'): void =>
      w.updatePod({ pod: newNamedPod(uid, 'test1', 'pod1', isStatic), updateType });

    // two pods with the same name, one static, one from the API server
    update('1-normal', false);
    update('2-static', true);
    await h.drain();
    expect(w.isPodKnownTerminated('1-normal')).toBe(false);
    expect(w.isPodKnownTerminated('2-static')).toBe(false);
    expect(h.syncer.processed.size).toBe(2);
    expect(h.syncer.processed.get('2-static')).toEqual([{ name: 'pod1', updateType: 'update' }]);
    expect(obj(staticPods.started)).toEqual({ pod1_test1: '2-static' });

    // a second and a third static pod must not start
    update('3-static', true);
    update('4-static', true);
    await h.drain();
    for (const uid of ['1-normal', '2-static', '3-static', '4-static']) expect(w.isPodKnownTerminated(uid)).toBe(false);
    expect(h.syncer.processed.size).toBe(2);
    expect(h.syncer.processed.get('2-static')).toEqual([{ name: 'pod1', updateType: 'update' }]);
    expect(h.syncer.processed.get('3-static')).toBeUndefined();
    expect(h.syncer.processed.get('4-static')).toBeUndefined();
    expect(obj(staticPods.started)).toEqual({ pod1_test1: '2-static' });
    expect(obj(staticPods.waiting)).toEqual({ pod1_test1: ['3-static', '4-static'] });
    // all are queued: the running ones for resync, the waiting ones for another try
    expect(h.queue.set()).toEqual(new Set(['1-normal', '2-static', '4-static', '3-static']));
    // the waiting pods keep their update pending and are not working
    expect(w.statusOf('3-static')!.pendingUpdate?.updateType).toBe('update');
    expect(w.statusOf('3-static')!.working).toBe(false);

    // a basic update for 3-static: still not started because 2-static runs
    h.queue.getWork();
    update('3-static', true);
    await h.drain();
    expect(obj(staticPods.started)).toEqual({ pod1_test1: '2-static' });
    expect(obj(staticPods.waiting)).toEqual({ pod1_test1: ['3-static', '4-static'] });
    // a single retry is queued, for 3-static
    expect(new Set(h.queue.getWork())).toEqual(new Set(['3-static']));

    // kill 3-static while 2-static still runs
    h.queue.getWork();
    update('3-static', true, 'kill');
    await h.drain();
    // terminated because it never started; nothing else changes
    expect(w.isPodKnownTerminated('3-static')).toBe(true);
    expect(h.queue.getWork()).toEqual([]);
    expect(obj(staticPods.started)).toEqual({ pod1_test1: '2-static' });
    expect(obj(staticPods.waiting)).toEqual({ pod1_test1: ['3-static', '4-static'] });

    // terminate 2-static: it no longer holds the name
    update('2-static', true, 'kill');
    await h.drain();
    expect(w.isPodKnownTerminated('2-static')).toBe(true);
    expect(obj(staticPods.started)).toEqual({});
    expect(obj(staticPods.waiting)).toEqual({ pod1_test1: ['3-static', '4-static'] });

    // a periodic sync for 4-static starts it, 3-static having terminated
    update('4-static', true);
    await h.drain();
    expect(w.isPodKnownTerminated('4-static')).toBe(false);
    expect(obj(staticPods.started)).toEqual({ pod1_test1: '4-static' });
    expect(obj(staticPods.waiting)).toEqual({});

    // sync with every pod still desired
    let state = w.syncKnownPods([
      newNamedPod('1-normal', 'test1', 'pod1', false),
      newNamedPod('2-static', 'test1', 'pod1', true),
      newNamedPod('3-static', 'test1', 'pod1', true),
      newNamedPod('4-static', 'test1', 'pod1', true),
    ]);
    await h.drain();
    expect(obj(state)).toEqual({
      '1-normal': { state: 'sync', orphan: false, hasConfig: true, static: false },
      '2-static': { state: 'terminated', orphan: false, hasConfig: true, static: true },
      '3-static': { state: 'terminated', orphan: false, hasConfig: false, static: false },
      '4-static': { state: 'sync', orphan: false, hasConfig: true, static: true },
    });
    // 3-static is still desired: it keeps its status
    const s3 = w.statusOf('3-static');
    expect(s3?.terminatedAt).toBeDefined();
    expect(s3?.finished).toBe(true);
    expect(s3?.working).toBe(false);

    // sync without 3-static: it is forgotten
    state = w.syncKnownPods([
      newNamedPod('1-normal', 'test1', 'pod1', false),
      newNamedPod('2-static', 'test1', 'pod1', true),
      newNamedPod('4-static', 'test1', 'pod1', true),
    ]);
    await h.drain();
    expect(obj(state)).toEqual({
      '1-normal': { state: 'sync', orphan: false, hasConfig: true, static: false },
      '2-static': { state: 'terminated', orphan: false, hasConfig: true, static: true },
      '4-static': { state: 'sync', orphan: false, hasConfig: true, static: true },
    });
    expect(w.statusOf('3-static')).toBeUndefined();

    // start 5-static, then kill it while its worker is held (it stays waiting to start) and add 6-static
    update('5-static', true);
    await h.drain();
    h.hold('5-static');
    update('5-static', true, 'kill');
    update('6-static', true);
    await h.drain();
    let s5 = w.statusOf('5-static')!;
    expect(s5.terminatingAt).toBeDefined();
    expect(s5.terminatedAt).toBeUndefined();
    expect(obj(staticPods.started)).toEqual({ pod1_test1: '4-static' });
    expect(obj(staticPods.waiting)).toEqual({ pod1_test1: ['5-static', '6-static'] });

    // terminate 4-static and wake 6-static
    update('4-static', true, 'kill');
    await h.drain();
    update('6-static', true);
    await h.drain();
    // 5-static still waits; 6-static skipped it (termination requested) and started
    s5 = w.statusOf('5-static')!;
    expect(s5.terminatingAt).toBeDefined();
    expect(s5.terminatedAt).toBeUndefined();
    expect(obj(staticPods.started)).toEqual({ pod1_test1: '6-static' });
    expect(obj(staticPods.waiting)).toEqual({});
    expect(h.syncer.processed.get('6-static')).toEqual([{ name: 'pod1', updateType: 'update' }]);

    // 5-static exits when its event is delivered late
    h.release('5-static');
    await h.drain();
    expect(w.isPodKnownTerminated('5-static')).toBe(true);
    expect(h.syncer.processed.get('5-static')).toBeUndefined();

    // three more static pods; kill the pod blocking them, then let the second (8) ask first
    update('7-static', true);
    update('8-static', true);
    update('9-static', true);
    await h.drain();
    update('6-static', true, 'kill');
    await h.drain();
    update('6-static', true, 'create');
    await h.drain();
    update('8-static', true);
    await h.drain();
    // 6-static was recreated with the same UID: restart requested
    expect(w.statusOf('6-static')!.restartRequested).toBe(true);
    // 7 and 8 both still wait: only 7 may start, and it has not been woken
    expect(obj(staticPods.started)).toEqual({});
    expect(obj(staticPods.waiting)).toEqual({ pod1_test1: ['7-static', '8-static', '9-static'] });
    for (const uid of ['7-static', '8-static', '9-static']) expect(h.syncer.processed.get(uid)).toBeUndefined();

    // terminate 7-static and wake 8-static
    update('7-static', true, 'kill');
    await h.drain();
    update('8-static', true);
    await h.drain();
    expect(h.syncer.processed.get('8-static')).toEqual([{ name: 'pod1', updateType: 'update' }]);

    // sync with only 8-static desired
    state = w.syncKnownPods([newNamedPod('8-static', 'test1', 'pod1', true)]);
    await h.drain();
    expect(obj(state)).toEqual({
      '1-normal': { state: 'terminating', orphan: true, hasConfig: true, static: false },
      '8-static': { state: 'sync', orphan: false, hasConfig: true, static: true },
    });
    // the orphaned 1-normal was driven to the end
    expect(w.statusOf('1-normal')!.finished).toBe(true);
    expect(w.statusOf('9-static')).toBeUndefined();
  });
});

interface AllowCase {
  desc: string;
  pod: V1Pod;
  statuses: Record<string, { fullname: string; terminatingAt?: number; terminatedAt?: number }>;
  started?: Record<string, string>;
  waiting?: Record<string, string[]>;
  expectedStarted?: Record<string, string>;
  expectedWaiting?: Record<string, string[]>;
  allowed: boolean;
  allowedEver: boolean;
}

describe('Test_allowPodStart', () => {
  const now = Date.now();
  const cases: AllowCase[] = [
    {
      desc: 'non-static pod',
      pod: newNamedPod('uid-0', 'ns', 'test', false),
      statuses: { 'uid-0': { fullname: 'test_' }, 'uid-1': { fullname: 'test_' } },
      allowed: true,
      allowedEver: true,
    },
    {
      desc: 'non-static pod when there is a started static pod with the same full name',
      pod: newNamedPod('uid-0', 'ns', 'test', false),
      statuses: { 'uid-0': { fullname: 'test_' }, 'uid-1': { fullname: 'test_' } },
      started: { test_: 'uid-1' },
      expectedStarted: { test_: 'uid-1' },
      allowed: true,
      allowedEver: true,
    },
    {
      desc: 'static pod when there is a started non-static pod with the same full name',
      pod: newNamedPod('uid-0', 'ns', 'test', false),
      statuses: { 'uid-0': { fullname: 'test_' }, 'uid-1': { fullname: 'test_' } },
      allowed: true,
      allowedEver: true,
    },
    {
      desc: 'static pod when there are no started static pods with the same full name',
      pod: newStaticPod('uid-0', 'foo'),
      statuses: { 'uid-0': { fullname: 'foo_' }, 'uid-1': { fullname: 'bar_' } },
      started: { bar_: 'uid-1' },
      expectedStarted: { foo_: 'uid-0', bar_: 'uid-1' },
      allowed: true,
      allowedEver: true,
    },
    {
      desc: 'static pod when there is a started static pod with the same full name',
      pod: newStaticPod('uid-0', 'foo'),
      statuses: { 'uid-0': { fullname: 'foo_' }, 'uid-1': { fullname: 'foo_' } },
      started: { foo_: 'uid-1' },
      expectedStarted: { foo_: 'uid-1' },
      allowed: false,
      allowedEver: true,
    },
    {
      desc: 'static pod if the static pod has already started',
      pod: newStaticPod('uid-0', 'foo'),
      statuses: { 'uid-0': { fullname: 'foo_' } },
      started: { foo_: 'uid-0' },
      expectedStarted: { foo_: 'uid-0' },
      allowed: true,
      allowedEver: true,
    },
    {
      desc: 'static pod if the static pod is the first pod waiting to start',
      pod: newStaticPod('uid-0', 'foo'),
      statuses: { 'uid-0': { fullname: 'foo_' } },
      waiting: { foo_: ['uid-0'] },
      expectedStarted: { foo_: 'uid-0' },
      expectedWaiting: {},
      allowed: true,
      allowedEver: true,
    },
    {
      desc: 'static pod if the static pod is not the first pod waiting to start',
      pod: newStaticPod('uid-0', 'foo'),
      statuses: { 'uid-0': { fullname: 'foo_' }, 'uid-1': { fullname: 'foo_' } },
      waiting: { foo_: ['uid-1', 'uid-0'] },
      expectedStarted: {},
      expectedWaiting: { foo_: ['uid-1', 'uid-0'] },
      allowed: false,
      allowedEver: true,
    },
    {
      desc: 'static pod if the static pod is the first valid pod waiting to start / clean up until picking the first valid pod',
      pod: newStaticPod('uid-0', 'foo'),
      statuses: { 'uid-0': { fullname: 'foo_' }, 'uid-1': { fullname: 'foo_' } },
      waiting: { foo_: ['uid-2', 'uid-2', 'uid-3', 'uid-0', 'uid-1'] },
      expectedStarted: { foo_: 'uid-0' },
      expectedWaiting: { foo_: ['uid-1'] },
      allowed: true,
      allowedEver: true,
    },
    {
      desc: 'static pod if the static pod is the first pod that is not termination requested and waiting to start',
      pod: newStaticPod('uid-0', 'foo'),
      statuses: {
        'uid-0': { fullname: 'foo_' },
        'uid-1': { fullname: 'foo_' },
        'uid-2': { fullname: 'foo_', terminatingAt: now },
        'uid-3': { fullname: 'foo_', terminatedAt: now },
      },
      waiting: { foo_: ['uid-2', 'uid-3', 'uid-0', 'uid-1'] },
      expectedStarted: { foo_: 'uid-0' },
      expectedWaiting: { foo_: ['uid-1'] },
      allowed: true,
      allowedEver: true,
    },
    {
      desc: 'static pod if there is no sync status for the pod should be denied',
      pod: newStaticPod('uid-0', 'foo'),
      statuses: {
        'uid-1': { fullname: 'foo_' },
        'uid-2': { fullname: 'foo_', terminatingAt: now },
        'uid-3': { fullname: 'foo_', terminatedAt: now },
      },
      waiting: { foo_: ['uid-1'] },
      expectedStarted: {},
      expectedWaiting: { foo_: ['uid-1'] },
      allowed: false,
      allowedEver: false,
    },
    {
      desc: 'static pod if the static pod is terminated should not be allowed',
      pod: newStaticPod('uid-0', 'foo'),
      statuses: { 'uid-0': { fullname: 'foo_', terminatingAt: now } },
      waiting: { foo_: ['uid-2', 'uid-3', 'uid-0', 'uid-1'] },
      expectedStarted: {},
      expectedWaiting: { foo_: ['uid-2', 'uid-3', 'uid-0', 'uid-1'] },
      allowed: false,
      allowedEver: false,
    },
  ];

  for (const tc of cases) {
    it(tc.desc, () => {
      const statuses = new Map<string, PodSyncRecord>();
      for (const [uid, s] of Object.entries(tc.statuses)) {
        const record = new PodSyncRecord(s.fullname, now);
        record.terminatingAt = s.terminatingAt;
        record.terminatedAt = s.terminatedAt;
        statuses.set(uid, record);
      }
      const staticPods = new StaticPodStarts();
      for (const [name, uid] of Object.entries(tc.started ?? {})) staticPods.started.set(name, uid);
      for (const [name, uids] of Object.entries(tc.waiting ?? {})) staticPods.waiting.set(name, [...uids]);
      const queue = new FakeQueue();
      const workers = new PodWorkerEngine(
        { syncer: new RecordingSyncer(), cache: new FakeCache(), workQueue: queue },
        { statuses, staticPods },
      );

      const { canStart, canEverStart } = workers.allowPodStart(tc.pod);
      expect(canStart).toBe(tc.allowed);
      expect(canEverStart).toBe(tc.allowedEver);
      expect(obj(staticPods.started)).toEqual(tc.expectedStarted ?? {});
      expect(obj(staticPods.waiting)).toEqual(tc.expectedWaiting ?? {});
      // a pod that may start later is retried with back-off
      expect(queue.items.length).toBe(tc.allowedEver && !tc.allowed ? 1 : 0);
    });
  }
});
