/**
 * A clock for redraws: returns `now()` and re-renders when `intervalMs` has passed since the last
 * render while `active`. The screen ticks every second only while something counts down, and once a
 * minute otherwise.
 *
 * Invariants:
 * - A frame drawn for any other reason (a change, a key, a resize) counts as the tick, so the screen
 *   is never more than `intervalMs` older than the clock, and a screen that already redraws often (a
 *   drain) draws no extra frames for the clock.
 * - With a `cost` meter, each frame a tick drew is measured from the tick to the effects after its
 *   commit (the screen's renderer writes the frame during the commit) and reported with `drawn`:
 *   the caller keeps the clock within a share of a core by what its frames cost.
 */
import { useEffect, useRef, useState } from 'react';

/** Where a ticker reads the CPU clock (ms) and reports what a frame it drew cost. */
export interface TickCostMeter {
  cost(): number;
  drawn(costMs: number): void;
}

export function useTicker(active: boolean, intervalMs: number, now: () => number, meter?: TickCostMeter): number {
  const [, setTick] = useState(0);
  // the CPU clock when the pending tick fired (undefined: this render was not the clock's)
  const tickedAt = useRef<number | undefined>(undefined);
  // runs after every render: the next tick is due intervalMs after this frame
  useEffect(() => {
    if (tickedAt.current !== undefined && meter !== undefined) meter.drawn(meter.cost() - tickedAt.current);
    tickedAt.current = undefined;
    if (!active) return undefined;
    const timer = setTimeout(() => {
      tickedAt.current = meter?.cost();
      setTick((n) => n + 1);
    }, intervalMs);
    return () => clearTimeout(timer);
  });
  return now();
}
