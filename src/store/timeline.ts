/**
 * From engine events to a pod's persisted timeline: which events are worth a line in
 * `status --explain`, how each reads, and what the last runtime error is.
 *
 * Invariants: pure functions, no I/O. Routine noise (every sync start, every periodic resync) is
 * left out so the bounded history keeps the transitions that explain a pod's state.
 */
import type { PodWorkerEvent } from '../engine/types.js';
import type { RuntimeErrorInfo, TransitionRecord } from '../domain/session-api.js';

function detailOf(event: PodWorkerEvent): string | undefined {
  switch (event.type) {
    case 'update-queued':
      return event.updateType === 'sync' || event.updateType === 'update' ? undefined : `${event.updateType} queued`;
    case 'termination-requested': {
      const why = [event.evicted ? 'evicted' : undefined, event.deleted ? 'deleted' : undefined].filter(Boolean).join(', ');
      return `termination requested, grace ${event.gracePeriod}s${why ? ` (${why})` : ''}`;
    }
    case 'grace-shortened':
      return `grace ${event.from}s → ${event.to}s`;
    case 'restart-requested':
      return 'restart requested (pod recreated with the same UID)';
    case 'sync-started':
      return undefined;
    case 'sync-succeeded':
      return event.phase === 'sync' ? undefined : `${event.phase} sync succeeded`;
    case 'sync-failed':
      return event.aborted ? `${event.phase} sync cancelled (new intent: re-running at once)` : `${event.phase} sync failed: ${event.error} (retry in ${Math.round(event.retryInMs)} ms)`;
    case 'state-changed':
      return `${event.from} → ${event.to}`;
    case 'finished':
      return 'finished (cleanup done)';
    case 'forgotten':
      return 'forgotten by sync-known';
    case 'requeued':
      return event.reason === 'backoff' ? `requeued in ${Math.round(event.delayMs)} ms (backoff)` : undefined;
  }
}

/** The timeline entry for an engine event, or undefined when it is routine. */
export function transitionOf(event: PodWorkerEvent, pid: number): TransitionRecord | undefined {
  const detail = detailOf(event);
  return detail === undefined ? undefined : { at: event.at, type: event.type, detail, pid };
}

/** A store/session-level timeline entry ('lease-taken', 'request-applied', 'resumed', …). */
export function sessionTransition(type: string, detail: string, at: number, pid: number): TransitionRecord {
  return { at, type, detail, pid };
}

/** The last runtime error after `event`, given the previous one. */
export function lastErrorAfter(previous: RuntimeErrorInfo | undefined, event: PodWorkerEvent): RuntimeErrorInfo | undefined {
  if (event.type === 'sync-failed' && !event.aborted) {
    return { message: `${event.phase}: ${event.error}`, at: event.at, retryAt: event.at + event.retryInMs };
  }
  if (event.type === 'sync-succeeded' && previous?.retryAt !== undefined) {
    // The error is resolved: keep it for the record, but there is no retry pending any more.
    return { message: previous.message, at: previous.at };
  }
  return previous;
}
