/**
 * Waits as long as a grace period (up to a year) outlast setTimeout's 2^31 − 1 ms limit: the long
 * timeout fires when asked, not at once (Node's behaviour for an overlong delay), and never early;
 * the engine clamps a pod's grace to MAX_GRACE_SECONDS.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MAX_GRACE_SECONDS, calculateEffectiveGracePeriod, isGraceInRange } from '../../src/engine/grace.js';
import { MAX_TIMER_MS, clampTimerMs, setLongTimeout } from '../../src/engine/timers.js';

describe('setLongTimeout', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("fires after a delay past setTimeout's limit, not before", () => {
    const fired = vi.fn();
    const thirtyDays = 30 * 24 * 3_600_000;
    expect(thirtyDays).toBeGreaterThan(MAX_TIMER_MS);
    setLongTimeout(fired, thirtyDays);
    vi.advanceTimersByTime(MAX_TIMER_MS);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(thirtyDays - MAX_TIMER_MS - 1);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('a year (the longest grace) fires once, at a year', () => {
    const fired = vi.fn();
    setLongTimeout(fired, MAX_GRACE_SECONDS * 1000);
    vi.advanceTimersByTime(MAX_GRACE_SECONDS * 1000 - 1);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('clear() stops it in any step', () => {
    const fired = vi.fn();
    const t = setLongTimeout(fired, 3 * MAX_TIMER_MS);
    vi.advanceTimersByTime(MAX_TIMER_MS + 5);
    t.clear();
    vi.advanceTimersByTime(3 * MAX_TIMER_MS);
    expect(fired).not.toHaveBeenCalled();
  });

  it('a short delay behaves as setTimeout; Infinity never fires', () => {
    const short = vi.fn();
    const never = vi.fn();
    setLongTimeout(short, 50);
    setLongTimeout(never, Infinity);
    vi.advanceTimersByTime(49);
    expect(short).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(short).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(10 * MAX_TIMER_MS);
    expect(never).not.toHaveBeenCalled();
  });

  it('clampTimerMs keeps delays within what setTimeout honours', () => {
    expect(clampTimerMs(-5)).toBe(0);
    expect(clampTimerMs(1_000)).toBe(1_000);
    expect(clampTimerMs(1e20)).toBe(MAX_TIMER_MS);
  });
});

describe('the grace bound', () => {
  it('a spec or deletion grace past a year is acted on as a year; the range check says what is acceptable', () => {
    const pod = { metadata: { uid: 'u' }, spec: { containers: [], terminationGracePeriodSeconds: 1e20 } };
    expect(calculateEffectiveGracePeriod({ gracePeriod: 0 }, pod).gracePeriod).toBe(MAX_GRACE_SECONDS);
    expect(isGraceInRange(MAX_GRACE_SECONDS)).toBe(true);
    expect(isGraceInRange(MAX_GRACE_SECONDS + 1)).toBe(false);
    expect(isGraceInRange(Number.NaN)).toBe(false);
    expect(isGraceInRange(-1)).toBe(false);
  });
});
