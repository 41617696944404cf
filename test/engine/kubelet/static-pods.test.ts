/**
 * The kubelet's TestStaticPodExclusion and Test_allowPodStart. The Go tests read
 * startedStaticPodsByFullname / waitingToStartStaticPodsByFullname: TestStaticPodExclusion injects
 * the engine's StaticPodStarts and checks both maps, and also observes the same through the surface
 * ("started": the worker ran syncPod, startedAt set, activeUpdate present; "waiting": the update kept
 * as pendingUpdate with no startedAt and no sync calls; isPodForMirrorPodTerminatingByFullName for a
 * terminating static pod). Test_allowPodStart runs twice: as the Go table (internals injected,
 * allowPodStart called directly) and through start order.
 */
import { describe, expect, it } from 'vitest';
import type { PodWorkerSync } from '../../../src/engine/index.js';
import { PodSyncRecord } from '../../../src/engine/status.js';
import { StaticPodStarts } from '../../../src/engine/static-pods.js';
import type { V1Pod } from '../../../src/engine/types.js';
import { createHarness, newNamedPod, newStaticPod, until, type Harness } from '../harness.js';

const FULLNAME = 'pod1_test1';
const sp = (uid: string) => newNamedPod(uid, 'test1', 'pod1', true);

function started(h: Harness, uid: string): boolean {
  const s = h.workers.snapshot().get(uid);
  return s?.startedAt !== undefined && s.activeUpdate !== undefined;
}
function waiting(h: Harness, uid: string): boolean {
  const s = h.workers.snapshot().get(uid);
  return s !== undefined && s.startedAt === undefined && s.pendingUpdate !== undefined && h.syncer.records(uid) === undefined;
}
function terminated(h: Harness, uid: string): boolean {
  return h.workers.snapshot().get(uid)?.terminatedAt !== undefined;
}
function terminationRequested(h: Harness, uid: string): boolean {
  return h.workers.snapshot().get(uid)?.terminatingAt !== undefined;
}
const asObject = (m: Map<string, PodWorkerSync>) => Object.fromEntries(m);
const obj = <V>(m: Map<string, V>): Record<string, V> => Object.fromEntries(m);

describe('TestStaticPodExclusion', () => {
  it('static pods with one fullname start one at a time, in the order they were received', async () => {
    const staticPods = new StaticPodStarts();
    const h = createHarness({ internals: { staticPods } });
    const { workers, syncer, queue } = h;
    const maps = (started: Record<string, string>, waiting: Record<string, string[]>): void => {
      expect(obj(staticPods.started)).toEqual(started);
      expect(obj(staticPods.waiting)).toEqual(waiting);
    };

    // start two pods with the same name, one static, one apiserver
    workers.updatePod({ pod: newNamedPod('1-normal', 'test1', 'pod1', false), updateType: 'update' });
    workers.updatePod({ pod: sp('2-static'), updateType: 'update' });
    await h.drain();
    expect(terminated(h, '1-normal')).toBe(false);
    expect(terminated(h, '2-static')).toBe(false);
    expect(syncer.processed.size).toBe(2);
    expect(syncer.records('2-static')).toEqual([{ name: 'pod1', updateType: 'update' }]);
    expect(started(h, '2-static')).toBe(true);
    maps({ [FULLNAME]: '2-static' }, {});

    // a second and third static pod do not start
    workers.updatePod({ pod: sp('3-static'), updateType: 'update' });
    workers.updatePod({ pod: sp('4-static'), updateType: 'update' });
    await h.drain();
    for (const uid of ['1-normal', '2-static', '3-static', '4-static']) expect(terminated(h, uid)).toBe(false);
    expect(syncer.processed.size).toBe(2);
    expect(syncer.records('2-static')).toEqual([{ name: 'pod1', updateType: 'update' }]);
    expect(syncer.records('3-static')).toBeUndefined();
    expect(syncer.records('4-static')).toBeUndefined();
    expect(started(h, '2-static')).toBe(true);
    expect(waiting(h, '3-static')).toBe(true);
    expect(waiting(h, '4-static')).toBe(true);
    maps({ [FULLNAME]: '2-static' }, { [FULLNAME]: ['3-static', '4-static'] });
    // a waiting static pod keeps its update pending but is not "working"
    expect(workers.snapshot().get('3-static')!.pendingUpdate!.updateType).toBe('update');
    expect(workers.snapshot().get('3-static')!.working).toBe(false);
    // all are enqueued
    expect(queue.set()).toEqual(new Set(['1-normal', '2-static', '4-static', '3-static']));

    // a basic update for 3-static: still blocked by 2-static, retried later
    queue.getWork();
    workers.updatePod({ pod: sp('3-static'), updateType: 'update' });
    await h.drain();
    expect(started(h, '2-static')).toBe(true);
    expect(waiting(h, '3-static')).toBe(true);
    expect(waiting(h, '4-static')).toBe(true);
    maps({ [FULLNAME]: '2-static' }, { [FULLNAME]: ['3-static', '4-static'] });
    expect(new Set(queue.getWork())).toEqual(new Set(['3-static']));

    // mark 3-static as deleted while 2-static is still running
    queue.getWork();
    workers.updatePod({ pod: sp('3-static'), updateType: 'kill' });
    await h.drain();
    expect(terminated(h, '3-static')).toBe(true);
    expect(syncer.records('3-static')).toBeUndefined(); // never started, so nothing to terminate
    expect(new Set(queue.getWork())).toEqual(new Set());
    expect(started(h, '2-static')).toBe(true);
    expect(waiting(h, '4-static')).toBe(true);
    maps({ [FULLNAME]: '2-static' }, { [FULLNAME]: ['3-static', '4-static'] });

    // terminate 2-static: while it terminates it is the mirror pod's terminating static pod
    let mirrorTerminatingDuringKill: boolean | undefined;
    syncer.onTerminating = (uid) => {
      if (uid === '2-static') mirrorTerminatingDuringKill = workers.isPodForMirrorPodTerminatingByFullName(FULLNAME);
    };
    workers.updatePod({ pod: sp('2-static'), updateType: 'kill' });
    await h.drain();
    syncer.onTerminating = undefined;
    expect(mirrorTerminatingDuringKill).toBe(true);
    expect(terminated(h, '2-static')).toBe(true);
    expect(workers.isPodForMirrorPodTerminatingByFullName(FULLNAME)).toBe(false);
    expect(waiting(h, '4-static')).toBe(true);
    maps({}, { [FULLNAME]: ['3-static', '4-static'] });

    // a periodic event for 4-static: starts, because 3-static has already terminated
    workers.updatePod({ pod: sp('4-static'), updateType: 'update' });
    await h.drain();
    expect(terminated(h, '4-static')).toBe(false);
    expect(started(h, '4-static')).toBe(true);
    expect(syncer.records('4-static')).toEqual([{ name: 'pod1', updateType: 'update' }]);
    expect(workers.snapshot().get('4-static')!.pendingUpdate).toBeUndefined();
    maps({ [FULLNAME]: '4-static' }, {});

    // a sync with all pods remaining
    let state = workers.syncKnownPods([newNamedPod('1-normal', 'test1', 'pod1', false), sp('2-static'), sp('3-static'), sp('4-static')]);
    await h.drain();
    expect(asObject(state)).toEqual({
      '1-normal': { state: 'sync', orphan: false, hasConfig: true, static: false },
      '2-static': { state: 'terminated', orphan: false, hasConfig: true, static: true },
      '3-static': { state: 'terminated', orphan: false, hasConfig: false, static: false },
      '4-static': { state: 'sync', orphan: false, hasConfig: true, static: true },
    });
    // 3-static is still in the config, so it is still tracked
    const s3 = workers.snapshot().get('3-static');
    expect(s3).toBeDefined();
    expect(s3!.terminatedAt).toBeDefined();
    expect(s3!.finished).toBe(true);
    expect(s3!.working).toBe(false);

    // a sync with 3-static removed puts it into its final state and forgets it
    state = workers.syncKnownPods([newNamedPod('1-normal', 'test1', 'pod1', false), sp('2-static'), sp('4-static')]);
    await h.drain();
    expect(asObject(state)).toEqual({
      '1-normal': { state: 'sync', orphan: false, hasConfig: true, static: false },
      '2-static': { state: 'terminated', orphan: false, hasConfig: true, static: true },
      '4-static': { state: 'sync', orphan: false, hasConfig: true, static: true },
    });
    expect(workers.snapshot().has('3-static')).toBe(false);

    // start a static pod, kill it, then add another one, but the worker for 5 does not see the kill
    workers.updatePod({ pod: sp('5-static'), updateType: 'update' });
    await h.drain();
    h.hold('5-static');
    workers.updatePod({ pod: sp('5-static'), updateType: 'kill' });
    workers.updatePod({ pod: sp('6-static'), updateType: 'update' });
    await h.drain(['5-static']);
    expect(terminationRequested(h, '5-static')).toBe(true);
    expect(terminated(h, '5-static')).toBe(false);
    expect(started(h, '4-static')).toBe(true);
    expect(started(h, '5-static')).toBe(false);
    expect(waiting(h, '6-static')).toBe(true);
    maps({ [FULLNAME]: '4-static' }, { [FULLNAME]: ['5-static', '6-static'] });

    // terminate 4-static and wake 6-static
    workers.updatePod({ pod: sp('4-static'), updateType: 'kill' });
    await h.drain(['5-static']);
    workers.updatePod({ pod: sp('6-static'), updateType: 'update' });
    await h.drain(['5-static']);
    // 5 is still waiting; 6 skipped it (5 is terminating) and started
    expect(terminationRequested(h, '5-static')).toBe(true);
    expect(terminated(h, '5-static')).toBe(false);
    expect(started(h, '6-static')).toBe(true);
    expect(syncer.records('6-static')).toEqual([{ name: 'pod1', updateType: 'update' }]);
    maps({ [FULLNAME]: '6-static' }, {});

    // 5 exits when its event is finally delivered, without ever running
    h.release('5-static');
    await h.drain();
    expect(terminated(h, '5-static')).toBe(true);
    expect(syncer.records('5-static')).toBeUndefined();

    // three more static pods; kill the pod blocking them; the second of three gets an event first
    workers.updatePod({ pod: sp('7-static'), updateType: 'update' });
    workers.updatePod({ pod: sp('8-static'), updateType: 'update' });
    workers.updatePod({ pod: sp('9-static'), updateType: 'update' });
    await h.drain();
    workers.updatePod({ pod: sp('6-static'), updateType: 'kill' });
    await h.drain();
    workers.updatePod({ pod: sp('6-static'), updateType: 'create' });
    await h.drain();
    workers.updatePod({ pod: sp('8-static'), updateType: 'update' });
    await h.drain();

    // 6 was detected as restartable
    expect(workers.snapshot().get('6-static')!.restartRequested).toBe(true);
    // nothing started; 7 is next in line but has had no event
    for (const uid of ['7-static', '8-static', '9-static']) {
      expect(syncer.records(uid)).toBeUndefined();
      expect(waiting(h, uid)).toBe(true);
    }
    expect(workers.isPodForMirrorPodTerminatingByFullName(FULLNAME)).toBe(false);
    maps({}, { [FULLNAME]: ['7-static', '8-static', '9-static'] });

    // terminate 7-static and wake 8-static
    workers.updatePod({ pod: sp('7-static'), updateType: 'kill' });
    await h.drain();
    workers.updatePod({ pod: sp('8-static'), updateType: 'update' });
    await h.drain();
    expect(syncer.records('8-static')).toEqual([{ name: 'pod1', updateType: 'update' }]);
    expect(syncer.records('9-static')).toBeUndefined();

    // a sync with all but 8-static undesired
    state = workers.syncKnownPods([sp('8-static')]);
    expect(asObject(state)).toEqual({
      '1-normal': { state: 'terminating', orphan: true, hasConfig: true, static: false },
      '8-static': { state: 'sync', orphan: false, hasConfig: true, static: true },
    });
    await h.drain();
    // the orphaned 1-normal is driven to completion by replaying its last update: that update had no
    // kill options, so (as in the reference) syncTerminatingPod gets no grace period and the status
    // records the pod's own 30 s
    expect(workers.snapshot().get('1-normal')!.gracePeriod).toBe(30);
    expect(workers.snapshot().get('1-normal')!.deleted).toBe(true);
    expect(workers.snapshot().get('1-normal')!.finished).toBe(true);
    expect(syncer.records('1-normal')!.slice(-2)).toEqual([
      { name: 'pod1', updateType: 'kill', gracePeriod: undefined },
      { name: 'pod1', terminated: true },
    ]);
    // 9-static never started and was orphaned: forgotten, never synced
    expect(workers.snapshot().has('9-static')).toBe(false);
    expect(syncer.records('9-static')).toBeUndefined();
    await workers.close();
  });
});

describe('Test_allowPodStart (through start order)', () => {
  it('non-static pods with the same full name all start', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newNamedPod('uid-0', 'ns', 'test', false), updateType: 'update' });
    h.workers.updatePod({ pod: newNamedPod('uid-1', 'ns', 'test', false), updateType: 'update' });
    await h.drain();
    expect(started(h, 'uid-0')).toBe(true);
    expect(started(h, 'uid-1')).toBe(true);
    await h.workers.close();
  });

  it('a non-static pod starts even when a static pod with the same full name is started', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newNamedPod('uid-1', 'ns', 'test', true), updateType: 'update' });
    await h.drain();
    h.workers.updatePod({ pod: newNamedPod('uid-0', 'ns', 'test', false), updateType: 'update' });
    await h.drain();
    expect(started(h, 'uid-1')).toBe(true);
    expect(started(h, 'uid-0')).toBe(true);
    await h.workers.close();
  });

  it('a static pod starts when only a non-static pod with the same full name is started', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newNamedPod('uid-1', 'ns', 'test', false), updateType: 'update' });
    await h.drain();
    h.workers.updatePod({ pod: newNamedPod('uid-0', 'ns', 'test', true), updateType: 'update' });
    await h.drain();
    expect(started(h, 'uid-0')).toBe(true);
    await h.workers.close();
  });

  it('static pods with different full names start independently (fullname of a pod with no namespace is "name_")', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newStaticPod('uid-1', 'bar'), updateType: 'update' });
    h.workers.updatePod({ pod: newStaticPod('uid-0', 'foo'), updateType: 'update' });
    await h.drain();
    expect(started(h, 'uid-0')).toBe(true);
    expect(started(h, 'uid-1')).toBe(true);
    expect(h.workers.snapshot().get('uid-0')!.fullname).toBe('foo_');
    expect(h.workers.snapshot().get('uid-1')!.fullname).toBe('bar_');
    await h.workers.close();
  });

  it('a static pod is denied (and retried with backoff) while another static pod with its full name is started', async () => {
    const h = createHarness({ backOffPeriodMs: 10_000 });
    h.workers.updatePod({ pod: newStaticPod('uid-1', 'foo'), updateType: 'update' });
    await h.drain();
    h.queue.getWork();
    h.workers.updatePod({ pod: newStaticPod('uid-0', 'foo'), updateType: 'update' });
    await h.drain();
    expect(waiting(h, 'uid-0')).toBe(true);
    expect(terminated(h, 'uid-0')).toBe(false); // can still start some day
    const retries = h.queue.pending();
    expect(retries.map((i) => i.uid)).toEqual(['uid-0']);
    expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(10_000);
    expect(retries[0]!.delayMs).toBeLessThan(15_000);
    await h.workers.close();
  });

  it('a static pod that already started is allowed on every later update', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newStaticPod('uid-0', 'foo'), updateType: 'update' });
    await h.drain();
    h.workers.updatePod({ pod: newStaticPod('uid-0', 'foo'), updateType: 'update' });
    await h.drain();
    expect(h.syncer.records('uid-0')).toHaveLength(2);
    await h.workers.close();
  });

  it('a static pod that is not first in line waits for the first one; the first one is taken off the line when it starts', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newStaticPod('blocker', 'foo'), updateType: 'update' });
    await h.drain();
    // line: uid-1, uid-0
    h.workers.updatePod({ pod: newStaticPod('uid-1', 'foo'), updateType: 'update' });
    h.workers.updatePod({ pod: newStaticPod('uid-0', 'foo'), updateType: 'update' });
    await h.drain();
    h.workers.updatePod({ pod: newStaticPod('blocker', 'foo'), updateType: 'kill' });
    await h.drain();
    // uid-0 gets an event first: denied, uid-1 is first in line
    h.workers.updatePod({ pod: newStaticPod('uid-0', 'foo'), updateType: 'update' });
    await h.drain();
    expect(waiting(h, 'uid-0')).toBe(true);
    expect(h.syncer.records('uid-1')).toBeUndefined();
    // uid-1 gets its event and starts
    h.workers.updatePod({ pod: newStaticPod('uid-1', 'foo'), updateType: 'update' });
    await h.drain();
    expect(started(h, 'uid-1')).toBe(true);
    expect(waiting(h, 'uid-0')).toBe(true);
    await h.workers.close();
  });

  it('pods no longer tracked are skipped in the line (cleanup until the first valid pod)', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newStaticPod('blocker', 'foo'), updateType: 'update' });
    await h.drain();
    // line: uid-2, uid-3, uid-0, uid-1
    for (const uid of ['uid-2', 'uid-3', 'uid-0', 'uid-1']) h.workers.updatePod({ pod: newStaticPod(uid, 'foo'), updateType: 'update' });
    await h.drain();
    // uid-2 and uid-3 leave the config before starting: forgotten
    h.workers.syncKnownPods(['blocker', 'uid-0', 'uid-1'].map((u) => newStaticPod(u, 'foo')));
    await h.drain();
    expect(h.workers.snapshot().has('uid-2')).toBe(false);
    expect(h.workers.snapshot().has('uid-3')).toBe(false);
    h.workers.updatePod({ pod: newStaticPod('blocker', 'foo'), updateType: 'kill' });
    await h.drain();
    h.workers.updatePod({ pod: newStaticPod('uid-0', 'foo'), updateType: 'update' });
    h.workers.updatePod({ pod: newStaticPod('uid-1', 'foo'), updateType: 'update' });
    await h.drain();
    expect(started(h, 'uid-0')).toBe(true);
    expect(waiting(h, 'uid-1')).toBe(true);
    await h.workers.close();
  });

  it('terminating and terminated pods are skipped in the line', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newStaticPod('blocker', 'foo'), updateType: 'update' });
    await h.drain();
    for (const uid of ['uid-2', 'uid-3', 'uid-0', 'uid-1']) h.workers.updatePod({ pod: newStaticPod(uid, 'foo'), updateType: 'update' });
    await h.drain();
    // uid-2: termination requested but its worker has not seen it; uid-3: terminated
    h.hold('uid-2');
    h.workers.updatePod({ pod: newStaticPod('uid-2', 'foo'), updateType: 'kill' });
    h.workers.updatePod({ pod: newStaticPod('uid-3', 'foo'), updateType: 'kill' });
    await h.drain(['uid-2']);
    expect(terminationRequested(h, 'uid-2')).toBe(true);
    expect(terminated(h, 'uid-2')).toBe(false);
    expect(terminated(h, 'uid-3')).toBe(true);
    h.workers.updatePod({ pod: newStaticPod('blocker', 'foo'), updateType: 'kill' });
    await h.drain(['uid-2']);
    h.workers.updatePod({ pod: newStaticPod('uid-0', 'foo'), updateType: 'update' });
    h.workers.updatePod({ pod: newStaticPod('uid-1', 'foo'), updateType: 'update' });
    await h.drain(['uid-2']);
    expect(started(h, 'uid-0')).toBe(true);
    expect(waiting(h, 'uid-1')).toBe(true);
    h.release('uid-2');
    await h.drain();
    expect(terminated(h, 'uid-2')).toBe(true);
    expect(h.syncer.records('uid-2')).toBeUndefined();
    await h.workers.close();
  });

  it('a static pod whose termination was requested before it started can never start', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newStaticPod('blocker', 'foo'), updateType: 'update' });
    await h.drain();
    h.workers.updatePod({ pod: newStaticPod('uid-0', 'foo'), updateType: 'update' });
    await h.drain();
    h.queue.getWork();
    h.workers.updatePod({ pod: newStaticPod('uid-0', 'foo'), updateType: 'kill' });
    await h.drain();
    const s = h.workers.snapshot().get('uid-0')!;
    expect(s.terminatedAt).toBeDefined();
    expect(s.finished).toBe(true);
    expect(s.startedAt).toBeUndefined();
    expect(h.syncer.records('uid-0')).toBeUndefined();
    expect(h.queue.getWork()).toEqual([]); // no retry for a pod that can never start
    // even with the blocker gone, it does not start
    h.workers.updatePod({ pod: newStaticPod('blocker', 'foo'), updateType: 'kill' });
    await h.drain();
    h.workers.updatePod({ pod: newStaticPod('uid-0', 'foo'), updateType: 'update' });
    await h.drain();
    expect(h.syncer.records('uid-0')).toBeUndefined();
    await h.workers.close();
  });

  it('the started static pod is reported terminating by full name only between termination request and terminated', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newStaticPod('uid-0', 'foo'), updateType: 'update' });
    await h.drain();
    expect(h.workers.isPodForMirrorPodTerminatingByFullName('foo_')).toBe(false);
    h.hold('uid-0');
    h.workers.updatePod({ pod: newStaticPod('uid-0', 'foo'), updateType: 'kill' });
    // termination requested (the started static pod is terminating) before the worker acts
    expect(h.workers.isPodForMirrorPodTerminatingByFullName('foo_')).toBe(true);
    expect(h.workers.isPodForMirrorPodTerminatingByFullName('bar_')).toBe(false);
    h.release('uid-0');
    await h.drain();
    await until(() => h.workers.snapshot().get('uid-0')!.finished);
    expect(h.workers.isPodForMirrorPodTerminatingByFullName('foo_')).toBe(false);
    await h.workers.close();
  });
});

describe('which pods are static', () => {
  const withSource = (uid: string, source: string) => {
    const p = newNamedPod(uid, 'ns', 'same', false);
    p.metadata!.annotations = { 'kubernetes.io/config.source': source };
    return p;
  };

  it('config.source "api" is not static: pods with one full name all start', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: withSource('a', 'api'), updateType: 'update' });
    h.workers.updatePod({ pod: withSource('b', 'api'), updateType: 'update' });
    await h.drain();
    expect(started(h, 'a')).toBe(true);
    expect(started(h, 'b')).toBe(true);
    expect(h.workers.syncKnownPods([withSource('a', 'api'), withSource('b', 'api')]).get('a')!.static).toBe(false);
    await h.workers.close();
  });

  it('config.source "http" (any source but the API) is static: one at a time', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: withSource('a', 'http'), updateType: 'update' });
    h.workers.updatePod({ pod: withSource('b', 'http'), updateType: 'update' });
    await h.drain();
    expect(started(h, 'a')).toBe(true);
    expect(waiting(h, 'b')).toBe(true);
    expect(h.workers.syncKnownPods([withSource('a', 'http'), withSource('b', 'http')]).get('b')).toEqual({ state: 'sync', orphan: false, hasConfig: true, static: true });
    await h.workers.close();
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
      const { workers, queue } = createHarness({ internals: { statuses, staticPods } });

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
