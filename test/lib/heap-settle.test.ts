import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HeapSettler } from '../../src/lib/heap-settle.js';
import { until } from '../support/wait.js';

describe('HeapSettler', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('collects once, quietMs after the last change of a burst, and not while changes keep coming', () => {
    const collect = vi.fn();
    const settler = new HeapSettler({ quietMs: 2_000, minChanges: 100, collect });
    for (let i = 0; i < 50; i += 1) {
      settler.note(4);
      vi.advanceTimersByTime(100);
    }
    expect(collect).not.toHaveBeenCalled();
    // the last change was 100 ms ago
    vi.advanceTimersByTime(1_899);
    expect(collect).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(collect).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(10_000);
    expect(collect).toHaveBeenCalledTimes(1);
    settler.close();
  });

  it('waits while busy() says the burst goes on (a pause inside a drain), settles once it is over, and not past maxWaitMs', () => {
    const collect = vi.fn();
    let busy = true;
    const settler = new HeapSettler({ quietMs: 1_000, minChanges: 100, collect, busy: () => busy, maxWaitMs: 5_000 });
    settler.note(150);
    vi.advanceTimersByTime(3_000);
    expect(collect).not.toHaveBeenCalled();
    // the drain's next group: more changes, then the node is quiet
    settler.note(50);
    vi.advanceTimersByTime(1_000);
    expect(collect).not.toHaveBeenCalled();
    busy = false;
    vi.advanceTimersByTime(1_000);
    expect(collect).toHaveBeenCalledTimes(1);
    // a pod stuck on its way out: busy for ever, the memory is still given back maxWaitMs after the last change
    busy = true;
    settler.note(100);
    vi.advanceTimersByTime(4_999);
    expect(collect).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1_000);
    expect(collect).toHaveBeenCalledTimes(2);
    vi.advanceTimersByTime(20_000);
    expect(collect).toHaveBeenCalledTimes(2);
    expect(vi.getTimerCount()).toBe(0);
    settler.close();
  });

  it('does nothing for a trickle of changes, counts them towards the next burst, and close() leaves no timer', () => {
    const collect = vi.fn();
    const settler = new HeapSettler({ quietMs: 2_000, minChanges: 100, collect });
    settler.note(60);
    settler.note(0);
    vi.advanceTimersByTime(5_000);
    expect(collect).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
    settler.note(40);
    expect(vi.getTimerCount()).toBe(1);
    settler.close();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(5_000);
    expect(collect).not.toHaveBeenCalled();
  });

  it('the default collector shrinks the young generation a burst grew, where V8 knows the memory-reducing collection (12+, Node.js 22+)', async () => {
    vi.useRealTimers();
    // older V8s keep their young generation (the full collection is the next test's)
    if (Number(process.versions.v8.split('.')[0]) < 12) return;
    const newSpaceMb = () => (getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0) / 1_048_576;
    // a burst's allocation: many short-lived objects, a share surviving a while
    let keep: unknown[] = [];
    for (let i = 0; i < 3_000_000; i += 1) {
      keep.push({ a: i, b: `x${i}` });
      if (keep.length > 200_000) keep = [];
    }
    keep = [];
    const grown = newSpaceMb();
    expect(grown).toBeGreaterThanOrEqual(16);
    const settler = new HeapSettler({ quietMs: 10, minChanges: 1 });
    settler.note(keep.length + 1);
    await until('the heap settled', () => settler.settled !== 0, { timeoutMs: 2_000, everyMs: 20 });
    expect(settler.settled).toBe(1);
    expect(newSpaceMb()).toBeLessThan(grown / 2);
  });

  it('the default collector compacts the old generation: pages a burst left mostly empty go back', async () => {
    vi.useRealTimers();
    const oldSpaceMb = () => (getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')?.space_size ?? 0) / 1_048_576;
    // objects that live long enough to be promoted, then nineteen in twenty of them die: the old
    // generation's pages stay committed, each holding a few survivors (a plain full collection
    // leaves them so; ~50 MB here on Node.js 20 and 26)
    let keep: unknown[] = [];
    for (let i = 0; i < 400_000; i += 1) keep.push({ a: i, b: `x${i}`, c: [i] });
    const settleOnce = async (): Promise<void> => {
      const settler = new HeapSettler({ quietMs: 10, minChanges: 1 });
      settler.note(1);
      await until('the heap settled', () => settler.settled !== 0, { timeoutMs: 2_000, everyMs: 20 });
      expect(settler.settled).toBe(1);
    };
    await settleOnce(); // promotes them
    keep = keep.filter((_, i) => i % 20 === 0);
    const fragmented = oldSpaceMb();
    await settleOnce();
    expect(keep).toHaveLength(20_000);
    expect(oldSpaceMb()).toBeLessThan(fragmented - 20);
  });

  it('the default collector runs a real, forced, full collection', async () => {
    vi.useRealTimers();
    const collections: { kind: number; flags: number }[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) collections.push((e as unknown as { detail: { kind: number; flags: number } }).detail);
    });
    observer.observe({ entryTypes: ['gc'] });
    try {
      const settler = new HeapSettler({ quietMs: 10, minChanges: 1 });
      settler.note(1);
      const forcedMajor = () => collections.some((c) => c.kind === constants.NODE_PERFORMANCE_GC_MAJOR && (c.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0);
      await until('a forced full collection', forcedMajor, { timeoutMs: 2_000, everyMs: 20 });
      expect(settler.settled).toBe(1);
    } finally {
      observer.disconnect();
    }
  });
});
