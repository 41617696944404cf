/**
 * Conformance: the kubelet's TestUpdatePod table, TestUpdatePodForRuntimePod,
 * TestUpdatePodForTerminatedRuntimePod, TestUpdatePodDoesNotForgetSyncPodKill, TestUpdatePodParallel,
 * TestTerminalPhaseTransition and TestFakePodWorkers, expressed through the engine's public surface.
 * Go's reads of podSyncStatuses[uid] are snapshot().get(uid); times are epoch ms.
 */
import { describe, expect, it } from 'vitest';
import type { PodStatus, UpdatePodOptions } from '../../src/engine/index.js';
import {
  createHarness, expectedStatus, newNamedPod, newPodWithPhase, runningPod, statusFields, tiUpdatePod, unix,
  until, withDeletionTimestamp, withLabel, type Harness,
} from './harness.js';

interface UpdateCase {
  name: string;
  update: UpdatePodOptions;
  runtimeStatus?: PodStatus;
  prepare?: (h: Harness) => Promise<(() => void) | undefined>;
  expect: Record<string, unknown> | undefined;
  expectBeforeWorker?: Record<string, unknown>;
  expectKnownTerminated?: boolean;
}

const emptyRuntimeStatus = (uid: string): PodStatus => ({ id: uid, name: '', namespace: '', containerStatuses: [], sandboxStatuses: [] });

const cases: UpdateCase[] = [
  {
    name: 'a new pod is recorded and started',
    update: { updateType: 'create', pod: newNamedPod('1', 'ns', 'running-pod', false) },
    expect: expectedStatus({
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
      await tiUpdatePod(h, { updateType: 'create', pod: newNamedPod('1', 'ns', 'running-pod', false) });
      h.hold('1');
      await tiUpdatePod(h, { updateType: 'kill', pod: newNamedPod('1', 'ns', 'running-pod', false) });
      return () => h.release('1');
    },
    expect: expectedStatus({
      fullname: 'running-pod_ns',
      syncedAt: unix(1),
      startedAt: unix(3),
      terminatingAt: unix(3),
      terminatedAt: unix(6),
      gracePeriod: 30,
      startedTerminating: true,
      restartRequested: true,
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
    expect: expectedStatus({
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
      await tiUpdatePod(h, { updateType: 'create', pod: newNamedPod('1', 'ns', 'running-pod', false) });
      return undefined;
    },
    expect: expectedStatus({
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
      await tiUpdatePod(h, { updateType: 'create', pod: newNamedPod('1', 'ns', 'running-pod', false) });
      return undefined;
    },
    expect: expectedStatus({
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
    expect: expectedStatus({
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
    runtimeStatus: emptyRuntimeStatus('1'),
    expectBeforeWorker: expectedStatus({
      fullname: 'done-pod_ns',
      syncedAt: unix(1),
      terminatingAt: unix(1),
      terminatedAt: unix(1),
      pendingUpdate: { updateType: 'create', pod: newPodWithPhase('1', 'done-pod', 'Succeeded') },
      finished: false,
      startedTerminating: true,
      working: true,
    }),
    expect: expectedStatus({
      fullname: 'done-pod_ns',
      syncedAt: unix(1),
      terminatingAt: unix(1),
      terminatedAt: unix(1),
      startedAt: unix(3),
      startedTerminating: true,
      finished: true,
      activeUpdate: { updateType: 'sync', pod: newPodWithPhase('1', 'done-pod', 'Succeeded') },
      restartRequested: false,
    }),
    expectKnownTerminated: true,
  },
  {
    name: 'an orphaned running pod we have not seen is marked terminating and advances to finished and then is removed',
    update: { updateType: 'kill', runningPod: runningPod('1', 'orphaned-pod', 'ns') },
    expectBeforeWorker: expectedStatus({
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
    expect: undefined,
    expectKnownTerminated: false,
  },
  {
    name: 'an orphaned running pod with a non-kill update type does nothing',
    update: { updateType: 'create', runningPod: runningPod('1', 'orphaned-pod', 'ns') },
    expect: undefined,
  },
];

describe('TestUpdatePod', () => {
  for (const tc of cases) {
    it(tc.name, async () => {
      const uid = tc.update.pod?.metadata?.uid ?? tc.update.runningPod?.id;
      expect(uid).toBeDefined();
      const h = createHarness({ timeIncrementing: true });
      const fns: (() => void)[] = [];
      let before: Record<string, unknown> | undefined | 'unchecked' = 'unchecked';
      if (tc.expectBeforeWorker) fns.push(() => (before = statusFields(h.workers, uid!)));
      if (tc.prepare) {
        const fn = await tc.prepare(h);
        if (fn) fns.push(fn);
      }
      // the runtime's answer is visible to updatePod, then reset before the worker reads the cache
      h.cache.runtimeStatus = tc.runtimeStatus;
      fns.push(() => (h.cache.runtimeStatus = emptyRuntimeStatus(uid!)));

      await tiUpdatePod(h, tc.update, ...fns);

      if (tc.expectBeforeWorker) expect(before).toEqual(tc.expectBeforeWorker);
      expect(h.workers.isPodKnownTerminated(uid!)).toBe(tc.expectKnownTerminated ?? false);
      expect(statusFields(h.workers, uid!)).toEqual(tc.expect);
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
        [{ name: uid, updateType: 'kill', gracePeriod: 30 }, { name: uid, terminated: true }],
        [{ name: uid, updateType: 'create' }, { name: uid, updateType: 'kill', gracePeriod: 30 }, { name: uid, terminated: true }],
      ];
      const history = h.syncer.records(uid);
      expect(possible.some((p) => JSON.stringify(p) === JSON.stringify(history)), `pod ${uid}: ${JSON.stringify(history)}`).toBe(true);
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
    expect(h.syncer.records('1')!.map((r) => r.terminated ? 'terminated' : r.updateType)).toEqual(
      ['update', 'update', 'update', 'kill', 'terminated']);
    await h.workers.close();
  });
});

describe('TestFakePodWorkers (what the real worker passes to syncPod)', () => {
  it('syncPod receives the pod, the mirror pod and the status from the cache', async () => {
    const h = createHarness();
    const cases = [
      { pod: newNamedPod('12345678', 'new', 'foo', false), mirror: newNamedPod('12345678', 'new', 'fooMirror', false) },
      { pod: newNamedPod('98765', 'new', 'bar', false), mirror: newNamedPod('98765', 'new', 'barMirror', false) },
    ];
    for (const c of cases) {
      h.syncer.syncPodArgs = [];
      h.workers.updatePod({ pod: c.pod, mirrorPod: c.mirror, updateType: 'update' });
      await h.drain();
      expect(h.syncer.syncPodArgs).toHaveLength(1);
      expect(h.syncer.syncPodArgs[0]!.mirrorPod).toEqual(c.mirror);
      expect(h.syncer.syncPodArgs[0]!.podStatus).toEqual(h.cache.statusFor(c.pod.metadata!.uid!));
    }
    await h.workers.close();
  });

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
