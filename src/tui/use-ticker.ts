/**
 * A clock for countdowns: returns `now()` and re-renders every `intervalMs`, but only while `active`
 * (something is terminating). When nothing counts down no timer exists, so an idle screen costs no CPU.
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
