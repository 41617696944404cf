/**
 * Persistence of owned pods: the dirty set, write-ahead of intent, and batched checkpoint writes.
 *
 * Invariants:
 * - Write-ahead: before a worker acts on new intent (a kill, a shorter grace, a restore), the pod's
 *   checkpoint reflecting that intent is durable, so the runtime never sees an action the store
 *   does not know about — a crash can lose an intent that was never acted on, never one that was.
 *   This holds also when the intent is in a batch already being written: the intent stays marked
 *   until its batch is on disk. When the write fails (disk full) for a pod with no durable record,
 *   `writeAhead` answers false and the engine holds the update; a pod with a durable record goes on
 *   (its new intent only shortens what is on disk).
 * - Except for intent the API server records (a deletion and its grace, `recordedInApi`): the API
 *   is that intent's record, so its worker does not wait for the disk; the batch carrying it starts
 *   at once and is made durable (fsyncs included) beside the stop, never skipped, and retried when
 *   it fails. A crash before it lands loses nothing the API does not hold: the next run lists the
 *   deletion and carries it out again (its grace only ever shortens), the runtime's stop being
 *   idempotent. Exclusion does not rest on this write: the pod's lease (an exclusive link, taken
 *   before the kill) keeps every other process from driving it meanwhile.
 * - At most one batch is written at a time; every flush asked for meanwhile joins one shared
 *   follow-up batch (many workers waking at once cost two batch writes, not one write each).
 * - Group commit: a batch starts once the kill requests being applied (`applying`) have marked
 *   their intent, or GROUP_COMMIT_MAX_WAIT_MS after it was asked for, whichever comes first, so
 *   kills requested together share one durable write. The write-ahead is unchanged: an intent is
 *   still acted on only once a batch that holds it is on disk.
 * - A batch with intent is durable (fsync of each file, then of the folder); a batch of progress
 *   only is atomic (rename) without fsyncs. A durable batch is followed within a flush delay by one
 *   of progress: the workers it held pick their updates up after it, and no other process may read
 *   an update as pending once a worker has taken it.
 * - A failed write keeps the previous checkpoint intact and the pod dirty; it is reported once,
 *   retried after FLUSH_RETRY_MS, and never an unhandled rejection.
 * - Once the session's close has begun (`holdScheduledFlushes`), nothing is written on a timer: the
 *   close's own flush, after the cleanup it waits for (bounded), writes each dirty pod once. Intent
 *   is not held: a write-ahead flushes at once, as before.
 * - Only pods whose lease this process holds are written; a withdrawn pod never is.
 * - A forgotten pod's checkpoint is replaced by its ending (`ended/`, the same record with the
 *   worker finished): its history stays readable while the runtime lists the pod, and no session
 *   restores a worker from it.
 */
import { workerStateOf, type PodSyncStatusView, type PodWorkerEvent, type PodWorkers } from '../engine/types.js';
import type { Logger } from '../domain/session-api.js';
import { boundHistory } from '../store/format.js';
import type { PodCheckpoint, Store } from '../store/index.js';
import type { OwnedPod, PodMemory } from './memory.js';
import { namesOf } from './pod-views.js';
import { SingleFlight } from '../lib/single-flight.js';

/** Engine events that carry new intent for a pod (its write-ahead must be durable before it acts). */
const INTENT_EVENTS: ReadonlySet<PodWorkerEvent['type']> = new Set(['update-queued', 'termination-requested', 'grace-shortened', 'restart-requested']);
/** Engine events that do not by themselves start a flush (the pod is still marked dirty). */
const HISTORY_ONLY_EVENTS: ReadonlySet<PodWorkerEvent['type']> = new Set(['sync-started', 'sync-succeeded', 'requeued']);
const FLUSH_RETRY_MS = 1_000;
/** The longest a batch waits for kill requests still being applied (a group commit's bound), ms. */
const GROUP_COMMIT_MAX_WAIT_MS = 200;

export interface PersistenceDeps {
  store: Pick<Store, 'checkpoints' | 'leases' | 'ended'>;
  engine: Pick<PodWorkers, 'snapshot' | 'statusOf'>;
  memory: PodMemory;
  now: () => number;
  pid: number;
  log: Logger;
  warn: (message: string) => void;
  flushDelayMs: number;
  /** True once the session closes: no more scheduled flushes (close flushes itself). */
  closed: () => boolean;
}

export class Persistence {
  readonly #deps: PersistenceDeps;
  readonly #dirty = new Set<string>();
  /**
   * Pods with new intent (an update queued, a restore) not yet durable, with a sequence number so a
   * batch clears only the intent it wrote. The write-ahead waits for these only: a worker's wake-up
   * that follows its own progress (terminating → terminated) records an outcome, which a crash may
   * lose and the next owner re-derives (the runtime calls are idempotent).
   */
  readonly #intent = new Map<string, number>();
  #intentSeq = 0;
  /** Pods with pending intent that must be on disk before their worker acts (not recorded in the API). */
  readonly #aheadOfStop = new Set<string>();
  /** The pod whose update the API server records is being applied (set only around that synchronous call). */
  #applyingRecordedInApi: string | undefined;
  /** Per pod, why its last checkpoint write failed (its own file's error), until one succeeds. */
  readonly #storageErrors = new Map<string, Error>();
  /** Pods with a durable record: restored from a checkpoint, or written with their intent here. */
  readonly #durable = new Set<string>();
  /** Pods whose first intent could not be made durable (disk full): withdrawn, never acted on here. */
  readonly #withdrawn = new Set<string>();
  readonly #forgotten = new Set<string>();
  /** The view of a pod as it finished (when the engine still had it), for its ending when it is forgotten. */
  readonly #finished = new Map<string, { view: PodSyncStatusView | undefined; at: number }>();
  #flushTimer: NodeJS.Timeout | undefined;
  /** The session's close has begun: flushes are no longer scheduled (see the invariants). */
  #flushesHeld = false;
  /** One batch write at a time; every flush asked for meanwhile shares the one after it. */
  readonly #batches = new SingleFlight(() => this.#writeDirty());
  #flushFailing = false;
  /** Kill requests between their start and their intent marked (see `applying`). */
  #applying = 0;
  /** Batches waiting for those requests (each also bounded by GROUP_COMMIT_MAX_WAIT_MS). */
  #applyingWaiters: (() => void)[] = [];
  /** The next batch starts without waiting for kill requests being applied (`flushAlone`). */
  #alone = false;

  constructor(deps: PersistenceDeps) {
    this.#deps = deps;
  }

  /** Marks the pod of an engine event dirty (and its intent, for events that carry one). */
  noteEngineEvent(event: PodWorkerEvent): void {
    if (event.type === 'forgotten') this.#forgotten.add(event.uid);
    if (event.type === 'finished') this.#finished.set(event.uid, { view: this.#deps.engine.statusOf(event.uid), at: event.at });
    if (INTENT_EVENTS.has(event.type)) this.markIntent(event.uid);
    this.#dirty.add(event.uid);
    // What other processes show (state, grace, errors) is written within a flush delay; a sync
    // starting or succeeding alone changes only the history, written with the pod's next write.
    if (!HISTORY_ONLY_EVENTS.has(event.type)) this.scheduleFlush();
  }

  markIntent(uid: string): void {
    this.#intentSeq += 1;
    this.#intent.set(uid, this.#intentSeq);
    if (uid !== this.#applyingRecordedInApi) this.#aheadOfStop.add(uid);
  }

  /**
   * Applies (synchronously) an update whose intent the API server records: the intent it raises
   * does not hold the pod's worker for the disk (see the invariants).
   */
  recordedInApi(uid: string, apply: () => void): void {
    this.#applyingRecordedInApi = uid;
    try {
      apply();
    } finally {
      this.#applyingRecordedInApi = undefined;
    }
  }

  markDirty(uid: string): void {
    this.#dirty.add(uid);
  }

  /** A pod taken over: durable when it came with a checkpoint; no longer withdrawn either way. */
  takenOver(uid: string, fromCheckpoint: boolean): void {
    if (fromCheckpoint) this.#durable.add(uid);
    this.#withdrawn.delete(uid);
  }

  /** The engine's `beforeWorkerWakes`: true when the pod's intent is durable (or it has none). */
  async writeAhead(uid: string): Promise<boolean> {
    if (this.#withdrawn.has(uid)) return false;
    if (!(this.#intent.has(uid) && this.#deps.store.leases.holds(uid))) return true;
    if (!this.#aheadOfStop.has(uid)) {
      // recorded in the API: written (durably) beside the stop, from now
      this.flush().catch(() => undefined);
      return true;
    }
    await this.flush().catch(() => undefined);
    return !this.notDurable(uid);
  }

  /** The pod's intent is not on disk because its own write failed, and it has no durable record. */
  notDurable(uid: string): boolean {
    return this.#intent.has(uid) && this.#storageErrors.has(uid) && !this.#durable.has(uid);
  }

  /** Why the pod's last checkpoint write failed, until one succeeds. */
  storageError(uid: string): Error | undefined {
    return this.#storageErrors.get(uid);
  }

  /**
   * A kill whose first intent could not be written is withdrawn: never acted on by this session,
   * not persisted later, its lease released (or, when even that cannot be written, left to a
   * process that outlives this one). The pod is as it was; the kill can be asked again.
   */
  async withdraw(uid: string): Promise<void> {
    this.#withdrawn.add(uid);
    this.#intent.delete(uid);
    this.#aheadOfStop.delete(uid);
    this.#dirty.delete(uid);
    await this.#deps.store.leases.release(uid).catch((error: unknown) => this.#deps.log('debug', `lease of pod ${uid} not released: ${(error as Error).message}`));
  }

  /**
   * Counts a kill request as being applied until the returned function is called (once its intent
   * is marked, or it ended without one): the next batch waits for it (bounded), so kill requests
   * made together are written in one durable batch instead of one lonely batch and the rest after.
   */
  applying(): () => void {
    this.#applying += 1;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#applying -= 1;
      if (this.#applying === 0) for (const wake of this.#applyingWaiters.splice(0)) wake();
    };
  }

  /** Resolves once no kill request is being applied, or after GROUP_COMMIT_MAX_WAIT_MS. */
  #othersApplied(): Promise<void> {
    if (this.#applying === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const bound = setTimeout(resolve, GROUP_COMMIT_MAX_WAIT_MS);
      this.#applyingWaiters.push(() => {
        clearTimeout(bound);
        resolve();
      });
    });
  }

  /** From the start of the session's close: no more flushes on a timer, and the pending one is dropped. */
  holdScheduledFlushes(): void {
    this.#flushesHeld = true;
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
  }

  scheduleFlush(delayMs = this.#deps.flushDelayMs): void {
    if (this.#flushTimer || this.#flushesHeld || this.#deps.closed()) return;
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = undefined;
      // a failure is reported (and retried) by the batch itself: never an unhandled rejection
      this.flush().catch(() => undefined);
    }, delayMs);
    this.#flushTimer.unref();
  }

  /** Writes every dirty pod now; resolves when they (and earlier flushes) are on disk. */
  flush(): Promise<void> {
    if (this.#flushTimer) {
      clearTimeout(this.#flushTimer);
      this.#flushTimer = undefined;
    }
    return this.#batches.request();
  }

  /**
   * As `flush`, for a caller counted in `applying` itself (a take-over within a kill request): its
   * batch does not wait for the requests being applied, its own among them.
   */
  flushAlone(): Promise<void> {
    this.#alone = true;
    return this.flush();
  }

  async #writeDirty(): Promise<void> {
    const alone = this.#alone;
    this.#alone = false;
    if (!alone) await this.#othersApplied();
    if (this.#dirty.size === 0) return;
    const uids = [...this.#dirty];
    this.#dirty.clear();
    const snapshot = this.#deps.engine.snapshot();
    const failed: unknown[] = [];
    // A batch that carries intent is written durably: its files fsynced and renamed into place
    // side by side, then one fsync of the folder; only then is a pod's intent on disk (write-ahead).
    // A batch of progress only (a pod reached terminated or finished, its timeline grew) is renamed
    // into place without fsyncs: atomic for every reader and safe from podctl being killed, but a
    // power cut may undo it — as it also ends every container that progress was about, and the next
    // session re-derives the state from the runtime. This keeps podctl's fsyncs off the disk while
    // the runtime stops a node's worth of pods.
    const durable = uids.some((uid) => this.#intent.has(uid));
    const written = new Map<string, number | undefined>();
    await Promise.all(
      uids.map(async (uid) => {
        const intent = this.#intent.get(uid);
        try {
          await this.#persist(uid, snapshot.get(uid), durable);
          written.set(uid, intent);
        } catch (error) {
          this.#dirty.add(uid);
          this.#storageErrors.set(uid, error as Error);
          failed.push(error);
        }
      }),
    );
    if (written.size > 0 && durable) {
      try {
        await this.#deps.store.checkpoints.syncFolder();
      } catch (error) {
        for (const uid of written.keys()) {
          this.#dirty.add(uid);
          this.#storageErrors.set(uid, error as Error);
        }
        written.clear();
        failed.push(error);
      }
    }
    for (const uid of written.keys()) {
      this.#storageErrors.delete(uid);
      if (durable) this.#durable.add(uid);
    }
    for (const [uid, intent] of written) {
      if (intent !== undefined && this.#intent.get(uid) === intent) {
        this.#intent.delete(uid);
        this.#aheadOfStop.delete(uid);
      }
    }
    // The workers this batch held wake now and pick their updates up (history-only events): that is
    // written within a flush delay, so other processes never read a pending update already taken.
    if (durable && written.size > 0) this.scheduleFlush();
    if (failed.length > 0) {
      if (!this.#flushFailing) this.#deps.warn((failed[0] as Error).message);
      this.#flushFailing = true;
      this.scheduleFlush(FLUSH_RETRY_MS);
      throw failed[0];
    }
    this.#flushFailing = false;
  }

  async #persist(uid: string, view: PodSyncStatusView | undefined, durable: boolean): Promise<void> {
    const { checkpoints, leases } = this.#deps.store;
    if (!leases.holds(uid) || this.#withdrawn.has(uid)) return;
    if (this.#forgotten.has(uid) && view === undefined) {
      this.#forgotten.delete(uid);
      await this.#writeEnding(uid);
      this.#deps.memory.forget(uid);
      await checkpoints.remove(uid);
      await leases.release(uid);
      return;
    }
    if (!view) return;
    const owned = this.#deps.memory.ownedPod(uid, view.fullname);
    const names = namesOf(view);
    owned.namespace = names.namespace;
    owned.name = names.name;
    await checkpoints.write(this.#checkpointOf(view, owned), { syncFolder: false, durable });
  }

  /**
   * A forgotten pod's ending: its last view (as it finished, else its checkpoint's) marked finished,
   * with the session's timeline (the finish and the forgetting included). Best effort: a pod whose
   * ending cannot be written is forgotten all the same (status then shows what the runtime says).
   */
  async #writeEnding(uid: string): Promise<void> {
    const finished = this.#finished.get(uid);
    this.#finished.delete(uid);
    try {
      const last = finished?.view ?? (await this.#deps.store.checkpoints.read(uid))?.status;
      const owned = this.#deps.memory.get(uid);
      if (!last || !owned) return;
      const at = finished?.at ?? this.#deps.now();
      const view: PodSyncStatusView = last.finished ? last : { ...last, working: false, finished: true, terminatedAt: last.terminatedAt ?? at };
      await this.#deps.store.ended.write({ ...this.#checkpointOf(view, owned), since: last.finished ? owned.since : at });
    } catch (error) {
      this.#deps.log('debug', `the ending of pod ${uid} was not kept: ${(error as Error).message}`);
    }
  }

  #checkpointOf(view: PodSyncStatusView, owned: OwnedPod): PodCheckpoint {
    return {
      uid: view.uid,
      namespace: owned.namespace,
      name: owned.name,
      status: view,
      since: owned.since,
      history: boundHistory(owned.history),
      ...(owned.lastError ? { lastError: owned.lastError } : {}),
      ...(owned.graceDeadline !== undefined && workerStateOf(view) === 'terminating' ? { graceDeadline: owned.graceDeadline } : {}),
      writtenAt: this.#deps.now(),
      writerPid: this.#deps.pid,
    };
  }
}
