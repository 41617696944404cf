import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { abortReason, raceAbort, sleep, within } from '../../src/lib/abortable.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('sleep', () => {
  it('resolves after the delay and leaves no listener on the signal', async () => {
    vi.useFakeTimers();
    const ac = new AbortController();
    let done = false;
    const p = sleep(1_000, ac.signal).then(() => (done = true));
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await p;
    expect(done).toBe(true);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('rejects with the signal’s reason on abort, or what the caller makes of it, or resolves when asked', async () => {
    const ac = new AbortController();
    const plain = sleep(60_000, ac.signal);
    const custom = sleep(60_000, ac.signal, { reason: () => new Error('cancelled') });
    const resolving = sleep(60_000, ac.signal, { onAbort: 'resolve' });
    ac.abort(new Error('stop'));
    await expect(plain).rejects.toThrow('stop');
    await expect(custom).rejects.toThrow('cancelled');
    await expect(resolving).resolves.toBeUndefined();
    await expect(sleep(10, ac.signal)).rejects.toThrow('stop');
    await expect(sleep(10, ac.signal, { onAbort: 'resolve' })).resolves.toBeUndefined();
  });

  it('waits longer than setTimeout can (24.8 days) without firing early', async () => {
    vi.useFakeTimers();
    let done = false;
    const p = sleep(30 * 24 * 3600_000).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(25 * 24 * 3600_000);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(5 * 24 * 3600_000);
    await p;
    expect(done).toBe(true);
  });

  it('abortReason gives an AbortError when the signal has no reason', () => {
    const signal = { reason: undefined } as unknown as AbortSignal;
    expect((abortReason(signal) as DOMException).name).toBe('AbortError');
  });
});

describe('raceAbort and within', () => {
  it('raceAbort settles as the promise does, or rejects on abort without cancelling it', async () => {
    await expect(raceAbort(Promise.resolve(7), undefined)).resolves.toBe(7);
    const ac = new AbortController();
    let finish!: (v: number) => void;
    const slow = new Promise<number>((r) => (finish = r));
    const raced = raceAbort(slow, ac.signal);
    ac.abort(new Error('gone'));
    await expect(raced).rejects.toThrow('gone');
    finish(3);
    await expect(slow).resolves.toBe(3);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('within gives the value in time, the fallback after the bound, and clears its timer', async () => {
    vi.useFakeTimers();
    await expect(within(Promise.resolve('v'), 100, 'late')).resolves.toBe('v');
    expect(vi.getTimerCount()).toBe(0);
    const never = new Promise<string>(() => undefined);
    const bounded = within(never, 100, 'late');
    await vi.advanceTimersByTimeAsync(100);
    await expect(bounded).resolves.toBe('late');
    await expect(within(Promise.reject(new Error('no')), 100, 'late')).rejects.toThrow('no');
  });
});
