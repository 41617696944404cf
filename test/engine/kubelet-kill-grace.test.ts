/**
 * The kubelet's TestKillPodNowFunc and Test_calculateEffectiveGracePeriod (every table case), plus
 * killPodNow's timeout (max(10 s, 1.5 × grace), Warning event ExceededGracePeriod) and grace rules.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { calculateEffectiveGracePeriod, killPodNow, KillPodTimeoutError } from '../../src/engine/index.js';
import type { EventRecorder, V1Pod, V1PodStatus } from '../../src/engine/types.js';
import { blockUntilAborted, createHarness, newNamedPod } from './helpers.js';

class FakeRecorder implements EventRecorder {
  events: { pod: V1Pod; type: string; reason: string; message: string }[] = [];
  event(pod: V1Pod, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.events.push({ pod, type, reason, message });
  }
}

describe('TestKillPodNowFunc', () => {
  it('resolves once the pod is terminated, after exactly a kill and a terminated step', async () => {
    const recorder = new FakeRecorder();
    const h = createHarness();
    const kill = killPodNow(h.workers, recorder);
    const pod = newNamedPod('test', 'ns', 'test', false);
    const statusFn = (status: V1PodStatus): void => {
      status.phase = 'Failed';
      status.reason = 'reason';
      status.message = 'message';
    };
    await kill(pod, false, 0, statusFn);
    await h.workers.whenIdle();
    expect(h.syncer.processed.size).toBe(1);
    const history = h.syncer.processed.get('test')!;
    expect(history).toHaveLength(2);
    expect(history[0]!.updateType).toBe('kill');
    // an override of 0 still yields the minimum grace of 1 second
    expect(history[0]!.gracePeriod).toBe(1);
    expect(history[1]!.terminated).toBe(true);
    // the status function reached syncTerminatingPod
    expect(h.syncer.statusFns).toEqual([statusFn]);
    expect(recorder.events).toEqual([]);
  });

  it('resolves at once for a pod that is already terminated', async () => {
    const h = createHarness();
    const pod = newNamedPod('p', 'ns', 'p', false);
    await killPodNow(h.workers)(pod, false);
    await h.workers.whenIdle();
    expect(h.workers.statusOf('p')!.finished).toBe(true);
    const calls = h.syncer.processed.get('p')!.length;
    await killPodNow(h.workers)(pod, false);
    expect(h.syncer.processed.get('p')!.length).toBe(calls);
  });
});

describe('killPodNow timeout', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const cases = [
    { desc: 'spec grace 30 → 45 s', override: undefined, specGrace: 30, timeoutMs: 45_000 },
    { desc: 'override 4 → the 10 s minimum', override: 4, specGrace: 30, timeoutMs: 10_000 },
    { desc: 'override 20 → 30 s', override: 20, specGrace: 30, timeoutMs: 30_000 },
    { desc: 'no grace at all → 10 s', override: undefined, specGrace: undefined, timeoutMs: 10_000 },
  ];
  for (const tc of cases) {
    it(`rejects after max(10 s, 1.5 × grace): ${tc.desc}, recording ExceededGracePeriod`, async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const recorder = new FakeRecorder();
      const h = createHarness();
      h.syncer.onSyncTerminatingPod = (signal) => blockUntilAborted(signal);
      const pod = newNamedPod('slow', 'ns', 'slow', false);
      pod.spec!.terminationGracePeriodSeconds = tc.specGrace;
      let outcome: unknown = 'pending';
      killPodNow(h.workers, recorder)(pod, false, tc.override).then(
        () => (outcome = 'resolved'),
        (e: unknown) => (outcome = e),
      );
      await vi.advanceTimersByTimeAsync(tc.timeoutMs - 1);
      expect(outcome).toBe('pending');
      expect(h.syncer.processed.get('slow')?.[0]?.updateType).toBe('kill');
      await vi.advanceTimersByTimeAsync(1);
      expect(outcome).toBeInstanceOf(KillPodTimeoutError);
      expect(recorder.events).toEqual([
        { pod, type: 'Warning', reason: 'ExceededGracePeriod', message: 'Container runtime did not kill the pod within specified grace period.' },
      ]);
      await h.workers.close();
    });
  }

  it('clears its timer once the kill completes (no late event)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const recorder = new FakeRecorder();
    const h = createHarness();
    await killPodNow(h.workers, recorder)(newNamedPod('quick', 'ns', 'quick', false), false);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(recorder.events).toEqual([]);
  });

  it('rejects with the reason when the caller aborts, while the kill goes on', async () => {
    const h = createHarness();
    let finish!: () => void;
    let started!: () => void;
    const terminating = new Promise<void>((r) => (started = r));
    h.syncer.onSyncTerminatingPod = () =>
      new Promise<void>((r) => {
        finish = r;
        started();
      });
    const controller = new AbortController();
    const pending = killPodNow(h.workers)(newNamedPod('a', 'ns', 'a', false), false, 5, undefined, controller.signal);
    await terminating;
    controller.abort(new Error('user gave up'));
    await expect(pending).rejects.toThrow('user gave up');
    finish();
    await h.workers.whenIdle();
    expect(h.workers.statusOf('a')!.finished).toBe(true);
  });
});

describe('Test_calculateEffectiveGracePeriod', () => {
  const cases = [
    { desc: 'use termination grace period from the spec when no overrides', spec: 30, deletion: undefined, override: undefined, expected: 30 },
    { desc: 'use pod DeletionGracePeriodSeconds when set', spec: 30, deletion: 5, override: undefined, expected: 5 },
    { desc: 'use grace period override when set', spec: 30, deletion: 5, override: 2, expected: 2 },
    { desc: 'use 1 when pod DeletionGracePeriodSeconds is zero', spec: 30, deletion: 0, override: undefined, expected: 1 },
    { desc: 'use 1 when grace period override is zero', spec: 30, deletion: 5, override: 0, expected: 1 },
  ];
  for (const tc of cases) {
    it(tc.desc, () => {
      const pod = newNamedPod('1', 'ns', 'running-pod', false);
      pod.spec!.terminationGracePeriodSeconds = tc.spec;
      pod.metadata!.deletionGracePeriodSeconds = tc.deletion;
      const { gracePeriod } = calculateEffectiveGracePeriod({ gracePeriod: 0 }, pod, { gracePeriodSecondsOverride: tc.override });
      expect(gracePeriod).toBe(tc.expected);
    });
  }

  it('never grows once decided, and reports only real shortening', () => {
    const pod = newNamedPod('1', 'ns', 'p', false);
    expect(calculateEffectiveGracePeriod({ gracePeriod: 10 }, pod, { gracePeriodSecondsOverride: 20 })).toEqual({ gracePeriod: 10, shortened: false });
    expect(calculateEffectiveGracePeriod({ gracePeriod: 10 }, pod)).toEqual({ gracePeriod: 10, shortened: false });
    expect(calculateEffectiveGracePeriod({ gracePeriod: 10 }, pod, { gracePeriodSecondsOverride: 3 })).toEqual({ gracePeriod: 3, shortened: true });
    pod.metadata!.deletionGracePeriodSeconds = 60;
    expect(calculateEffectiveGracePeriod({ gracePeriod: 10 }, pod).gracePeriod).toBe(10);
    pod.metadata!.deletionGracePeriodSeconds = 4;
    expect(calculateEffectiveGracePeriod({ gracePeriod: 10 }, pod)).toEqual({ gracePeriod: 4, shortened: true });
  });

  it('uses 1 when neither spec nor overrides say anything', () => {
    expect(calculateEffectiveGracePeriod({ gracePeriod: 0 }, { metadata: {} }).gracePeriod).toBe(1);
  });
});
