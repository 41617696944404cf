/**
 * `openSession()`: the node session every podctl process opens (see session-api.ts for the
 * contract). It wires one in-process pod-worker engine to the runtime (CRI or simulator) and to the
 * checkpoint store shared by every podctl process on the node.
 *
 * What it owns and guarantees:
 * - Ownership: this session drives a pod only while it holds the pod's lease (store/lease.ts). It
 *   takes a lease when it first acts on a pod (`requestKill`, `waitTerminated`, `syncKnown`); if a
 *   live process holds it, the request goes to that owner's inbox instead. A pod whose owner died
 *   (or released it) is taken over and restored into this engine from its checkpoint (`restore`):
 *   finished stays finished, terminating continues with the remembered grace, never longer.
 * - Persistence: every engine event of an owned pod marks it dirty; dirty pods are written as one
 *   coalesced batch a few ms later, and always before the pod's worker acts on new intent
 *   (write-ahead, through the engine's `beforeWorkerWakes`). `requestKill` resolves only after
 *   the pod's checkpoint (or the inbox request) is durable; `close()` flushes everything, then
 *   releases the leases. A write failure (disk full) is reported once and retried; the previous
 *   checkpoint stays intact.
 * - Hand-over: the inbox folder is watched (fs.watch, with a slow re-scan); requests for owned pods
 *   are applied through `updatePod` in arrival order, persisted, then acknowledged.
 * - Reads (`listPods`, `getPod`) merge this engine's live view of owned pods with every other
 *   process's checkpoints and leases and with one runtime listing; they never take a lease.
 * - Every wait is bounded: `waitTerminated` by its timeout, `syncKnown` by the kubelet's killPodNow
 *   bound for the pods it drives; both (and `listPods`) end early when their signal aborts.
 *   Background timers (heartbeat, flush retry, re-scans) are unref'd so a session never keeps a
 *   process alive; the bounded waits a caller awaits are ref'd, so the process cannot exit in the
 *   middle of one.
 *
 * Heavy modules stay out: the CRI client and the API-server client are imported lazily, only when
 * the default runtime or a kubeconfig is used.
 */
import { lstat } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { PodNotFoundError } from '../lib/errors.js';
import { createPodWorkers, killTimeoutMs, operatorGraceOverride, remainingGraceSeconds } from '../engine/index.js';
import {
  workerStateOf,
  type PodStatus,
  type PodSyncStatusView,
  type PodWorkerEvent,
  type PodWorkers,
  type PodWorkersOptions,
  type PodWorkerSync,
  type RunningPod,
  type V1Pod,
} from '../engine/types.js';
import { openStore, leaseInfoOf, StoreError, type FileOps, type FolderWatch, type InboxRequest, type LeaseView, type PodCheckpoint, type Store } from '../store/index.js';
import { watchFolder } from '../store/watch.js';
import { boundHistory } from '../store/format.js';
import { lastErrorAfter, sessionTransition, transitionOf } from '../store/timeline.js';
import type {
  KillHandle,
  KillRequest,
  ListPodsOptions,
  Logger,
  NodeSession,
  PodInfo,
  RuntimeErrorInfo,
  SessionEvent,
  SessionOptions,
  SyncKnownCallOptions,
  SyncKnownResult,
  TransitionRecord,
  WaitOptions,
  WaitOutcome,
} from './session-api.js';

export type { RuntimePodRecord, SessionRuntime } from '../session/runtime.js';
import type { RuntimePodRecord, SessionRuntime } from '../session/runtime.js';

/** Test seams and tunables; every field is optional. */
export interface SessionSeams {
  runtime?: SessionRuntime;
  createEngine?: (options: PodWorkersOptions) => PodWorkers;
  /** Desired pods when `syncKnown(undefined)` is called (default: the API server via kubeconfig). */
  desiredPodsSource?: (signal?: AbortSignal) => Promise<V1Pod[]>;
  storeOps?: FileOps;
  /** Lease heartbeat period (default 2_000 ms). */
  heartbeatMs?: number;
  /** Safety re-scan of the inbox and re-check of awaited pods (default 1_000 ms). */
  rescanMs?: number;
  /** Persistence coalescing delay (default 15 ms). */
  flushDelayMs?: number;
  /** Engine options passed through (resync, backoff). */
  engine?: Pick<PodWorkersOptions, 'resyncIntervalMs' | 'backOffPeriodMs'>;
}

const DEFAULT_HEARTBEAT_MS = 2_000;
/** Bound of the wait, on close, for pods that just terminated to finish their cleanup. */
const CLEANUP_ON_CLOSE_MS = 5_000;
const DEFAULT_RESCAN_MS = 1_000;
const DEFAULT_FLUSH_DELAY_MS = 15;
/** Engine events that carry new intent for a pod (its write-ahead must be durable before it acts). */
const INTENT_EVENTS: ReadonlySet<PodWorkerEvent['type']> = new Set(['update-queued', 'termination-requested', 'grace-shortened', 'restart-requested']);
/** Engine events that do not by themselves start a flush (the pod is still marked dirty). */
const HISTORY_ONLY_EVENTS: ReadonlySet<PodWorkerEvent['type']> = new Set(['sync-started', 'sync-succeeded', 'requeued']);
/** How long `waitTerminated` coalesces notices that do not move an awaited pod on, ms. */
const WAKE_COALESCE_MS = 10;
const FLUSH_RETRY_MS = 1_000;
/** How old a runtime listing may be for decisions that do not need the latest state, ms. */
const RECENT_LISTING_MS = 1_000;
/** Released leases of forgotten pods are deleted by sync-known after this long. */
const RELEASED_LEASE_RETENTION_MS = 60 * 60 * 1000;
/** Hand-off logs not written for this long are deleted by housekeeping. */
const HAND_OFF_LOG_RETENTION_MS = 24 * 60 * 60 * 1000;
/** How long a static pod found in the runtime may take to start in the engine before its kill. */
const STATIC_START_WAIT_MS = 2_000;

/** The kubelet's killPodNow bound for a grace period (seconds): max(10 s, 1.5 × grace). */
export function killBoundMs(gracePeriodSeconds: number): number {
  return killTimeoutMs(gracePeriodSeconds);
}

/** What the session remembers about a pod it owns, beside the engine's own status. */
interface OwnedPod {
  namespace: string;
  name: string;
  since: number;
  history: TransitionRecord[];
  lastError?: RuntimeErrorInfo;
  graceDeadline?: number;
}

function splitFullname(fullname: string): { name: string; namespace: string } {
  const at = fullname.lastIndexOf('_');
  return at < 0 ? { name: fullname, namespace: '' } : { name: fullname.slice(0, at), namespace: fullname.slice(at + 1) };
}

function specOf(view: PodSyncStatusView | undefined): V1Pod | undefined {
  return view?.pendingUpdate?.pod ?? view?.activeUpdate?.pod;
}

function runningPodOf(view: PodSyncStatusView | undefined): RunningPod | undefined {
  return view?.pendingUpdate?.runningPod ?? view?.activeUpdate?.runningPod;
}

function isStatic(pod: V1Pod | undefined): boolean {
  const source = pod?.metadata?.annotations?.['kubernetes.io/config.source'];
  return source !== undefined && source !== 'api';
}

function namesOf(view: PodSyncStatusView, runtime?: RuntimePodRecord): { namespace: string; name: string } {
  const pod = specOf(view);
  if (pod?.metadata?.name) return { name: pod.metadata.name, namespace: pod.metadata.namespace ?? 'default' };
  const running = runningPodOf(view);
  if (running) return { name: running.name, namespace: running.namespace };
  if (runtime) return { name: runtime.name, namespace: runtime.namespace };
  return splitFullname(view.fullname);
}

function isRunningSomething(status: PodStatus): boolean {
  return status.containerStatuses.some((c) => c.state === 'running') || status.sandboxStatuses.some((s) => s.state === 'ready');
}

function stateOfView(view: PodSyncStatusView): PodInfo['state'] {
  return view.finished ? 'finished' : workerStateOf(view);
}

/** Whether `event` is the engine moving one of the awaited pods on (worth an immediate look). */
function movesAwaitedPod(event: SessionEvent, awaited: ReadonlySet<string>): boolean {
  if (event.source !== 'engine' || !awaited.has(event.event.uid)) return false;
  const type = event.event.type;
  return type === 'state-changed' || type === 'finished' || type === 'forgotten' || type === 'sync-failed';
}

function isDone(state: PodInfo['state']): boolean {
  return state === 'terminated' || state === 'finished';
}

function describeKill(request: { gracePeriodSeconds?: number; evict?: boolean; reason?: string }, fromPid: number): string {
  const parts = [request.evict ? 'evict' : 'kill'];
  if (request.gracePeriodSeconds !== undefined) parts.push(`grace ${request.gracePeriodSeconds}s`);
  parts.push(`from pid ${fromPid}`);
  if (request.reason) parts.push(`(${request.reason})`);
  return parts.join(' ');
}

/** Nothing to kill: the pod is neither in the runtime nor in the state dir (exit code 4). */
class PodNotFound extends PodNotFoundError {
  constructor(uid: string) {
    super([uid], 'it is neither in the runtime nor in the state dir; list pods with `podctl status -A`');
  }
}

class Session implements NodeSession {
  readonly endpoint: string;
  readonly stateDir: string;
  readonly simulated: boolean;

  readonly #store: Store;
  readonly #runtime: SessionRuntime;
  readonly #engine: PodWorkers;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #options: SessionOptions;
  readonly #seams: SessionSeams;
  readonly #pid = process.pid;

  readonly #owned = new Map<string, OwnedPod>();
  /** UIDs being restored right now: their restore events keep the checkpoint's timeline. */
  readonly #restoring = new Set<string>();
  /** UIDs whose last sync was cancelled by new intent (not a runtime failure). */
  readonly #cancelled = new Set<string>();
  readonly #dirty = new Set<string>();
  /**
   * Pods with new intent (an update queued, a restore) not yet durable, with a sequence number so a
   * batch clears only the intent it wrote. The write-ahead waits for these only: a worker's wake-up
   * that follows its own progress (terminating → terminated) records an outcome, which a crash may
   * lose and the next owner re-derives (the runtime calls are idempotent).
   */
  readonly #intent = new Map<string, number>();
  #intentSeq = 0;
  /** Per pod, why its last checkpoint write failed (its own file's error), until one succeeds. */
  readonly #storageErrors = new Map<string, Error>();
  /** Pods with a durable record: restored from a checkpoint, or written with their intent here. */
  readonly #durable = new Set<string>();
  /** Pods whose first intent could not be made durable (disk full): withdrawn, never acted on here. */
  readonly #withdrawn = new Set<string>();
  readonly #forgotten = new Set<string>();
  #flushTimer: NodeJS.Timeout | undefined;
  /** The batch write in flight, if any. */
  #flushing: Promise<void> | undefined;
  /** The one follow-up batch shared by every flush requested while a write is in flight. */
  #flushQueued: Promise<void> | undefined;
  #flushFailing = false;

  readonly #adopting = new Map<string, Promise<boolean>>();
  readonly #inboxChains = new Map<string, Promise<void>>();
  readonly #listeners = new Set<(event: SessionEvent) => void>();
  readonly #wakers = new Set<(event: SessionEvent) => void>();
  readonly #watches: FolderWatch[] = [];
  readonly #timers: NodeJS.Timeout[] = [];
  #unsubscribeRuntime: (() => void) | undefined;
  #unsubscribeEngine: (() => void) | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;

  constructor(options: SessionOptions, seams: SessionSeams, store: Store, runtime: SessionRuntime, log: Logger) {
    this.#options = options;
    this.#seams = seams;
    this.#store = store;
    this.#runtime = runtime;
    this.#log = log;
    this.#now = options.clock ? () => options.clock!.now() : Date.now;
    this.endpoint = runtime.endpoint;
    this.stateDir = store.layout.root;
    this.simulated = runtime.simulated;
    const engineOptions: PodWorkersOptions = {
      syncer: runtime.syncer,
      cache: runtime.cache,
      beforeWorkerWakes: (uid) => this.#writeAhead(uid),
      ...(options.clock ? { clock: options.clock } : {}),
      ...seams.engine,
    };
    this.#engine = (seams.createEngine ?? createPodWorkers)(engineOptions);
    this.#unsubscribeEngine = this.#engine.subscribe((event) => this.#onEngineEvent(event));
  }

  /** The engine marked this pod evicted (its runtime objects are removed once terminated). */
  isEvicted(uid: string): boolean {
    return this.#engine.statusOf(uid)?.evicted ?? false;
  }

  /**
   * Whether this session decides anything by the exit codes of the pod's containers: it drives
   * the pod, and the pod's restart policy (OnFailure, Never) makes them say whether it finished.
   */
  needsExitCodes(uid: string): boolean {
    if (!this.#store.leases.holds(uid)) return false;
    const policy = specOf(this.#engine.statusOf(uid))?.spec?.restartPolicy;
    return policy === 'OnFailure' || policy === 'Never';
  }

  /** Starts watchers and heartbeats (after construction, so a failing open leaks nothing). */
  start(): void {
    const rescanMs = this.#seams.rescanMs ?? DEFAULT_RESCAN_MS;
    const { inbox, checkpoints, leases } = this.#store;
    this.#watches.push(
      watchFolder(inbox.folder, {
        rescanMs,
        onName: (name) => {
          const uid = inbox.uidOfName(name);
          if (uid === undefined) return;
          // a request's removal (its owner took it) is no new request
          void lstat(path.join(inbox.folder, name)).then(
            () => this.#emit({ source: 'store', uid, at: this.#now(), kind: 'request-written' }),
            () => undefined,
          );
          if (this.#store.leases.holds(uid)) this.#drainInbox(uid);
        },
        onRescan: () => void this.#rescanInbox(),
      }),
      watchFolder(checkpoints.folder, {
        rescanMs: 60_000,
        onName: (name) => {
          const uid = checkpoints.uidOfName(name);
          if (uid === undefined) return;
          void lstat(checkpoints.pathOf(uid)).then(
            () => this.#emit({ source: 'store', uid, at: this.#now(), kind: 'checkpoint-changed' }),
            () => this.#emit({ source: 'store', uid, at: this.#now(), kind: 'removed' }),
          );
        },
        onRescan: () => {},
      }),
      watchFolder(leases.folder, {
        rescanMs: 60_000,
        onName: (name) => {
          const uid = leases.uidOfName(name);
          if (uid !== undefined) this.#emit({ source: 'store', uid, at: this.#now(), kind: 'lease-changed' });
        },
        onRescan: () => {},
      }),
    );
    const beat = setInterval(() => void this.#heartbeat(), this.#seams.heartbeatMs ?? DEFAULT_HEARTBEAT_MS);
    beat.unref();
    this.#timers.push(beat);
    this.#unsubscribeRuntime = this.#runtime.subscribe?.((kind, uids) => this.#emit({ source: 'runtime', at: this.#now(), kind, uids }));
  }

  // ---------------------------------------------------------------------------------------------
  // events and persistence

  #emit(event: SessionEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure is its own.
      }
    }
    for (const wake of this.#wakers) wake(event);
  }

  #warn(message: string): void {
    this.#log('warn', message);
    this.#emit({ source: 'session', at: this.#now(), kind: 'warning', message });
  }

  #ownedPod(uid: string, fullname: string): OwnedPod {
    let owned = this.#owned.get(uid);
    if (!owned) {
      const names = splitFullname(fullname);
      owned = { ...names, since: this.#now(), history: [] };
      this.#owned.set(uid, owned);
    }
    return owned;
  }

  #record(owned: OwnedPod, record: TransitionRecord): void {
    owned.history.push(record);
    if (owned.history.length > 2 * 64) owned.history = boundHistory(owned.history);
  }

  #onEngineEvent(event: PodWorkerEvent): void {
    const owned = this.#ownedPod(event.uid, event.fullname);
    const restoring = this.#restoring.has(event.uid);
    // The backoff requeue that follows a cancelled sync is moot (the worker re-runs at once).
    const mootRequeue = event.type === 'requeued' && event.reason === 'backoff' && this.#cancelled.has(event.uid);
    if (event.type === 'sync-failed' && event.aborted) this.#cancelled.add(event.uid);
    else if (event.type !== 'requeued') this.#cancelled.delete(event.uid);
    if (!restoring && !mootRequeue) {
      const record = transitionOf(event, this.#pid);
      if (record) this.#record(owned, record);
      if (event.type === 'state-changed' || event.type === 'finished') owned.since = event.at;
    }
    owned.lastError = lastErrorAfter(owned.lastError, event);
    if (event.type === 'termination-requested') {
      const deadline = event.at + event.gracePeriod * 1000;
      if (owned.graceDeadline === undefined || deadline < owned.graceDeadline) owned.graceDeadline = deadline;
    } else if (event.type === 'grace-shortened') {
      const deadline = event.at + event.to * 1000;
      if (owned.graceDeadline === undefined || deadline < owned.graceDeadline) owned.graceDeadline = deadline;
    }
    if (event.type === 'forgotten') this.#forgotten.add(event.uid);
    if (INTENT_EVENTS.has(event.type)) this.#markIntent(event.uid);
    this.#dirty.add(event.uid);
    // What other processes show (state, grace, errors) is written within a flush delay; a sync
    // starting or succeeding alone changes only the history, written with the pod's next write.
    if (!HISTORY_ONLY_EVENTS.has(event.type)) this.#scheduleFlush();
    this.#emit({ source: 'engine', event });
  }

  #markIntent(uid: string): void {
    this.#intentSeq += 1;
    this.#intent.set(uid, this.#intentSeq);
  }

  /**
   * Write-ahead: before a worker acts on new intent (a kill, a shorter grace, a restore), the pod's
   * checkpoint reflecting that intent is made durable, so the runtime never sees an action the
   * store does not know about — a crash can lose an intent that was never acted on, never one that
   * was. This holds also when the intent is in a batch already being written (no longer dirty): the
   * intent stays marked until its batch is on disk. When the write fails (disk full) for a pod with
   * no durable record, the answer is false and the engine holds the update: nothing reaches the
   * runtime that the store does not know about. A pod with a durable record goes on (its new intent
   * only shortens what is on disk; losing it to a crash cannot lengthen a grace).
   */
  async #writeAhead(uid: string): Promise<boolean> {
    if (this.#withdrawn.has(uid)) return false;
    if (!(this.#intent.has(uid) && this.#store.leases.holds(uid))) return true;
    await this.#flush().catch(() => undefined);
    return !this.#notDurable(uid);
  }

  /** The pod's intent is not on disk because its own write failed, and it has no durable record. */
  #notDurable(uid: string): boolean {
    return this.#intent.has(uid) && this.#storageErrors.has(uid) && !this.#durable.has(uid);
  }

  /**
   * A kill whose first intent could not be written is withdrawn: never acted on by this session,
   * not persisted later, its lease released (or, when even that cannot be written, left to a
   * process that outlives this one). The pod is as it was; the kill can be asked again.
   */
  async #withdraw(uid: string): Promise<void> {
    this.#withdrawn.add(uid);
    this.#intent.delete(uid);
    this.#dirty.delete(uid);
    await this.#store.leases.release(uid).catch((error: unknown) => this.#log('debug', `lease of pod ${uid} not released: ${(error as Error).message}`));
  }

  #scheduleFlush(delayMs = this.#seams.flushDelayMs ?? DEFAULT_FLUSH_DELAY_MS): void {
    if (this.#flushTimer || this.#closed) return;
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = undefined;
      // a failure is reported (and retried) by the batch itself: never an unhandled rejection
      this.#flush().catch(() => undefined);
    }, delayMs);
    this.#flushTimer.unref();
  }

  /**
   * Writes every dirty pod now; resolves when they (and earlier flushes) are on disk. At most one
   * batch is written at a time: a pod marked dirty during a write cannot be in it (the batch took
   * its snapshot at start), so every flush requested meanwhile joins one shared follow-up batch.
   * Many workers waking at once (50 pods reaching terminated) thus cost two batch writes, not one
   * sequential write each.
   */
  #flush(): Promise<void> {
    if (this.#flushTimer) {
      clearTimeout(this.#flushTimer);
      this.#flushTimer = undefined;
    }
    if (this.#flushQueued) return this.#flushQueued;
    const inflight = this.#flushing;
    if (!inflight) return this.#startBatch();
    const queued = inflight
      .catch(() => undefined)
      .then(() => {
        this.#flushQueued = undefined;
        return this.#startBatch();
      });
    this.#flushQueued = queued;
    return queued;
  }

  #startBatch(): Promise<void> {
    const batch: Promise<void> = this.#writeDirty().finally(() => {
      if (this.#flushing === batch) this.#flushing = undefined;
    });
    this.#flushing = batch;
    return batch;
  }

  async #writeDirty(): Promise<void> {
    if (this.#dirty.size === 0) return;
    const uids = [...this.#dirty];
    this.#dirty.clear();
    const snapshot = this.#engine.snapshot();
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
        await this.#store.checkpoints.syncFolder();
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
      if (intent !== undefined && this.#intent.get(uid) === intent) this.#intent.delete(uid);
    }
    if (failed.length > 0) {
      if (!this.#flushFailing) this.#warn((failed[0] as Error).message);
      this.#flushFailing = true;
      this.#scheduleFlush(FLUSH_RETRY_MS);
      throw failed[0];
    }
    this.#flushFailing = false;
  }

  async #persist(uid: string, view: PodSyncStatusView | undefined, durable: boolean): Promise<void> {
    const { checkpoints, leases } = this.#store;
    if (!leases.holds(uid) || this.#withdrawn.has(uid)) return;
    if (this.#forgotten.has(uid) && view === undefined) {
      this.#forgotten.delete(uid);
      this.#owned.delete(uid);
      await checkpoints.remove(uid);
      await leases.release(uid);
      return;
    }
    if (!view) return;
    const owned = this.#ownedPod(uid, view.fullname);
    const names = namesOf(view);
    owned.namespace = names.namespace;
    owned.name = names.name;
    await checkpoints.write(this.#checkpointOf(view, owned), { syncFolder: false, durable });
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
      writtenAt: this.#now(),
      writerPid: this.#pid,
    };
  }

  async #heartbeat(): Promise<void> {
    if (this.#closed) return;
    try {
      const lost = await this.#store.leases.heartbeat();
      for (const uid of lost) this.#warn(`lost the lease of pod ${uid} to another process; no longer persisting it`);
    } catch (error) {
      this.#log('debug', `heartbeat: ${(error as Error).message}`);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // ownership: take over, restore, apply requests

  /**
   * Takes the lease of `uid` if no live process holds it and restores its checkpoint into this
   * engine. Resolves true when this session now drives the pod.
   */
  #adopt(uid: string, why: string): Promise<boolean> {
    if (this.#store.leases.holds(uid)) return Promise.resolve(true);
    const running = this.#adopting.get(uid);
    if (running) return running;
    const attempt = this.#takeOver(uid, why).finally(() => this.#adopting.delete(uid));
    this.#adopting.set(uid, attempt);
    return attempt;
  }

  async #takeOver(uid: string, why: string): Promise<boolean> {
    if (this.#closed) return false;
    const result = await this.#store.leases.tryAcquire(uid);
    if (!result.acquired) return false;
    const checkpoint = await this.#store.checkpoints.read(uid);
    if (checkpoint) this.#durable.add(uid);
    this.#withdrawn.delete(uid);
    const now = this.#now();
    const owned: OwnedPod = checkpoint
      ? {
          namespace: checkpoint.namespace,
          name: checkpoint.name,
          since: checkpoint.since,
          history: [...checkpoint.history],
          ...(checkpoint.lastError ? { lastError: checkpoint.lastError } : {}),
          ...(checkpoint.graceDeadline !== undefined ? { graceDeadline: checkpoint.graceDeadline } : {}),
        }
      : { namespace: '', name: '', since: now, history: [] };
    this.#owned.set(uid, owned);
    const previous = result.previous;
    const from = previous?.record
      ? previous.released
        ? `after pid ${previous.record.pid} released it`
        : `from pid ${previous.record.pid} (gone)`
      : 'first owner';
    this.#record(owned, sessionTransition('lease-taken', `${why}: lease taken ${from}`, now, this.#pid));
    if (checkpoint && !this.#engine.snapshot().has(uid)) {
      this.#markIntent(uid);
      this.#restoring.add(uid);
      // the stored deadline is authoritative: a resumed termination only has what is left of its grace
      const status = { ...checkpoint.status };
      if (checkpoint.graceDeadline !== undefined && stateOfView(status) === 'terminating') {
        const left = remainingGraceSeconds(checkpoint.graceDeadline, now);
        if (status.gracePeriod <= 0 || left < status.gracePeriod) status.gracePeriod = left;
      }
      try {
        this.#engine.restore([status]);
      } finally {
        this.#restoring.delete(uid);
      }
      const state = stateOfView(checkpoint.status);
      const detail =
        state === 'terminating'
          ? `resumed terminating with ${this.#engine.statusOf(uid)?.gracePeriod ?? checkpoint.status.gracePeriod}s of grace left`
          : state === 'finished'
            ? 'restored finished (waits to be forgotten)'
            : `restored in state ${state}`;
      this.#record(owned, sessionTransition('resumed', detail, now, this.#pid));
    }
    this.#dirty.add(uid);
    // A restored pod's checkpoint records the take-over now; a pod new to the engine has nothing to
    // write yet (its lease-taken record goes out with the first checkpoint, before its worker acts).
    if (this.#engine.snapshot().has(uid)) await this.#flush().catch(() => {});
    this.#drainInbox(uid);
    return true;
  }

  /**
   * Introduces a running static pod to the engine before it is killed. The engine (as the kubelet)
   * finishes a static pod whose termination is requested before it ever started without running
   * its terminating step — right for a pod that never ran, wrong for one podctl found running in
   * the runtime. A `create` first lets the worker start it; the wait for that is bounded.
   */
  async #introduceStaticPod(uid: string, pod: V1Pod): Promise<void> {
    const started = new Promise<void>((resolve) => {
      // Ref'd on purpose (bounded): the caller awaits it; see waitTerminated.
      const timer = setTimeout(done, STATIC_START_WAIT_MS);
      const off = this.#engine.subscribe((event) => {
        if (event.uid === uid && event.type === 'sync-started') done();
      });
      function done(): void {
        clearTimeout(timer);
        off();
        resolve();
      }
    });
    this.#engine.updatePod({ updateType: 'create', startTime: this.#now(), pod });
    await started;
  }

  /** Applies a kill to a pod this session owns. Throws PodNotFound when nothing is left to kill. */
  async #applyKill(
    uid: string,
    request: { gracePeriodSeconds?: number; evict?: boolean; reason?: string; pod?: V1Pod },
    from: { pid: number; inbox: boolean },
    runtimePod?: RuntimePodRecord,
  ): Promise<void> {
    let view = this.#engine.snapshot().get(uid);
    if (!runtimePod && !request.pod && !specOf(view) && !runningPodOf(view)) {
      // Neither the request nor the engine has the pod: the runtime does, or nobody.
      runtimePod = (await this.#runtimeIndex(RECENT_LISTING_MS)).get(uid);
    }
    const pod = request.pod ?? specOf(view) ?? runtimePod?.pod;
    const runningPod = pod ? undefined : (runningPodOf(view) ?? runtimePod?.runningPod);
    if (!pod && !runningPod) throw new PodNotFound(uid);
    if (!view && pod && isStatic(pod)) {
      await this.#introduceStaticPod(uid, pod);
      view = this.#engine.snapshot().get(uid);
    }
    const owned = this.#ownedPod(uid, view?.fullname ?? `${pod?.metadata?.name ?? runningPod!.name}_${pod?.metadata?.namespace ?? runningPod!.namespace}`);
    this.#record(owned, sessionTransition(from.inbox ? 'request-applied' : 'kill-requested', describeKill(request, from.pid), this.#now(), this.#pid));
    this.#dirty.add(uid);
    const killPodOptions = {
      ...(request.evict ? { evict: true } : {}),
      // an operator's override only ever shortens the pod's own grace (engine/grace.ts)
      ...(request.gracePeriodSeconds !== undefined ? { gracePeriodSecondsOverride: operatorGraceOverride(pod, request.gracePeriodSeconds) } : {}),
    };
    this.#engine.updatePod({
      updateType: 'kill',
      startTime: this.#now(),
      ...(pod ? { pod } : { runningPod: runningPod! }),
      killPodOptions,
    });
  }

  #drainInbox(uid: string): void {
    const previous = this.#inboxChains.get(uid) ?? Promise.resolve();
    const next = previous.then(() => this.#applyInbox(uid)).catch((error: unknown) => this.#warn(`inbox of pod ${uid}: ${(error as Error).message}`));
    this.#inboxChains.set(uid, next);
    void next.finally(() => {
      if (this.#inboxChains.get(uid) === next) this.#inboxChains.delete(uid);
    });
  }

  async #applyInbox(uid: string): Promise<void> {
    if (!this.#store.leases.holds(uid)) return;
    const requests = await this.#store.inbox.pending(uid);
    if (requests.length === 0) return;
    const applied: InboxRequest[] = [];
    for (const request of requests) {
      try {
        await this.#applyKill(uid, request, { pid: request.fromPid, inbox: true });
      } catch (error) {
        if (!(error instanceof PodNotFound)) throw error;
        this.#log('debug', `request ${request.id} for pod ${uid}: nothing left to kill`);
      }
      applied.push(request);
    }
    await this.#flush();
    await Promise.all(applied.map((r) => this.#store.inbox.acknowledge(r)));
  }

  async #rescanInbox(): Promise<void> {
    if (this.#closed) return;
    try {
      const pending = await this.#store.inbox.pendingUids();
      for (const uid of pending) if (this.#store.leases.holds(uid)) this.#drainInbox(uid);
    } catch (error) {
      this.#log('debug', `inbox re-scan: ${(error as Error).message}`);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // reads

  async #runtimeIndex(maxAgeMs = 0, signal?: AbortSignal): Promise<Map<string, RuntimePodRecord>> {
    const list = await this.#runtime.listPods(signal, maxAgeMs);
    return new Map(list.map((p) => [p.uid, p]));
  }

  /** PodInfo for the given UIDs (all known pods when `only` is undefined). */
  async #collect(
    only?: readonly string[],
    runtimePods?: Map<string, RuntimePodRecord> | Promise<Map<string, RuntimePodRecord>>,
    signal?: AbortSignal,
  ): Promise<Map<string, PodInfo>> {
    const { checkpoints, leases } = this.#store;
    const readStore = async (): Promise<[Map<string, PodCheckpoint>, Map<string, LeaseView>]> => {
      if (!only) return Promise.all([checkpoints.readAll(), leases.inspectAll()]);
      const leaseViews = new Map<string, LeaseView>();
      // A pod this session drives is known from memory: the engine's view and our own lease.
      const others = only.filter((uid) => {
        const held = leases.heldView(uid);
        if (held) leaseViews.set(uid, held);
        return held === undefined;
      });
      if (others.length === 0) return [new Map(), leaseViews];
      const [stored] = await Promise.all([
        // one look at the folder when there are several to read (most are often new to the store)
        others.length > 1 ? checkpoints.readSome(others) : checkpoints.read(others[0]!).then((c) => new Map(c ? [[others[0]!, c]] : [])),
        Promise.all(
          others.map(async (uid) => {
            const lease = await leases.inspect(uid);
            if (lease) leaseViews.set(uid, lease);
          }),
        ),
      ]);
      return [stored, leaseViews];
    };
    // The runtime listing and the store reads do not depend on each other: they run side by side.
    const [runtime, [stored, leaseViews]] = await Promise.all([runtimePods ?? this.#runtimeIndex(0, signal), readStore()]);
    const snapshot = this.#engine.snapshot();
    const uids = new Set<string>(only ?? [...runtime.keys(), ...stored.keys(), ...this.#owned.keys()]);
    const out = new Map<string, PodInfo>();
    for (const uid of uids) {
      const info = this.#podInfo(uid, snapshot, stored.get(uid), leaseViews.get(uid), runtime.get(uid));
      if (info) out.set(uid, info);
    }
    return out;
  }

  #podInfo(
    uid: string,
    snapshot: Map<string, PodSyncStatusView>,
    checkpoint: PodCheckpoint | undefined,
    lease: LeaseView | undefined,
    runtime: RuntimePodRecord | undefined,
  ): PodInfo | undefined {
    const ownedView = this.#store.leases.holds(uid) ? snapshot.get(uid) : undefined;
    const owned = ownedView ? this.#owned.get(uid) : undefined;
    const worker = ownedView ?? checkpoint?.status;
    if (!worker && !runtime) return undefined;
    const names = worker ? namesOf(worker, runtime) : { name: runtime!.name, namespace: runtime!.namespace };
    const pod = specOf(worker) ?? runtime?.pod;
    const state: PodInfo['state'] = worker ? stateOfView(worker) : 'runtime';
    const containers = runtime?.status.containerStatuses ?? [];
    const graceDeadline = owned ? owned.graceDeadline : checkpoint?.graceDeadline;
    const info: PodInfo = {
      uid,
      namespace: names.namespace,
      name: names.name,
      static: runtime?.static ?? isStatic(pod),
      state,
      containersRunning: containers.filter((c) => c.state === 'running').length,
      containersTotal: containers.length,
      since: owned?.since ?? checkpoint?.since ?? runtime?.createdAt ?? this.#now(),
      history: owned ? boundHistory(owned.history) : (checkpoint?.history ?? []),
    };
    if (pod) info.pod = pod;
    if (worker) info.worker = worker;
    if (runtime) info.runtime = runtime.status;
    if (worker && state === 'terminating') {
      info.gracePeriod = worker.gracePeriod;
      if (graceDeadline !== undefined) info.graceDeadline = graceDeadline;
    }
    const owner = lease ? leaseInfoOf(lease) : undefined;
    if (owner && !lease!.released) info.owner = owner;
    const lastError = owned ? owned.lastError : checkpoint?.lastError;
    if (lastError) info.lastError = lastError;
    // a pod whose intent is held because its checkpoint cannot be written says so (its own file)
    const storage = this.#notDurable(uid) ? this.#storageErrors.get(uid) : undefined;
    if (storage) info.lastError = { message: `held, nothing done: ${storage.message}`, at: this.#now() };
    return info;
  }

  async listPods(options?: ListPodsOptions): Promise<PodInfo[]> {
    this.#assertOpen();
    const signal = options?.signal;
    signal?.throwIfAborted();
    // A read-only session follows no runtime events: a listing of its own from the last second (the
    // one started while it opened) is as recent as what it could learn otherwise.
    if (options?.uids?.length === 0) return [];
    const maxAgeMs = options?.runtimeMaxAgeMs ?? (this.#options.readOnly ? RECENT_LISTING_MS : 0);
    let runtime: Map<string, RuntimePodRecord> | Promise<Map<string, RuntimePodRecord>> | undefined = maxAgeMs ? this.#runtimeIndex(maxAgeMs, signal) : undefined;
    let only: string[] | undefined;
    if (options?.uids !== undefined) {
      only = [...new Set(options.uids)];
    } else if (options?.scope === 'runtime') {
      runtime = await (runtime ?? this.#runtimeIndex(0, signal));
      only = [...new Set([...runtime.keys(), ...this.#owned.keys()])];
    }
    const pods = [...(await this.#collect(only, runtime, signal)).values()];
    signal?.throwIfAborted();
    return pods;
  }

  async getPod(uid: string): Promise<PodInfo | undefined> {
    this.#assertOpen();
    return (await this.#collect([uid])).get(uid);
  }

  // ---------------------------------------------------------------------------------------------
  // commands

  async requestKill(request: KillRequest): Promise<KillHandle> {
    this.#assertOpen();
    this.#assertWritable();
    const { uid } = request;
    // The pod's spec and existence do not need a fresh relist; a recent one (≤ 1 s) will do.
    const runtime = await this.#runtimeIndex(RECENT_LISTING_MS);
    const runtimePod = runtime.get(uid);
    const known = this.#store.leases.holds(uid) || runtimePod !== undefined || (await this.#store.checkpoints.read(uid)) !== undefined;
    if (!known) throw new PodNotFound(uid);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      if (await this.#adopt(uid, 'kill')) {
        await this.#applyKill(uid, request, { pid: this.#pid, inbox: false }, runtimePod);
        await this.#flush().catch(() => undefined);
        // write-ahead: a kill whose intent is not on disk was not done (the engine held it)
        if (this.#notDurable(uid)) {
          const cause = this.#storageErrors.get(uid);
          await this.#withdraw(uid);
          const code = cause instanceof StoreError ? cause.code : 'EIO';
          const where = cause instanceof StoreError ? cause.path : this.#store.checkpoints.pathOf(uid);
          throw new StoreError(code, where, `${cause?.message ?? `checkpoint ${where} not written`}; nothing was done to the pod`, { cause });
        }
        return { uid, handledBy: 'local', ownerPid: this.#pid };
      }
      const owner = await this.#store.leases.inspect(uid);
      if (owner?.alive && owner.record) {
        await this.#store.inbox.post({
          uid,
          kind: 'kill',
          ...(request.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: request.gracePeriodSeconds } : {}),
          ...(request.evict ? { evict: true } : {}),
          ...(request.reason ? { reason: request.reason } : {}),
          ...(request.message ? { message: request.message } : {}),
        });
        return { uid, handledBy: 'delegated', ownerPid: owner.record.pid };
      }
      // The owner died between our attempt and our look: try to take over again.
    }
    throw new Error(`pod ${uid}: could not take over its lease nor reach its owner`);
  }

  async waitTerminated(uids: string[], options: WaitOptions): Promise<Map<string, WaitOutcome>> {
    this.#assertOpen();
    this.#assertWritable();
    const outcomes = new Map<string, WaitOutcome>();
    const deadline = this.#now() + options.timeoutMs;
    const rescanMs = this.#seams.rescanMs ?? DEFAULT_RESCAN_MS;
    const last = new Map<string, string>();
    const waiting = (): string[] => uids.filter((uid) => !outcomes.has(uid));

    const evaluate = async (): Promise<void> => {
      const pending = waiting();
      if (pending.length === 0) return;
      let infos: Map<string, PodInfo>;
      try {
        infos = await this.#collect(pending, await this.#runtimeIndex(RECENT_LISTING_MS / 4));
      } catch (error) {
        this.#log('debug', `wait: ${(error as Error).message}`);
        return; // the runtime did not answer: decide nothing this round
      }
      for (const uid of pending) {
        const info = infos.get(uid);
        if (!info) {
          outcomes.set(uid, 'gone');
          continue;
        }
        const fingerprint = `${info.state}|${info.gracePeriod}|${info.containersRunning}|${info.owner?.pid}|${info.lastError?.at}`;
        if (last.get(uid) !== fingerprint) {
          last.set(uid, fingerprint);
          options.onProgress?.(info);
        }
        if (isDone(info.state)) {
          outcomes.set(uid, 'terminated');
          continue;
        }
        const drivenHere = this.#store.leases.holds(uid);
        if (!drivenHere && !info.owner?.alive && info.state !== 'runtime') await this.#adopt(uid, 'wait');
      }
    };

    // Wake-ups: an engine event that moves an awaited pod on (a state change, finished, a failed
    // sync) re-evaluates at once, after the current burst of events (setImmediate); anything else
    // (store and runtime notices, other pods) is coalesced for a few ms. An event that arrives while
    // an evaluation runs is not lost: the next wait starts with it.
    const awaited = new Set(uids);
    let woken = false;
    let urgent = false;
    let onWake: (() => void) | undefined;
    const waker = (event?: SessionEvent): void => {
      woken = true;
      if (event === undefined || movesAwaitedPod(event, awaited)) urgent = true;
      onWake?.();
    };
    this.#wakers.add(waker);
    const onAbort = (): void => waker();
    options.signal?.addEventListener('abort', onAbort);
    try {
      for (;;) {
        woken = false;
        urgent = false;
        await evaluate();
        if (waiting().length === 0 || options.signal?.aborted || this.#closed) break;
        const left = deadline - this.#now();
        if (left <= 0) break;
        await new Promise<void>((resolve) => {
          let finished = false;
          let coalesce: NodeJS.Timeout | undefined;
          const finish = (): void => {
            if (finished) return;
            finished = true;
            clearTimeout(timer);
            clearTimeout(coalesce);
            onWake = undefined;
            resolve();
          };
          // Ref'd on purpose: a caller awaits this bounded wait, and the engine's own timers are
          // unref'd, so without it the process could exit (code 13) in the middle of a kill.
          const timer = setTimeout(finish, Math.min(left, rescanMs));
          onWake = () => {
            if (urgent) setImmediate(finish);
            else coalesce ??= setTimeout(finish, WAKE_COALESCE_MS);
          };
          if (woken) onWake();
        });
      }
    } finally {
      this.#wakers.delete(waker);
      options.signal?.removeEventListener('abort', onAbort);
    }
    for (const uid of uids) if (!outcomes.has(uid)) outcomes.set(uid, 'timeout');
    return outcomes;
  }

  /**
   * Pods this session drives (holds the lease of) whose termination is not over: what a process that
   * exits must hand on to another driver, so that no pod it drives is dropped.
   */
  drivenUnfinished(): string[] {
    if (this.#closed || this.#options.readOnly) return [];
    return [...this.#engine.snapshot().values()]
      // still terminating: a terminated pod's cleanup is what close() waits for (bounded), and what
      // housekeeping finishes; handing it on would say "still terminating" of a pod that is not
      .filter((v) => this.#store.leases.holds(v.uid) && !v.finished && workerStateOf(v) === 'terminating')
      .map((v) => v.uid);
  }

  /** The desired pods the API server lists for this node (sync-known's `api` source). */
  apiDesiredPods(): Promise<V1Pod[]> {
    this.#assertOpen();
    return this.#desiredPods();
  }

  async #desiredPods(): Promise<V1Pod[]> {
    if (this.#seams.desiredPodsSource) return this.#seams.desiredPodsSource();
    const kube = await import('../kube/index.js');
    const source = kube.detectKube(this.#options.kubeconfig);
    if (!source) {
      throw new Error('no API server configured for desired pods: pass --kubeconfig, or --desired FILE / --desired-from runtime');
    }
    const client = await kube.connectKube(source, { node: this.#options.node ?? hostname(), ...(this.#options.rpcTimeoutMs ? { timeoutMs: this.#options.rpcTimeoutMs } : {}) });
    return client.listNodePods();
  }

  async syncKnown(desired: V1Pod[] | undefined, options?: SyncKnownCallOptions): Promise<SyncKnownResult> {
    this.#assertOpen();
    this.#assertWritable();
    // An abort stops the sync between steps and ends the bounded wait of step 4; the pods adopted so
    // far stay owned until close() persists them and releases their leases.
    const signal = options?.signal;
    signal?.throwIfAborted();
    const desiredPods = desired ?? (await this.#desiredPods());
    const desiredUids = new Set(desiredPods.map((p) => p.metadata?.uid).filter((u): u is string => !!u));
    const runtime = await this.#runtimeIndex(0, signal);
    const [stored, leaseViews] = await Promise.all([this.#store.checkpoints.readAll(), this.#store.leases.inspectAll()]);

    // 1. Resume pods whose owner is gone (or released them), from their checkpoints.
    const resumed: string[] = [];
    for (const [uid, checkpoint] of stored) {
      if (this.#store.leases.holds(uid)) continue;
      const lease = leaseViews.get(uid);
      if (lease?.alive) continue;
      signal?.throwIfAborted();
      if (await this.#adopt(uid, 'sync-known')) {
        if (!checkpoint.status.finished) resumed.push(uid);
      }
    }
    signal?.throwIfAborted();

    // 2. The engine's housekeeping: forget finished orphans, drive unfinished orphans on.
    const forgotten = new Set<string>();
    const unsubscribe = this.#engine.subscribe((event) => {
      if (event.type === 'forgotten') forgotten.add(event.uid);
    });
    let workers: Map<string, PodWorkerSync>;
    try {
      workers = this.#engine.syncKnownPods(desiredPods);
    } finally {
      unsubscribe();
    }

    // 3. Runtime pods still running that no worker (here or in a live process) knows: kill them.
    const orphanedRuntimePods: string[] = [];
    const snapshot = this.#engine.snapshot();
    for (const [uid, pod] of runtime) {
      if (desiredUids.has(uid) || snapshot.has(uid) || !isRunningSomething(pod.status)) continue;
      if (leaseViews.get(uid)?.alive && !this.#store.leases.holds(uid)) continue;
      if (!(await this.#adopt(uid, 'sync-known'))) continue;
      if (this.#engine.snapshot().has(uid)) continue; // restored from a checkpoint after all
      this.#engine.updatePod({ updateType: 'kill', startTime: this.#now(), runningPod: pod.runningPod });
      this.#record(this.#ownedPod(uid, `${pod.name}_${pod.namespace}`), sessionTransition('orphan-killed', 'runtime pod unknown to any worker: terminating', this.#now(), this.#pid));
      orphanedRuntimePods.push(uid);
    }
    await this.#flush().catch(() => {});
    signal?.throwIfAborted();

    // 4. Drive what this sync started to completion (bounded), then forget what finished.
    if (options?.wait !== false) await this.#driveToCompletion(signal);
    signal?.throwIfAborted();
    const unsubscribeAgain = this.#engine.subscribe((event) => {
      if (event.type === 'forgotten') forgotten.add(event.uid);
    });
    try {
      workers = this.#engine.syncKnownPods(desiredPods);
    } finally {
      unsubscribeAgain();
    }
    await this.#flush().catch(() => {});
    await this.#sweepOldLeases();
    return { workers, orphanedRuntimePods, resumed, forgotten: [...forgotten] };
  }

  /**
   * Housekeeping, so the state dir does not grow forever: the leases of pods long gone (no
   * checkpoint; released, or their owner dead for an hour), inbox files no owner will take (not
   * requests, or requests for pods that no longer exist, an hour old), hand-off logs idle for a day.
   */
  async #sweepOldLeases(): Promise<void> {
    try {
      const withCheckpoint = new Set(await this.#store.checkpoints.uids());
      await this.#store.leases.sweepReleased(RELEASED_LEASE_RETENTION_MS, (uid) => withCheckpoint.has(uid));
      const withLease = await this.#store.leases.uids();
      const inRuntime = await this.#runtimeIndex(RECENT_LISTING_MS).catch(() => undefined);
      // without a runtime listing no request is judged orphaned
      if (inRuntime) await this.#store.inbox.sweepUnknown(RELEASED_LEASE_RETENTION_MS, (uid) => withCheckpoint.has(uid) || withLease.has(uid) || inRuntime.has(uid));
      const { sweepHandOffLogs } = await import('./hand-off.js');
      await sweepHandOffLogs(this.#store.layout.root, HAND_OFF_LOG_RETENTION_MS, this.#now());
    } catch (error) {
      this.#log('debug', `state dir housekeeping: ${(error as Error).message}`);
    }
  }

  /** Waits until no owned pod is terminating (or terminated but not yet cleaned up), bounded; an abort ends the wait. */
  async #driveToCompletion(signal?: AbortSignal): Promise<void> {
    const unfinished = (): PodSyncStatusView[] =>
      [...this.#engine.snapshot().values()].filter((v) => this.#store.leases.holds(v.uid) && !v.finished && workerStateOf(v) !== 'sync');
    const first = unfinished();
    if (first.length === 0 || signal?.aborted) return;
    const bound = this.#now() + killBoundMs(Math.max(1, ...first.map((v) => v.gracePeriod))) + 5_000;
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (unfinished().length === 0 || this.#now() >= bound || this.#closed || signal?.aborted) {
          unsubscribe();
          clearInterval(timer);
          signal?.removeEventListener('abort', check);
          resolve();
        }
      };
      const unsubscribe = this.#engine.subscribe(() => queueMicrotask(check));
      // Ref'd on purpose (bounded): the caller awaits completion; see waitTerminated.
      const timer = setInterval(check, 250);
      signal?.addEventListener('abort', check, { once: true });
      check();
    });
  }

  subscribe(listener: (event: SessionEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('the session is closed');
  }

  #assertWritable(): void {
    if (this.#options.readOnly) throw new Error('this session is read-only: open it without readOnly to act on pods');
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  /**
   * Lets the cleanup of pods that just terminated finish (syncTerminatedPod: the final check, and
   * the removal of an evicted pod's containers and sandboxes), bounded by `boundMs`, instead of
   * aborting it half-way when a command closes the session right after its wait.
   */
  async #settleTerminated(boundMs: number): Promise<void> {
    const cleaning = (): boolean =>
      [...this.#engine.snapshot().values()].some((v) => v.working && !v.finished && workerStateOf(v) === 'terminated');
    if (!cleaning()) return;
    await new Promise<void>((resolve) => {
      let unsubscribe: () => void = () => {};
      const done = (): void => {
        clearTimeout(timer);
        unsubscribe();
        resolve();
      };
      const timer = setTimeout(done, boundMs);
      unsubscribe = this.#engine.subscribe(() => queueMicrotask(() => {
        if (!cleaning()) done();
      }));
    });
  }

  async #shutdown(): Promise<void> {
    for (const watch of this.#watches) watch.close();
    for (const timer of this.#timers) clearInterval(timer);
    this.#unsubscribeRuntime?.();
    // Requests that arrived for our pods are applied (recorded) before we stop: one look at the
    // inbox, then each held pod that has any.
    const pending = await this.#store.inbox.pendingUids().catch(() => new Set(this.#store.leases.heldUids()));
    for (const uid of this.#store.leases.heldUids()) if (pending.has(uid)) this.#drainInbox(uid);
    await Promise.all([...this.#inboxChains.values()]);
    await Promise.all([...this.#adopting.values()]).catch(() => {});
    await this.#settleTerminated(CLEANUP_ON_CLOSE_MS);
    this.#closed = true;
    await this.#engine.close();
    // Every engine event of an owned pod marked it dirty (the subscription is still on), and a
    // failed write left its pods dirty: flushing what is dirty leaves every held pod's checkpoint
    // current, without rewriting those already on disk.
    let persisted = true;
    await this.#flush().catch((error: unknown) => {
      persisted = false;
      this.#log('error', `could not persist pod state on close: ${(error as Error).message}`);
    });
    this.#unsubscribeEngine?.();
    // Leases whose checkpoint could not be written stay held by this (exiting) process: the next
    // process sees it dead and resumes from the last good checkpoint.
    if (persisted) await this.#store.leases.releaseAll();
    await this.#runtime.close();
  }
}

/** Builds the default CRI-backed runtime (lazy: grpc-js is loaded only here). */
async function connectDefaultRuntime(
  options: SessionOptions,
  stateDir: string,
  isEvicted: (uid: string) => boolean,
  needsExitCodes: (uid: string) => boolean,
): Promise<SessionRuntime> {
  const { connectRuntime } = await import('./session-runtime.js');
  return connectRuntime(options, stateDir, {
    isEvicted,
    ...(options.readOnly ? { readOnly: true } : {}),
    ...(options.exitDetails === 'driven' ? { exitDetailsFor: needsExitCodes } : {}),
  });
}

/**
 * Opens the node session: state dir (created/checked), runtime, engine, watchers (none when read-only).
 * Throws one-line errors (StoreError, EndpointError) the CLI maps to exit codes.
 */
export async function openSession(options: SessionOptions, seams: SessionSeams = {}): Promise<NodeSession> {
  const log: Logger = options.log ?? (() => {});
  let session: Session | undefined;
  // The state dir and the runtime are opened side by side; a state-dir error is reported first, as
  // when they were opened one after the other (and the runtime connection is then closed).
  const [opened, connected] = await Promise.allSettled([
    openStore({
      stateDir: options.stateDir,
      report: (message) => log('warn', message),
      ...(seams.storeOps ? { ops: seams.storeOps } : {}),
      ...(options.clock ? { clock: () => options.clock!.now() } : {}),
      ...(options.readOnly ? { readOnly: true } : {}),
    }),
    seams.runtime ??
      connectDefaultRuntime(
        options,
        path.resolve(options.stateDir),
        (uid) => session?.isEvicted(uid) ?? false,
        (uid) => session?.needsExitCodes(uid) ?? false,
      ),
  ]);
  if (opened.status === 'rejected') {
    if (connected.status === 'fulfilled' && !seams.runtime) await connected.value.close().catch(() => undefined);
    throw opened.reason;
  }
  if (connected.status === 'rejected') throw connected.reason;
  const store = opened.value;
  const runtime = connected.value;
  session = new Session(options, seams, store, runtime, log);
  // A read-only session acts on nothing: no inbox, checkpoint or lease watchers, no heartbeat.
  if (!options.readOnly) session.start();
  return session;
}
