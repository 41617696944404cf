/**
 * The watch feed's event lines (the events pane, and the JSON stream's `event` records): which
 * session and engine events are worth a line, and the line each one gets.
 *
 * Invariants: pure functions of one event, no I/O and no state; a routine event (the worker's
 * everyday steps, a runtime relist) gets no line (undefined); a line names its pod as
 * `namespace/name` when the event says which.
 */
import type { PodWorkerEvent } from '../../engine/types.js';
import type { PodInfo, SessionEvent } from '../../domain/session-api.js';

type FeedSource = 'engine' | 'store' | 'runtime' | 'session' | 'watch';

/** One line of the events pane (and of the JSON stream's `event` records). */
export interface FeedEntry {
  at: number;
  source: FeedSource;
  level: 'info' | 'warn' | 'error';
  uid?: string;
  /** `namespace/name` when known. */
  pod?: string;
  /** Engine event type, `transition`, `warning`, `kill-requested`, … */
  kind: string;
  detail: string;
}

/** Engine events worth a line in the events pane; the others are the worker's routine. */
const NOTABLE_ENGINE_EVENTS = new Set<PodWorkerEvent['type']>(['termination-requested', 'grace-shortened', 'restart-requested', 'sync-failed', 'state-changed', 'finished', 'forgotten']);

/** `name_namespace` (the engine's fullname) → `namespace/name`. */
function refOfFullname(fullname: string): string {
  const i = fullname.lastIndexOf('_');
  return i < 0 ? fullname : `${fullname.slice(i + 1)}/${fullname.slice(0, i)}`;
}

/** The pane line of an engine event, or undefined when the event is routine. */
function entryOfEngineEvent(event: PodWorkerEvent): FeedEntry | undefined {
  if (!NOTABLE_ENGINE_EVENTS.has(event.type)) return undefined;
  const base = { at: event.at, source: 'engine' as const, uid: event.uid, pod: refOfFullname(event.fullname), kind: event.type };
  switch (event.type) {
    case 'termination-requested': {
      const why = event.evicted ? 'evict' : event.deleted ? 'delete' : 'kill';
      return { ...base, level: 'info', detail: `${why}, grace ${event.gracePeriod}s` };
    }
    case 'grace-shortened':
      return { ...base, level: 'info', detail: `grace ${event.from}s → ${event.to}s` };
    case 'sync-failed':
      if (event.aborted) return { ...base, kind: 'sync-cancelled', level: 'info', detail: `${event.phase} sync cancelled for a new intent` };
      return { ...base, level: 'error', detail: `${event.phase}: ${event.error} (retry in ${Math.round(event.retryInMs / 100) / 10}s)` };
    case 'state-changed':
      return { ...base, level: 'info', detail: `${event.from} → ${event.to}` };
    case 'finished':
      return { ...base, level: 'info', detail: 'cleanup done' };
    case 'forgotten':
      return { ...base, level: 'info', detail: 'worker forgotten' };
    case 'restart-requested':
      return { ...base, level: 'warn', detail: 'UID reused: restart after finish' };
    default:
      return undefined;
  }
}

/** Folder events of one request within this time are one `request-written` line. */
export const REQUEST_REPEAT_MS = 1_000;

/** The pane line of a non-engine session event, or undefined when it is routine. */
export function entryOfSessionEvent(event: SessionEvent): FeedEntry | undefined {
  switch (event.source) {
    case 'engine':
      return entryOfEngineEvent(event.event);
    case 'store':
      if (event.kind === 'request-written') return { at: event.at, source: 'store', level: 'info', uid: event.uid, kind: 'request-written', detail: 'request for the owner' };
      return undefined;
    case 'session':
      return { at: event.at, source: 'session', level: 'warn', kind: 'warning', detail: event.message };
    case 'runtime':
      return undefined;
  }
}

/** `namespace/name` of a listed pod. */
export const refOf = (p: Pick<PodInfo, 'namespace' | 'name'>) => `${p.namespace}/${p.name}`;
