/**
 * A clock for redraws: returns `now()` and re-renders when `intervalMs` has passed since the last
 * render while `active`. The screen ticks every second only while something counts down, and once a
 * minute otherwise.
 *
 * Invariant: a frame drawn for any other reason (a change, a key, a resize) counts as the tick, so
 * the screen is never more than `intervalMs` older than the clock, and a screen that already redraws
 * often (a drain) draws no extra frames for the clock.
 */
import { useEffect, useState } from 'react';

export function useTicker(active: boolean, intervalMs: number, now: () => number): number {
  const [, setTick] = useState(0);
  // runs after every render: the next tick is due intervalMs after this frame
  useEffect(() => {
    if (!active) return undefined;
    const timer = setTimeout(() => setTick((n) => n + 1), intervalMs);
    return () => clearTimeout(timer);
  });
  return now();
}
