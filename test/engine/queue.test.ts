/**
 * The default work queue (one shared timer, latest enqueue wins) and the engine's use of it:
 * a pod is re-synced after the resync interval, retried after back-off, and a waiting static pod
 * tries again — all without per-pod timers.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPodWorkers } from '../../src/engine/index.js';
import { TimerWorkQueue } from '../../src/engine/queue.js';
import { FakeCache, RecordingSyncer, newNamedPod } from './harness.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('TimerWorkQueue', () => {
  it('fires each UID once at its latest due time, earliest first, with a single timer', async () => {
    vi.useFakeTimers();
    const fired: string[] = [];
    const queue = new TimerWorkQueue((uid) => fired.push(uid));
    queue.enqueue('a', 300);
    queue.enqueue('b', 100);
    queue.enqueue('c', 200);
    queue.enqueue('a', 50); // replaces a's due time
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(49);
    expect(fired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(250);
    expect(fired).toEqual(['a', 'b', 'c']);
    expect(queue.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('lets the due callback enqueue again, and stops after close', async () => {
    vi.useFakeTimers();
    const fired: string[] = [];
    const queue: TimerWorkQueue = new TimerWorkQueue((uid) => {
      fired.push(uid);
      if (fired.length < 3) queue.enqueue(uid, 10);
    });
    queue.enqueue('x', 0);
    await vi.advanceTimersByTimeAsync(100);
    expect(fired).toEqual(['x', 'x', 'x']);
    queue.enqueue('y', 10);
    queue.close();
    queue.enqueue('z', 10);
    await vi.advanceTimersByTimeAsync(100);
    expect(fired).toEqual(['x', 'x', 'x']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('fires once for a UID re-enqueued many times (the latest due time wins)', async () => {
    vi.useFakeTimers();
    const fired: string[] = [];
    const queue = new TimerWorkQueue((uid) => fired.push(uid));
    for (let i = 0; i < 10_000; i++) queue.enqueue('same', 1_000 + i);
    expect(queue.size).toBe(1);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(fired).toEqual(['same']);
  });
});

describe('the engine with its default queue', () => {
  it('re-syncs a running pod after the resync interval (with up to 50 % jitter)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const syncer = new RecordingSyncer();
    const workers = createPodWorkers({ syncer, cache: new FakeCache(), resyncIntervalMs: 60_000 });
    workers.updatePod({ updateType: 'create', pod: newNamedPod('r', 'ns', 'r', false) });
    await workers.whenIdle();
    await vi.advanceTimersByTimeAsync(59_999);
    expect(syncer.processed.get('r')!.map((r) => r.updateType)).toEqual(['create']);
    await vi.advanceTimersByTimeAsync(30_001);
    await workers.whenIdle();
    expect(syncer.processed.get('r')!.map((r) => r.updateType)).toEqual(['create', 'sync']);
    await workers.close();
  });

  it('retries a failing terminating step after the back-off until it succeeds', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const syncer = new RecordingSyncer();
    let failures = 2;
    syncer.onTerminating = () => {
      if (failures-- > 0) throw new Error('runtime unavailable');
    };
    const workers = createPodWorkers({ syncer, cache: new FakeCache(), backOffPeriodMs: 1_000 });
    workers.updatePod({ updateType: 'kill', pod: newNamedPod('k', 'ns', 'k', false) });
    await workers.whenIdle();
    expect(workers.isPodKnownTerminated('k')).toBe(false);
    await vi.advanceTimersByTimeAsync(1_500);
    await workers.whenIdle();
    await vi.advanceTimersByTimeAsync(1_500);
    await workers.whenIdle();
    expect(workers.snapshot().get('k')!.finished).toBe(true);
    expect(syncer.processed.get('k')!.map((r) => (r.terminated ? 'terminated' : r.gracePeriod))).toEqual([30, 30, 30, 'terminated']);
    await workers.close();
  });

  it('lets a waiting static pod try again after the back-off and start once the name is free', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const syncer = new RecordingSyncer();
    const workers = createPodWorkers({ syncer, cache: new FakeCache(), backOffPeriodMs: 1_000 });
    workers.updatePod({ updateType: 'create', pod: newNamedPod('old', 'ns', 'etcd', true) });
    workers.updatePod({ updateType: 'create', pod: newNamedPod('new', 'ns', 'etcd', true) });
    await workers.whenIdle();
    expect(syncer.processed.has('new')).toBe(false);
    workers.updatePod({ updateType: 'kill', pod: newNamedPod('old', 'ns', 'etcd', true) });
    await workers.whenIdle();
    await vi.advanceTimersByTimeAsync(1_500);
    await workers.whenIdle();
    expect(syncer.processed.get('new')!.map((r) => r.updateType)).toEqual(['create']);
    await workers.close();
  });
});
