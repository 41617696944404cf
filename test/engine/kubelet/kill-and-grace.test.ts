/**
 * The kubelet's TestKillPodNowFunc and Test_calculateEffectiveGracePeriod, plus the
 * termination rules of UpdatePod they rely on (CompletedCh → onComplete, PodStatusFunc, grace periods
 * only shrink, cancellation of a running sync when termination begins or the grace period shrinks,
 * startedTerminating only once the worker observes the termination). Fake timers only for
 * killPodNow's timeout.
 */
import type { V1PodStatus } from '@kubernetes/client-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { calculateEffectiveGracePeriod, killPodNow, KillPodTimeoutError } from '../../../src/engine/index.js';
import { KUBELET_EFFECTIVE_GRACE_CASES } from '../grace-table.js';
import { FakeRecorder, createHarness, deferred, newNamedPod, until, untilAborted } from '../harness.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('Test_calculateEffectiveGracePeriod', () => {
  // the kubelet's table, ported once (../grace-table.ts); the planners are checked against it too
  for (const tc of KUBELET_EFFECTIVE_GRACE_CASES) {
    it(tc.desc, () => {
      const pod = newNamedPod('1', 'ns', 'running-pod', false);
      pod.spec!.terminationGracePeriodSeconds = tc.spec;
      if (tc.deletion !== undefined) pod.metadata!.deletionGracePeriodSeconds = tc.deletion;
      const opts = tc.override === undefined ? {} : { gracePeriodSecondsOverride: tc.override };
      expect(calculateEffectiveGracePeriod({ gracePeriod: 0 }, pod, opts).gracePeriod).toBe(tc.expected);
    });
  }

  it('a pod with no spec grace period and no overrides gets 1', () => {
    const pod = newNamedPod('1', 'ns', 'p', false);
    delete pod.spec!.terminationGracePeriodSeconds;
    expect(calculateEffectiveGracePeriod({ gracePeriod: 0 }, pod)).toEqual({ gracePeriod: 1, shortened: false });
    // nor any spec at all
    expect(calculateEffectiveGracePeriod({ gracePeriod: 0 }, { metadata: {} }).gracePeriod).toBe(1);
  });

  it('the grace period only shrinks, and reports when it was shortened', () => {
    const pod = newNamedPod('1', 'ns', 'p', false);
    expect(calculateEffectiveGracePeriod({ gracePeriod: 30 }, pod, { gracePeriodSecondsOverride: 10 })).toEqual({ gracePeriod: 10, shortened: true });
    expect(calculateEffectiveGracePeriod({ gracePeriod: 10 }, pod, { gracePeriodSecondsOverride: 20 })).toEqual({ gracePeriod: 10, shortened: false });
    expect(calculateEffectiveGracePeriod({ gracePeriod: 10 }, pod)).toEqual({ gracePeriod: 10, shortened: false });
    expect(calculateEffectiveGracePeriod({ gracePeriod: 10 }, pod, { gracePeriodSecondsOverride: 3 })).toEqual({ gracePeriod: 3, shortened: true });
    pod.metadata!.deletionGracePeriodSeconds = 60;
    expect(calculateEffectiveGracePeriod({ gracePeriod: 10 }, pod)).toEqual({ gracePeriod: 10, shortened: false });
    pod.metadata!.deletionGracePeriodSeconds = 3;
    expect(calculateEffectiveGracePeriod({ gracePeriod: 10 }, pod)).toEqual({ gracePeriod: 3, shortened: true });
    // a first value is never "shortened"
    expect(calculateEffectiveGracePeriod({ gracePeriod: 0 }, pod, { gracePeriodSecondsOverride: 2 })).toEqual({ gracePeriod: 2, shortened: false });
  });
});

describe('TestKillPodNowFunc', () => {
  it('kills a pod and resolves once it is terminated; the status function reaches syncTerminatingPod', async () => {
    const h = createHarness();
    const recorder = new FakeRecorder();
    const kill = killPodNow(h.workers, recorder);
    const pod = newNamedPod('test', 'ns', 'test', false);
    const statusFn = (status: V1PodStatus): void => {
      status.phase = 'Failed';
      status.reason = 'reason';
      status.message = 'message';
    };
    await kill(pod, false, 0, statusFn);
    await h.drain();
    expect(h.syncer.processed.size).toBe(1);
    const records = h.syncer.records('test')!;
    expect(records).toHaveLength(2);
    expect(records[0]!.updateType).toBe('kill');
    expect(records[0]!.gracePeriod).toBe(1); // override 0 → at least 1
    expect(records[1]!.terminated).toBe(true);
    expect(h.syncer.statusFns).toEqual([statusFn]);
    const s: V1PodStatus = {};
    statusFn(s);
    expect(s).toEqual({ phase: 'Failed', reason: 'reason', message: 'message' });
    expect(h.workers.snapshot().get('test')!.evicted).toBe(false);
    expect(recorder.events).toEqual([]);
    await h.workers.close();
  });

  it('an eviction through killPodNow marks the pod evicted', async () => {
    const h = createHarness();
    const kill = killPodNow(h.workers, new FakeRecorder());
    await kill(newNamedPod('test', 'ns', 'test', false), true);
    await h.drain();
    expect(h.workers.snapshot().get('test')!.evicted).toBe(true);
    expect(h.workers.shouldPodContentBeRemoved('test')).toBe(true);
    expect(h.syncer.records('test')![0]!.gracePeriod).toBe(30);
    await h.workers.close();
  });

  const timeouts: { desc: string; override?: number; specGrace?: number; timeoutMs: number }[] = [
    { desc: 'spec grace 30 s → 45 s', specGrace: 30, timeoutMs: 45_000 },
    { desc: 'override 20 s → 30 s', specGrace: 30, override: 20, timeoutMs: 30_000 },
    { desc: 'override 4 s → the 10 s minimum', specGrace: 30, override: 4, timeoutMs: 10_000 },
    { desc: 'override 2 s → the 10 s minimum', specGrace: 30, override: 2, timeoutMs: 10_000 },
    { desc: 'no grace at all → 10 s', timeoutMs: 10_000 },
  ];
  for (const tc of timeouts) {
    it(`rejects after max(10 s, 1.5 × grace) and records ExceededGracePeriod (${tc.desc})`, async () => {
      vi.useFakeTimers();
      const h = createHarness();
      h.syncer.onTerminating = (_uid, signal) => untilAborted(signal); // the runtime never finishes
      const recorder = new FakeRecorder();
      const kill = killPodNow(h.workers, recorder);
      const pod = newNamedPod('slow', 'ns', 'slow', false);
      pod.spec!.terminationGracePeriodSeconds = tc.specGrace;
      let outcome: 'pending' | 'resolved' | Error = 'pending';
      kill(pod, false, tc.override).then(
        () => (outcome = 'resolved'),
        (e: Error) => (outcome = e),
      );
      await vi.advanceTimersByTimeAsync(tc.timeoutMs - 1);
      expect(outcome).toBe('pending');
      expect(h.syncer.records('slow')?.[0]?.updateType).toBe('kill');
      await vi.advanceTimersByTimeAsync(1);
      expect(outcome).toBeInstanceOf(KillPodTimeoutError);
      expect(recorder.events).toEqual([{ pod, type: 'Warning', reason: 'ExceededGracePeriod', message: 'Container runtime did not kill the pod within specified grace period.' }]);
      expect(recorder.events[0]!.pod).toBe(pod);
      await h.workers.close();
    });
  }

  it('resolves at once for a pod that is already terminated (finished)', async () => {
    const h = createHarness();
    const pod = newNamedPod('done', 'ns', 'done', false);
    h.workers.updatePod({ pod, updateType: 'kill' });
    await h.drain();
    expect(h.workers.snapshot().get('done')!.finished).toBe(true);
    const calls = h.syncer.records('done')!.length;
    vi.useFakeTimers();
    const recorder = new FakeRecorder();
    let outcome: 'pending' | 'resolved' | Error = 'pending';
    killPodNow(h.workers, recorder)(pod, false).then(
      () => (outcome = 'resolved'),
      (e: Error) => (outcome = e),
    );
    await vi.advanceTimersByTimeAsync(0);
    expect(outcome).toBe('resolved');
    expect(recorder.events).toEqual([]);
    // nothing more reached the syncer
    expect(h.syncer.records('done')!.length).toBe(calls);
    vi.useRealTimers();
    await h.workers.close();
  });
});

describe('onComplete (the Go CompletedCh)', () => {
  it('every kill waiting on a terminating pod is completed exactly once, when syncTerminatingPod succeeds', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'update' });
    await h.drain();
    const calls: string[] = [];
    let terminatingDone = false;
    h.syncer.onTerminating = () => {
      expect(calls).toEqual([]); // not before termination completes
    };
    h.syncer.onTerminated = () => {
      terminatingDone = true;
    };
    h.hold('1');
    h.workers.updatePod({ pod, updateType: 'kill', killPodOptions: { onComplete: () => calls.push('a') } });
    h.workers.updatePod({ pod, updateType: 'kill', killPodOptions: { onComplete: () => calls.push('b') } });
    expect(calls).toEqual([]);
    h.release('1');
    await h.drain();
    expect(terminatingDone).toBe(true);
    expect(calls.sort()).toEqual(['a', 'b']);
    await h.workers.close();
  });

  it('a kill for a terminated pod completes at once (synchronously), and only once', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'kill' });
    await h.drain();
    let n = 0;
    h.workers.updatePod({ pod, updateType: 'kill', killPodOptions: { onComplete: () => n++ } });
    expect(n).toBe(1);
    await h.drain();
    expect(n).toBe(1);
    await h.workers.close();
  });

  it('a kill for a terminated-but-not-finished pod completes at once and carries no kill options', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'update' });
    await h.drain();
    h.syncer.onTerminating = () => h.hold('1');
    h.workers.updatePod({ pod, updateType: 'kill' });
    await until(() => h.wakes.get('1') === 3, 'the terminated step is held');
    expect(h.workers.snapshot().get('1')!.terminatedAt).toBeDefined();
    let n = 0;
    h.workers.updatePod({ pod, updateType: 'kill', killPodOptions: { onComplete: () => n++, gracePeriodSecondsOverride: 1 } });
    expect(n).toBe(1);
    expect(h.workers.snapshot().get('1')!.pendingUpdate!.killPodOptions).toBeUndefined();
    h.release('1');
    await h.drain();
    expect(n).toBe(1);
    await h.workers.close();
  });

  it('kill options on an update for a pod that is not terminating are completed at once and dropped', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'create' });
    await h.drain();
    let n = 0;
    h.hold('1');
    h.workers.updatePod({ pod, updateType: 'update', killPodOptions: { onComplete: () => n++, evict: true } });
    expect(n).toBe(1);
    const s = h.workers.snapshot().get('1')!;
    expect(s.pendingUpdate!.killPodOptions).toBeUndefined();
    expect(s.terminatingAt).toBeUndefined();
    expect(s.evicted).toBe(false);
    h.release('1');
    await h.drain();
    expect(n).toBe(1);
    await h.workers.close();
  });
});

describe('termination rules of UpdatePod', () => {
  it('termination cancels a running syncPod, then syncTerminatingPod runs', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    let aborted = false;
    h.syncer.onSyncPod = async (_uid, signal) => {
      await untilAborted(signal).catch((e) => {
        aborted = true;
        throw e;
      });
    };
    h.workers.updatePod({ pod, updateType: 'create' });
    await until(() => h.syncer.records('1')?.length === 1, 'syncPod started');
    h.workers.updatePod({ pod, updateType: 'kill' });
    await h.drain();
    expect(aborted).toBe(true);
    expect(h.syncer.records('1')!.map((r) => (r.terminated ? 'terminated' : r.updateType))).toEqual(['create', 'kill', 'terminated']);
    expect(h.recorder.events).toEqual([]); // a cancellation is not a failure worth an event
    expect(h.workers.snapshot().get('1')!.finished).toBe(true);
    await h.workers.close();
  });

  it('a shorter grace period cancels a running syncTerminatingPod and reruns it with the shorter value; a longer one changes nothing', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'create' });
    await h.drain();
    let blocking = true;
    const aborts: number[] = [];
    h.syncer.onTerminating = async (_uid, signal) => {
      if (!blocking) return;
      await untilAborted(signal).catch((e) => {
        aborts.push(h.syncer.records('1')!.length);
        throw e;
      });
    };
    h.workers.updatePod({ pod, updateType: 'kill', killPodOptions: { gracePeriodSecondsOverride: 20 } });
    await until(() => h.syncer.records('1')!.length === 2, 'terminating with 20 s');
    expect(h.workers.snapshot().get('1')!.gracePeriod).toBe(20);

    // longer: no effect on the running sync, grace stays 20
    h.workers.updatePod({ pod, updateType: 'kill', killPodOptions: { gracePeriodSecondsOverride: 25 } });
    expect(h.workers.snapshot().get('1')!.gracePeriod).toBe(20);
    expect(aborts).toEqual([]);

    // shorter: the running sync is cancelled and rerun with 5
    blocking = false;
    h.workers.updatePod({ pod, updateType: 'kill', killPodOptions: { gracePeriodSecondsOverride: 5 } });
    expect(h.workers.snapshot().get('1')!.gracePeriod).toBe(5);
    await h.drain();
    expect(aborts).toEqual([2]);
    const kills = h.syncer.records('1')!.filter((r) => r.updateType === 'kill');
    expect(kills.map((r) => r.gracePeriod)).toEqual([20, 5]);
    expect(h.workers.snapshot().get('1')!.finished).toBe(true);
    await h.workers.close();
  });

  it('a deletion grace period on the pod shortens the grace period too', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'create' });
    await h.drain();
    h.hold('1');
    h.workers.updatePod({ pod, updateType: 'kill' });
    expect(h.workers.snapshot().get('1')!.gracePeriod).toBe(30);
    const deleted = newNamedPod('1', 'ns', 'p', false);
    deleted.metadata!.deletionTimestamp = new Date(h.clock.now());
    deleted.metadata!.deletionGracePeriodSeconds = 7;
    h.workers.updatePod({ pod: deleted, updateType: 'update' });
    const s = h.workers.snapshot().get('1')!;
    expect(s.gracePeriod).toBe(7);
    expect(s.pendingUpdate!.killPodOptions).toEqual({ gracePeriodSecondsOverride: 7 });
    // deleted is only set when the deletion is what started termination
    expect(s.deleted).toBe(false);
    h.release('1');
    await h.drain();
    expect(h.syncer.records('1')!.find((r) => r.updateType === 'kill')!.gracePeriod).toBe(7);
    await h.workers.close();
  });

  it('containers are only reported terminating once the worker has observed the termination', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'create' });
    await h.drain();
    h.hold('1');
    h.workers.updatePod({ pod, updateType: 'kill' });
    expect(h.workers.isPodTerminationRequested('1')).toBe(true);
    expect(h.workers.shouldPodContainersBeTerminating('1')).toBe(false);
    expect(h.workers.couldHaveRunningContainers('1')).toBe(true);
    let during: boolean[] = [];
    h.syncer.onTerminating = () => {
      during = [h.workers.shouldPodContainersBeTerminating('1'), h.workers.shouldPodRuntimeBeRemoved('1'), h.workers.couldHaveRunningContainers('1')];
    };
    h.release('1');
    await h.drain();
    expect(during).toEqual([true, false, true]);
    expect(h.workers.shouldPodRuntimeBeRemoved('1')).toBe(true);
    expect(h.workers.couldHaveRunningContainers('1')).toBe(false);
    expect(h.workers.shouldPodBeFinished('1')).toBe(true);
    // killed by the kubelet, not deleted nor evicted: content stays
    expect(h.workers.shouldPodContentBeRemoved('1')).toBe(false);
    await h.workers.close();
  });

  it('the latest status function is the one handed to syncTerminatingPod', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'create' });
    await h.drain();
    h.hold('1');
    h.workers.updatePod({ pod, updateType: 'kill', killPodOptions: { podStatusFunc: (s) => (s.reason = 'first') } });
    h.workers.updatePod({ pod, updateType: 'kill', killPodOptions: { podStatusFunc: (s) => (s.reason = 'second') } });
    h.release('1');
    await h.drain();
    const s: V1PodStatus = {};
    h.syncer.statusFns[0]!(s);
    expect(s.reason).toBe('second');
    await h.workers.close();
  });

  it('a finished pod ignores every further update until forgotten', async () => {
    const h = createHarness();
    const pod = newNamedPod('1', 'ns', 'p', false);
    h.workers.updatePod({ pod, updateType: 'kill' });
    await h.drain();
    h.syncer.processed.clear();
    h.workers.updatePod({ pod, updateType: 'update' });
    h.workers.updatePod({ pod, updateType: 'sync' });
    expect(h.workers.snapshot().get('1')!.working).toBe(false);
    expect(h.workers.snapshot().get('1')!.pendingUpdate).toBeUndefined();
    await h.drain();
    expect(h.syncer.processed.size).toBe(0);
    await h.workers.close();
  });
});

describe('onComplete on the less common termination paths (ENGINE-API: called exactly once when termination completes)', () => {
  it('a runtime-only pod kill completes when syncTerminatingRuntimePod succeeds', async () => {
    const h = createHarness();
    let n = 0;
    h.workers.updatePod({ updateType: 'kill', runningPod: { id: 'r', name: 'r', namespace: 'ns', containers: [], sandboxes: [] }, killPodOptions: { onComplete: () => n++ } });
    expect(n).toBe(0);
    await h.drain();
    expect(h.syncer.records('r')).toHaveLength(1);
    expect(n).toBe(1);
    await h.workers.close();
  });

  it('a kill for a static pod that never started completes when the worker gives it up', async () => {
    const h = createHarness();
    h.workers.updatePod({ pod: newNamedPod('a', 'ns', 'st', true), updateType: 'update' });
    h.workers.updatePod({ pod: newNamedPod('b', 'ns', 'st', true), updateType: 'update' });
    await h.drain();
    let n = 0;
    h.workers.updatePod({ pod: newNamedPod('b', 'ns', 'st', true), updateType: 'kill', killPodOptions: { onComplete: () => n++ } });
    await h.drain();
    expect(h.workers.snapshot().get('b')!.terminatedAt).toBeDefined();
    expect(n).toBe(1);
    await h.workers.close();
  });

  it('killPodNow without a recorder still rejects on timeout', async () => {
    vi.useFakeTimers();
    const h = createHarness();
    h.syncer.onTerminating = (_uid, signal) => untilAborted(signal);
    let outcome: 'pending' | 'resolved' | Error = 'pending';
    killPodNow(h.workers)(newNamedPod('slow', 'ns', 'slow', false), false, 1).then(
      () => (outcome = 'resolved'),
      (e: Error) => (outcome = e),
    );
    await vi.advanceTimersByTimeAsync(10_000);
    expect(outcome).toBeInstanceOf(Error);
    await h.workers.close();
  });
});

describe('killPodNow leaves no timer behind', () => {
  it('once the kill completes its timeout timer is cleared (a CLI process can exit at once; no late event)', async () => {
    vi.useFakeTimers();
    const h = createHarness();
    const recorder = new FakeRecorder();
    let outcome: 'pending' | 'resolved' | Error = 'pending';
    killPodNow(h.workers, recorder)(newNamedPod('1', 'ns', 'p', false), false).then(
      () => (outcome = 'resolved'),
      (e: Error) => (outcome = e),
    );
    for (let i = 0; i < 100 && outcome === 'pending'; i++) await vi.advanceTimersByTimeAsync(0);
    expect(outcome).toBe('resolved');
    for (let i = 0; i < 100 && !h.workers.snapshot().get('1')!.finished; i++) await vi.advanceTimersByTimeAsync(0);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(recorder.events).toEqual([]);
    await h.workers.close();
  });
});

describe('killPodNow and its caller', () => {
  it('rejects with the reason when the caller aborts, while the kill goes on', async () => {
    const h = createHarness();
    const finish = deferred();
    const started = deferred();
    h.syncer.onTerminating = () => {
      started.resolve();
      return finish.promise;
    };
    const controller = new AbortController();
    const pending = killPodNow(h.workers)(newNamedPod('a', 'ns', 'a', false), false, 5, undefined, controller.signal);
    await started.promise;
    controller.abort(new Error('user gave up'));
    await expect(pending).rejects.toThrow('user gave up');
    finish.resolve();
    await h.drain();
    expect(h.workers.statusOf('a')!.finished).toBe(true);
    await h.workers.close();
  });
});

describe('TestKillPodNowFunc with timers faked for the whole test', () => {
  it('workers make progress and the kill resolves without advancing fake time', async () => {
    vi.useFakeTimers();
    const h = createHarness();
    const pod = newNamedPod('test', 'ns', 'test', false);
    await killPodNow(h.workers, new FakeRecorder())(pod, false, 0);
    await h.workers.whenIdle();
    expect(h.syncer.records('test')!.map((r) => (r.terminated ? 'terminated' : r.updateType))).toEqual(['kill', 'terminated']);
    expect(vi.getTimerCount()).toBe(0);
    await h.workers.close();
  });
});
