/**
 * The kubelet's pod_workers_test.go scenarios around updatePod: the TestUpdatePod table (every case),
 * TestUpdatePodForRuntimePod, TestUpdatePodForTerminatedRuntimePod, TestUpdatePodDoesNotForgetSyncPodKill,
 * TestUpdatePodParallel, TestTerminalPhaseTransition and TestFakePodWorkers. Go's reads of
 * podSyncStatuses[uid] are statusOf(uid) / snapshot().get(uid); times are epoch ms.
 */
import { describe, expect, it } from 'vitest';
import type { PodSyncStatusView, UpdatePodOptions } from '../../../src/engine/types.js';
import { PodSyncRecord } from '../../../src/engine/status.js';
import { SECOND, createHarness, emptyStatus, expectedView, newNamedPod, newPodWithPhase, runningPod, unix, until, updateAndDrain, withDeletionTimestamp, withLabel, type Harness } from '../harness.js';

interface UpdatePodCase {
  name: string;
  update: UpdatePodOptions;
  /** The runtime cache answer for `get` during the update (undefined: the runtime does not know the pod). */
  runtimeStatus?: ReturnType<typeof emptyStatus>;
  prepare?: (h: Harness) => Promise<(() => void) | undefined>;
  expect: PodSyncStatusView | undefined;
  expectBeforeWorker?: PodSyncStatusView;
  expectKnownTerminated?: boolean;
}

describe('TestUpdatePod', () => {
  const cases: UpdatePodCase[] = [
    {
      name: 'a new pod is recorded and started',
      update: { updateType: 'create', pod: newNamedPod('1', 'ns', 'running-pod', false) },
      expect: expectedView({
        fullname: 'running-pod_ns',
        syncedAt: unix(1),
        startedAt: unix(3),
        activeUpdate: { updateType: 'sync', pod: newNamedPod('1', 'ns', 'running-pod', false) },
      }),
    },
    {
      name: 'a new pod is recorded and started unless it is a duplicate of an existing terminating pod UID',
      update: { updateType: 'create', pod: withLabel(newNamedPod('1', 'ns', 'running-pod', false), 'updated', 'value') },
      prepare: async (h) => {
        await updateAndDrain(h, { updateType: 'create', pod: newNamedPod('1', 'ns', 'running-pod', false) });
        h.hold('1');
        await updateAndDrain(h, { updateType: 'kill', pod: newNamedPod('1', 'ns', 'running-pod', false) });
        return () => h.release('1');
      },
      expect: expectedView({
        fullname: 'running-pod_ns',
        syncedAt: unix(1),
        startedAt: unix(3),
        terminatingAt: unix(3),
        terminatedAt: unix(6),
        gracePeriod: 30,
        startedTerminating: true,
        restartRequested: true, // a create arrived during termination
        finished: true,
        activeUpdate: {
          updateType: 'sync',
          pod: newNamedPod('1', 'ns', 'running-pod', false),
          killPodOptions: { gracePeriodSecondsOverride: 30 },
        },
      }),
      expectKnownTerminated: true,
    },
    {
      name: 'a new pod is recorded and started and running pod is ignored',
      update: {
        updateType: 'create',
        pod: newNamedPod('1', 'ns', 'running-pod', false),
        runningPod: runningPod('1', 'orphaned-pod', 'ns'),
      },
      expect: expectedView({
        fullname: 'running-pod_ns',
        syncedAt: unix(1),
        startedAt: unix(3),
        activeUpdate: { updateType: 'sync', pod: newNamedPod('1', 'ns', 'running-pod', false) },
      }),
    },
    {
      name: 'a running pod is terminated when an update contains a deletionTimestamp',
      update: { updateType: 'update', pod: withDeletionTimestamp(newNamedPod('1', 'ns', 'running-pod', false), unix(1), 15) },
      prepare: async (h) => {
        await updateAndDrain(h, { updateType: 'create', pod: newNamedPod('1', 'ns', 'running-pod', false) });
        return undefined;
      },
      expect: expectedView({
        fullname: 'running-pod_ns',
        syncedAt: unix(1),
        startedAt: unix(3),
        terminatingAt: unix(3),
        terminatedAt: unix(5),
        gracePeriod: 15,
        startedTerminating: true,
        finished: true,
        deleted: true,
        activeUpdate: {
          updateType: 'sync',
          pod: withDeletionTimestamp(newNamedPod('1', 'ns', 'running-pod', false), unix(1), 15),
          killPodOptions: { gracePeriodSecondsOverride: 15 },
        },
      }),
      expectKnownTerminated: true,
    },
    {
      name: 'a running pod is terminated when an eviction is requested',
      update: { updateType: 'kill', pod: newNamedPod('1', 'ns', 'running-pod', false), killPodOptions: { evict: true } },
      prepare: async (h) => {
        await updateAndDrain(h, { updateType: 'create', pod: newNamedPod('1', 'ns', 'running-pod', false) });
        return undefined;
      },
      expect: expectedView({
        fullname: 'running-pod_ns',
        syncedAt: unix(1),
        startedAt: unix(3),
        terminatingAt: unix(3),
        terminatedAt: unix(5),
        gracePeriod: 30,
        startedTerminating: true,
        finished: true,
        evicted: true,
        activeUpdate: {
          updateType: 'sync',
          pod: newNamedPod('1', 'ns', 'running-pod', false),
          killPodOptions: { gracePeriodSecondsOverride: 30, evict: true },
        },
      }),
      expectKnownTerminated: true,
    },
    {
      name: 'a pod that is terminal and has never started must be terminated if the runtime does not have a cached terminal state',
      update: { updateType: 'create', pod: newPodWithPhase('1', 'done-pod', 'Succeeded') },
      expect: expectedView({
        fullname: 'done-pod_ns',
        syncedAt: unix(1),
        terminatingAt: unix(1),
        startedAt: unix(3),
        terminatedAt: unix(3),
        activeUpdate: {
          updateType: 'sync',
          pod: newPodWithPhase('1', 'done-pod', 'Succeeded'),
          killPodOptions: { gracePeriodSecondsOverride: 30 },
        },
        gracePeriod: 30,
        startedTerminating: true,
        finished: true,
      }),
      expectKnownTerminated: true,
    },
    {
      name: 'a pod that is terminal and has never started advances to finished if the runtime has a cached terminal state',
      update: { updateType: 'create', pod: newPodWithPhase('1', 'done-pod', 'Succeeded') },
      runtimeStatus: emptyStatus('1'),
      expectBeforeWorker: expectedView({
        fullname: 'done-pod_ns',
        syncedAt: unix(1),
        terminatingAt: unix(1),
        terminatedAt: unix(1),
        pendingUpdate: { updateType: 'create', pod: newPodWithPhase('1', 'done-pod', 'Succeeded') },
        finished: false, // not finished yet, so that the terminated step still runs
        startedTerminating: true,
        working: true,
      }),
      expect: expectedView({
        fullname: 'done-pod_ns',
        syncedAt: unix(1),
        terminatingAt: unix(1),
        terminatedAt: unix(1),
        startedAt: unix(3),
        startedTerminating: true,
        finished: true,
        activeUpdate: { updateType: 'sync', pod: newPodWithPhase('1', 'done-pod', 'Succeeded') },
        // a pod never seen before cannot be restarting
        restartRequested: false,
      }),
      expectKnownTerminated: true,
    },
    {
      name: 'an orphaned running pod we have not seen is marked terminating and advances to finished and then is removed',
      update: { updateType: 'kill', runningPod: runningPod('1', 'orphaned-pod', 'ns') },
      expectBeforeWorker: expectedView({
        fullname: 'orphaned-pod_ns',
        syncedAt: unix(1),
        terminatingAt: unix(1),
        pendingUpdate: {
          updateType: 'kill',
          runningPod: runningPod('1', 'orphaned-pod', 'ns'),
          killPodOptions: { gracePeriodSecondsOverride: 1 },
        },
        gracePeriod: 1,
        deleted: true,
        observedRuntime: true,
        working: true,
      }),
      // a runtime-only pod is forgotten once terminated: nothing outside the worker knows it
      expect: undefined,
      expectKnownTerminated: false,
    },
    {
      name: 'an orphaned running pod with a non-kill update type does nothing',
      update: { updateType: 'create', runningPod: runningPod('1', 'orphaned-pod', 'ns') },
      expect: undefined,
    },
  ];

  for (const tc of cases) {
    it(tc.name, async () => {
      const uid = tc.update.pod?.metadata?.uid ?? tc.update.runningPod!.id;
      const h = createHarness({ timeIncrementing: true });
      const fns: (() => void)[] = [];
      let before: PodSyncStatusView | undefined | 'unchecked' = 'unchecked';
      if (tc.expectBeforeWorker !== undefined) fns.push(() => (before = h.workers.statusOf(uid)));
      if (tc.prepare !== undefined) {
        const fn = await tc.prepare(h);
        if (fn !== undefined) fns.push(fn);
      }
      // the runtime's answer during updatePod, reset before the worker asks the cache
      if (tc.runtimeStatus !== undefined) h.cache.statuses.set(uid, tc.runtimeStatus);
      fns.push(() => h.cache.statuses.delete(uid));

      await updateAndDrain(h, tc.update, ...fns);

      if (tc.expectBeforeWorker !== undefined) expect(before).toEqual(tc.expectBeforeWorker);
      expect(h.workers.isPodKnownTerminated(uid)).toBe(tc.expectKnownTerminated ?? false);
      expect(h.workers.statusOf(uid)).toEqual(tc.expect);
      await h.workers.close();
    });
  }
});

describe('TestUpdatePodForRuntimePod', () => {
  it('ignores a running pod of the wrong sync type, then kills it through syncTerminatingRuntimePod', async () => {
    const h = createHarness();
    h.workers.updatePod({ updateType: 'create', runningPod: runningPod('1', '1', 'test') });
    await h.drain();
    expect(h.syncer.processed.size).toBe(0);

    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('1', '1', 'test') });
    await h.drain();
    expect(h.syncer.processed.size).toBe(1);
    const updates = h.syncer.records('1')!;
    expect(updates).toHaveLength(1);
    expect(updates[0]!.runningPod).toBeDefined();
    expect(updates[0]!.updateType).toBe('kill');
    expect(updates[0]!.name).toBe('1');
    // a runtime pod is forgotten once terminated
    expect(h.workers.snapshot().has('1')).toBe(false);
    await h.workers.close();
  });
});

describe('TestUpdatePodForTerminatedRuntimePod', () => {
  it('a runtime-pod kill for a pod that is terminated (not yet finished) is ignored', async () => {
    // Go seeds a terminated-but-not-finished status; through the surface: run a pod to terminated and
    // hold its worker before the terminated step.
    const h = createHarness();
    const pod = newNamedPod('1', 'test', '1', false);
    h.workers.updatePod({ updateType: 'create', pod });
    await h.drain();
    h.syncer.onTerminating = () => {
      h.hold('1'); // the wake-up after terminating (the terminated step) will wait
    };
    h.workers.updatePod({ updateType: 'kill', pod });
    await until(() => h.wakes.get('1') === 3, 'the terminated wake-up is held');
    const s = h.workers.snapshot().get('1')!;
    expect(s.terminatedAt).toBeDefined();
    expect(s.finished).toBe(false);
    expect(h.workers.isPodKnownTerminated('1')).toBe(true);

    h.syncer.processed.clear();
    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('1', '1', 'test') });
    h.release('1');
    await h.drain();
    const runtimeKills = (h.syncer.records('1') ?? []).filter((r) => r.runningPod !== undefined);
    expect(runtimeKills).toEqual([]);
    // only the held terminated step ran
    expect(h.syncer.records('1')).toEqual([{ name: '1', terminated: true }]);
    await h.workers.close();
  });

  it('a runtime-pod kill for a finished pod does nothing', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'test', '1', false);
    h.workers.updatePod({ updateType: 'kill', pod });
    await h.drain();
    expect(h.workers.snapshot().get('1')!.finished).toBe(true);
    h.syncer.processed.clear();
    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('1', '1', 'test') });
    await h.drain();
    expect(h.syncer.processed.size).toBe(0);
    await h.workers.close();
  });

  it('ignores a runtime-only kill for a pod that is already terminated', async () => {
    const statuses = new Map<string, PodSyncRecord>();
    const now = Date.now();
    const record = new PodSyncRecord('', now);
    record.startedTerminating = true;
    record.terminatedAt = now - SECOND;
    record.terminatingAt = now - 2 * SECOND;
    record.gracePeriod = 1;
    statuses.set('1', record);
    const h = createHarness({ internals: { statuses } });

    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('1', '1', 'test') });
    await h.workers.whenIdle();
    expect(h.syncer.processed.size).toBe(0);
    expect(h.syncer.processed.get('1')).toBeUndefined();
    await h.workers.close();
  });
});

describe('TestUpdatePodDoesNotForgetSyncPodKill', () => {
  it('create, kill, update in a burst always end in kill(30) then terminated', async () => {
    const h = createHarness();
    const numPods = 20;
    for (let i = 0; i < numPods; i++) {
      const pod = newNamedPod(String(i), 'ns', String(i), false);
      h.workers.updatePod({ pod, updateType: 'create' });
      h.workers.updatePod({ pod, updateType: 'kill' });
      h.workers.updatePod({ pod, updateType: 'update' });
    }
    await h.drain();
    expect(h.syncer.processed.size).toBe(numPods);
    for (let i = 0; i < numPods; i++) {
      const uid = String(i);
      const possible = [
        [
          { name: uid, updateType: 'kill', gracePeriod: 30 },
          { name: uid, terminated: true },
        ],
        [
          { name: uid, updateType: 'create' },
          { name: uid, updateType: 'kill', gracePeriod: 30 },
          { name: uid, terminated: true },
        ],
      ];
      const history = h.syncer.records(uid);
      expect(
        possible.some((p) => JSON.stringify(p) === JSON.stringify(history)),
        `pod ${uid}: ${JSON.stringify(history)}`,
      ).toBe(true);
    }
    await h.workers.close();
  });
});

describe('TestUpdatePodParallel', () => {
  it('the last update of every pod is processed, in order', async () => {
    const h = createHarness();
    const numPods = 20;
    for (let i = 0; i < numPods; i++) {
      for (let j = i; j < numPods; j++) {
        h.workers.updatePod({ pod: newNamedPod(String(j), 'ns', String(i), false), updateType: 'create' });
      }
    }
    await h.drain();
    expect(h.syncer.processed.size).toBe(numPods);
    for (let i = 0; i < numPods; i++) {
      const events = h.syncer.records(String(i))!;
      expect(events.length).toBeGreaterThanOrEqual(1);
      expect(events.length).toBeLessThanOrEqual(i + 1);
      expect(events[events.length - 1]!.name).toBe(String(i));
    }
    await h.workers.close();
  });
});

describe('TestTerminalPhaseTransition', () => {
  it('a sync reporting terminal moves the pod to terminating and on to terminated', async () => {
    const h = createHarness();
    const pod = () => newNamedPod('1', 'test1', 'pod1', false);
    h.workers.updatePod({ pod: pod(), updateType: 'update' });
    await h.drain();
    expect(h.workers.snapshot().get('1')!.terminatedAt).toBeUndefined();

    h.workers.updatePod({ pod: pod(), updateType: 'update' });
    await h.drain();
    expect(h.workers.snapshot().get('1')!.terminatedAt).toBeUndefined();

    h.syncer.terminal.add('1');
    h.workers.updatePod({ pod: pod(), updateType: 'update' });
    await h.drain();
    const s = h.workers.snapshot().get('1')!;
    expect(s.terminatingAt).toBeDefined();
    expect(s.terminatedAt).toBeDefined();
    expect(h.workers.isPodTerminationRequested('1')).toBe(true);
    expect(h.workers.isPodKnownTerminated('1')).toBe(true);
    // the natural completion runs the termination steps without another updatePod
    expect(h.syncer.records('1')!.map((r) => (r.terminated ? 'terminated' : r.updateType))).toEqual(['update', 'update', 'update', 'kill', 'terminated']);
    await h.workers.close();
  });
});

describe('TestFakePodWorkers', () => {
  // The kubelet checks that its serial fake (syncPod with the update's pod, mirror pod and the
  // cache's status) sees what the real workers pass: the same holds here, one syncPod per update.
  // cache's status) sees what the real workers pass: the same holds here.
  const tests = [
    { pod: { metadata: {} }, mirrorPod: { metadata: {} } },
    {
      pod: { metadata: { uid: '12345678', name: 'foo', namespace: 'new' } },
      mirrorPod: { metadata: { uid: '12345678', name: 'fooMirror', namespace: 'new' } },
    },
    {
      pod: { metadata: { uid: '98765', name: 'bar', namespace: 'new' } },
      mirrorPod: { metadata: { uid: '98765', name: 'barMirror', namespace: 'new' } },
    },
  ];
  for (const [i, tt] of tests.entries()) {
    it(`case ${i}: syncPod receives the update's pod, mirror pod and the cached status`, async () => {
      const h = createHarness();
      const uid = tt.pod.metadata.uid ?? '';
      const status = { ...emptyStatus(uid), name: 'cached' };
      h.cache.statuses.set(uid, status);
      h.workers.updatePod({ pod: tt.pod, mirrorPod: tt.mirrorPod, updateType: 'update' });
      await h.drain();
      expect(h.syncer.syncPodArgs).toHaveLength(1);
      expect(h.syncer.lastSyncPod?.pod).toBe(tt.pod);
      expect(h.syncer.lastSyncPod?.mirrorPod).toBe(tt.mirrorPod);
      expect(h.syncer.lastSyncPod?.status).toEqual(status);
      await h.workers.close();
    });
  }

  it('the mirror pod of an earlier update is remembered when a later update omits it', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'foo', false);
    const mirror = newNamedPod('1', 'ns', 'fooMirror', false);
    h.workers.updatePod({ pod, mirrorPod: mirror, updateType: 'update' });
    await h.drain();
    h.workers.updatePod({ pod, updateType: 'update' });
    await h.drain();
    expect(h.workers.snapshot().get('1')!.activeUpdate!.mirrorPod).toEqual(mirror);
    await h.workers.close();
  });
});
