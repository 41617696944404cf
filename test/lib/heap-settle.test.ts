import { constants, PerformanceObserver } from 'node:perf_hooks';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HeapSettler } from '../../src/lib/heap-settle.js';

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

  it('the default collector runs a real, forced, full collection, and the memory-reducing one where V8 has it', async () => {
    vi.useRealTimers();
    const collections: { kind: number; flags: number }[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) collections.push((e as unknown as { detail: { kind: number; flags: number } }).detail);
    });
    observer.observe({ entryTypes: ['gc'] });
    try {
      const settler = new HeapSettler({ quietMs: 10, minChanges: 1 });
      settler.note(1);
      const until = Date.now() + 2_000;
      const forcedMajor = () => collections.some((c) => c.kind === constants.NODE_PERFORMANCE_GC_MAJOR && (c.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0);
      while (!forcedMajor() && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(settler.settled).toBe(1);
      expect(forcedMajor()).toBe(true);
      // V8 12 and later (Node.js 22+): the memory-reducing collection that shrinks the young generation
      if (Number(process.versions.v8.split('.')[0]) >= 12) {
        while (!collections.some((c) => (c.flags & constants.NODE_PERFORMANCE_GC_FLAGS_ALL_AVAILABLE_GARBAGE) !== 0) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
        expect(collections.some((c) => c.kind === constants.NODE_PERFORMANCE_GC_MAJOR && (c.flags & constants.NODE_PERFORMANCE_GC_FLAGS_ALL_AVAILABLE_GARBAGE) !== 0)).toBe(true);
      }
    } finally {
      observer.disconnect();
    }
  });
});
