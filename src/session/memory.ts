/**
 * What the session remembers about each pod it owns, beside the engine's own status: its names,
 * since when it is in its state, its timeline, its last runtime error and its grace deadline.
 * This is what a checkpoint carries next to the engine's view, and what `listPods` shows of an
 * owned pod.
 *
 * Invariants:
 * - The grace deadline only ever moves earlier (a termination's grace only shrinks).
 * - A restore's own engine events do not enter the timeline (the checkpoint's timeline is kept);
 *   nor does the back-off requeue that follows a sync cancelled by new intent (the worker re-runs
 *   at once).
 * - The timeline is bounded (store/format.ts boundHistory).
 */
import type { PodWorkerEvent } from '../engine/types.js';
import type { RuntimeErrorInfo, TransitionRecord } from '../domain/session-api.js';
import { boundHistory } from '../store/format.js';
import type { PodCheckpoint } from '../store/index.js';
import { lastErrorAfter, transitionOf } from '../store/timeline.js';
import { splitFullname } from './pod-views.js';

export interface OwnedPod {
  namespace: string;
  name: string;
  since: number;
  history: TransitionRecord[];
  lastError?: RuntimeErrorInfo;
  graceDeadline?: number;
}

export class PodMemory {
  readonly #owned = new Map<string, OwnedPod>();
  /** UIDs being restored right now: their restore events keep the checkpoint's timeline. */
  readonly #restoring = new Set<string>();
  /** UIDs whose last sync was cancelled by new intent (not a runtime failure). */
  readonly #cancelled = new Set<string>();
  readonly #now: () => number;
  readonly #pid: number;

  constructor(now: () => number, pid: number) {
    this.#now = now;
    this.#pid = pid;
  }

  get(uid: string): OwnedPod | undefined {
    return this.#owned.get(uid);
  }

  uids(): IterableIterator<string> {
    return this.#owned.keys();
  }

  forget(uid: string): void {
    this.#owned.delete(uid);
  }

  /** The memory of `uid`, begun now from the engine's fullname when there is none yet. */
  ownedPod(uid: string, fullname: string): OwnedPod {
    let owned = this.#owned.get(uid);
    if (!owned) {
      const names = splitFullname(fullname);
      owned = { ...names, since: this.#now(), history: [] };
      this.#owned.set(uid, owned);
    }
    return owned;
  }

  /** Begins the memory of a pod taken over: from its checkpoint, or empty. */
  takenOver(uid: string, checkpoint: PodCheckpoint | undefined): OwnedPod {
    const owned: OwnedPod = checkpoint
      ? {
          namespace: checkpoint.namespace,
          name: checkpoint.name,
          since: checkpoint.since,
          history: [...checkpoint.history],
          ...(checkpoint.lastError ? { lastError: checkpoint.lastError } : {}),
          ...(checkpoint.graceDeadline !== undefined ? { graceDeadline: checkpoint.graceDeadline } : {}),
        }
      : { namespace: '', name: '', since: this.#now(), history: [] };
    this.#owned.set(uid, owned);
    return owned;
  }

  record(owned: OwnedPod, record: TransitionRecord): void {
    owned.history.push(record);
    if (owned.history.length > 2 * 64) owned.history = boundHistory(owned.history);
  }

  /** Runs `restore` with the pod's own restore events kept out of its timeline. */
  restoring<T>(uid: string, restore: () => T): T {
    this.#restoring.add(uid);
    try {
      return restore();
    } finally {
      this.#restoring.delete(uid);
    }
  }

  /** Folds one engine event into the pod's memory (timeline, since, last error, grace deadline). */
  noteEngineEvent(event: PodWorkerEvent): void {
    const owned = this.ownedPod(event.uid, event.fullname);
    const restoring = this.#restoring.has(event.uid);
    const mootRequeue = event.type === 'requeued' && event.reason === 'backoff' && this.#cancelled.has(event.uid);
    if (event.type === 'sync-failed' && event.aborted) this.#cancelled.add(event.uid);
    else if (event.type !== 'requeued') this.#cancelled.delete(event.uid);
    if (!restoring && !mootRequeue) {
      const record = transitionOf(event, this.#pid);
      if (record) this.record(owned, record);
      if (event.type === 'state-changed' || event.type === 'finished') owned.since = event.at;
    }
    owned.lastError = lastErrorAfter(owned.lastError, event);
    if (event.type === 'termination-requested') shortenDeadline(owned, event.at + event.gracePeriod * 1000);
    else if (event.type === 'grace-shortened') shortenDeadline(owned, event.at + event.to * 1000);
  }
}

function shortenDeadline(owned: OwnedPod, deadline: number): void {
  if (owned.graceDeadline === undefined || deadline < owned.graceDeadline) owned.graceDeadline = deadline;
}
