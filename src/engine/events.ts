/**
 * The engine's transition-event fan-out.
 *
 * Invariants:
 * - Events are delivered synchronously, in emission order, to every listener subscribed at the
 *   time of emission.
 * - A throwing listener never breaks the engine or other listeners (its error is dropped).
 * - Callers check `active` before building an event, so an engine nobody listens to allocates nothing.
 */
import type { PodWorkerEvent } from './types.js';

export type PodWorkerListener = (event: PodWorkerEvent) => void;

export class EventFanout {
  #listeners: PodWorkerListener[] = [];

  get active(): boolean {
    return this.#listeners.length > 0;
  }

  subscribe(listener: PodWorkerListener): () => void {
    this.#listeners = [...this.#listeners, listener];
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  emit(event: PodWorkerEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // listeners must not throw; one that does is ignored rather than corrupting a transition
      }
    }
  }
}

/** Calls a user callback, ignoring a throw (callbacks must not break a transition half-way). */
export function callSafely(fn: (() => void) | undefined): void {
  if (fn === undefined) return;
  try {
    fn();
  } catch {
    // see above
  }
}
