/**
 * Abortable waits, written once: "wait this long unless the signal aborts" (`sleep`) and "this
 * promise, unless the signal aborts first" (`raceAbort`). The runtime client's retry pauses, the
 * status cache's polling and back-off, the syncer's grace waits, the API client's retries, the
 * agent's interval and the simulator's injected delays all wait through here.
 *
 * Invariants:
 * - A wait removes its abort listener when it ends, however it ends (no listeners pile up on a
 *   long-lived signal).
 * - A wait of any length works: past setTimeout's 24.8-day limit it re-arms (engine/timers.ts).
 * - An abort rejects with the signal's reason (an AbortError when it has none) — or with what the
 *   caller's `reason` makes of it, or resolves early when the caller asks for `onAbort: 'resolve'`.
 * - `raceAbort` never cancels the promise it races; it only stops waiting for it.
 * - `keepProcessAlive` holds the process until released: a follower (`watch`, `status --watch`)
 *   ends by its signal or its reader, never because what it follows closed its last handle.
 * - A bound (`boundSignal`) aborts at its bound with a `BoundExceeded` naming it, so whoever
 *   catches it can say what did not answer within how long (never "The operation was aborted due
 *   to timeout").
 */
import { setLongTimeout } from '../engine/timers.js';
import { formatDuration } from './duration.js';

/** The reason a `boundSignal` aborts with: what was waited on did not answer within `boundMs`. */
export class BoundExceeded extends Error {
  override readonly name = 'BoundExceeded';
  constructor(readonly boundMs: number) {
    super(`no answer within ${formatDuration(boundMs)}`);
  }
}

/**
 * A signal that aborts after `boundMs` with a `BoundExceeded` (or when `signal` aborts, with its
 * reason): AbortSignal.timeout's bound, with the bound kept for the message. The timer does not
 * hold the process.
 */
export function boundSignal(boundMs: number, signal?: AbortSignal): AbortSignal {
  const bound = new AbortController();
  const timer = setTimeout(() => bound.abort(new BoundExceeded(boundMs)), boundMs);
  timer.unref();
  return signal ? AbortSignal.any([bound.signal, signal]) : bound.signal;
}

/** Why a signal aborted: its reason, or an AbortError when it has none. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

export interface SleepOptions {
  /** Let the process exit while waiting (background polling and back-off). */
  unref?: boolean;
  /** 'reject' (default) or 'resolve': an interval that an abort simply ends. */
  onAbort?: 'reject' | 'resolve';
  /** The error an abort rejects with (default: `abortReason(signal)`). */
  reason?: (signal: AbortSignal) => unknown;
}

/** Waits `ms` unless `signal` aborts first. */
export function sleep(ms: number, signal?: AbortSignal, options: SleepOptions = {}): Promise<void> {
  const reasonOf = options.reason ?? abortReason;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      if (options.onAbort === 'resolve') resolve();
      else reject(reasonOf(signal));
      return;
    }
    const onAbort = (): void => {
      timer.clear();
      if (options.onAbort === 'resolve') resolve();
      else reject(reasonOf(signal as AbortSignal));
    };
    const timer = setLongTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    if (options.unref === true) timer.unref();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Settles as `promise` does, unless `signal` aborts first (then rejects with its reason). */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/**
 * `promise`'s value if it settles within `boundMs`, else `fallback` (the promise goes on; only the
 * wait for it ends). A rejection of `promise` within the bound rejects.
 */
export function within<T, F>(promise: Promise<T>, boundMs: number, fallback: F): Promise<T | F> {
  let timer: ReturnType<typeof setLongTimeout> | undefined;
  const bound = new Promise<F>((resolve) => {
    timer = setLongTimeout(() => resolve(fallback), boundMs);
  });
  return Promise.race([promise, bound]).finally(() => timer?.clear());
}

/**
 * Keeps the process running until the returned function is called. A follower (`watch`, `status
 * --watch`) waits for its signal on a pending promise, and a pending promise alone does not keep
 * Node running: when the runtime goes away (the event stream's connection closed, the retry pauses
 * unref'd) such a follower would end there, with exit 0 and nothing said.
 */
export function keepProcessAlive(): () => void {
  // a timer that only holds the event loop: the longest setInterval allows (~24.8 days)
  const hold = setInterval(() => undefined, 0x7fffffff);
  return () => clearInterval(hold);
}
