/**
 * Timers for waits as long as a grace period: Node's setTimeout fires at once (with a warning) for
 * a delay over 2^31 − 1 ms (24.8 days), and gRPC refuses deadlines that far out. Grace periods go
 * up to MAX_GRACE_SECONDS (a year), so every wait derived from one goes through here.
 *
 * Invariants: a long timeout fires no earlier than asked (it re-arms in steps of MAX_TIMER_MS);
 * `clear()` stops it for good, whichever step it is in. (Abortable waits built on it are
 * lib/abortable.ts's.)
 */

/** The longest delay setTimeout honours (ms). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface LongTimeout {
  clear(): void;
  /** Lets the process exit while this timer waits (as Timeout.unref). */
  unref(): LongTimeout;
}

/** setTimeout for any finite delay; Infinity or NaN never fires. */
export function setLongTimeout(fn: () => void, ms: number): LongTimeout {
  const due = Date.now() + Math.max(0, ms);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let unref = false;
  let cleared = false;
  const arm = (): void => {
    if (cleared || !Number.isFinite(due)) return;
    const left = due - Date.now();
    if (left <= MAX_TIMER_MS) {
      timer = setTimeout(fn, Math.max(0, left));
    } else {
      timer = setTimeout(arm, MAX_TIMER_MS);
    }
    if (unref) timer.unref?.();
  };
  arm();
  const handle: LongTimeout = {
    clear() {
      cleared = true;
      if (timer !== undefined) clearTimeout(timer);
    },
    unref() {
      unref = true;
      timer?.unref?.();
      return handle;
    },
  };
  return handle;
}

/** A delay clamped to what setTimeout honours (for timers that re-check when they fire). */
export function clampTimerMs(ms: number): number {
  return Math.min(MAX_TIMER_MS, Math.max(0, ms));
}
