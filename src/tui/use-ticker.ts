/**
 * A clock for redraws: returns `now()` and re-renders every `intervalMs` while `active`. The screen
 * ticks every second only while something counts down, and once a minute otherwise.
 */
import { useEffect, useState } from 'react';

export function useTicker(active: boolean, intervalMs: number, now: () => number): number {
  const [, setTick] = useState(0);
  useEffect(() => {
    if (!active) return undefined;
    const timer = setInterval(() => setTick((n) => n + 1), intervalMs);
    return () => clearInterval(timer);
  }, [active, intervalMs]);
  return now();
}
