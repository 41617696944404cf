/**
 * The session's event hub: what it tells its subscribers (engine events of its pods, store and
 * runtime notices, warnings) and the wakers of its bounded waits.
 *
 * Invariants: a listener that throws never stops the others nor the session; wakers run after the
 * listeners, for every event; a warning is logged and emitted, once each.
 */
import type { Logger, SessionEvent } from '../domain/session-api.js';

export class SessionEvents {
  readonly #listeners = new Set<(event: SessionEvent) => void>();
  readonly #wakers = new Set<(event: SessionEvent) => void>();
  readonly #log: Logger;
  readonly #now: () => number;

  constructor(log: Logger, now: () => number) {
    this.#log = log;
    this.#now = now;
  }

  emit(event: SessionEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure is its own.
      }
    }
    for (const wake of this.#wakers) wake(event);
  }

  warn(message: string): void {
    this.#log('warn', message);
    this.emit({ source: 'session', at: this.#now(), kind: 'warning', message });
  }

  subscribe(listener: (event: SessionEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** A waker for a bounded wait: told of every event until it is removed. */
  addWaker(wake: (event: SessionEvent) => void): () => void {
    this.#wakers.add(wake);
    return () => this.#wakers.delete(wake);
  }
}
