/**
 * The node session every podctl process opens (see domain/session-api.ts for the contract): one
 * in-process pod-worker engine wired to the runtime (CRI or simulator) and to the checkpoint store
 * shared by every podctl process on the node. This class only wires the parts and answers the
 * contract's calls through them; each part owns one job:
 *
 * - memory.ts — what the session remembers of each owned pod (timeline, last error, deadline);
 * - persistence.ts — dirty set, write-ahead of intent, batched checkpoint writes;
 * - ownership.ts — leases, take-over and restore, heartbeat;
 * - inbox.ts — kills applied here and requests handed over by other processes;
 * - view.ts — merged reads (engine + store + runtime);
 * - waits.ts — the bounded waits; sync-known.ts — SyncKnownPods and housekeeping;
 * - events.ts — subscribers and wakers.
 *
 * Invariants kept here: a closed session answers nothing; a read-only session acts on nothing
 * (no watchers, no heartbeat, no kills); `requestKill` resolves only once the pod's intent (or the
 * inbox request) is durable; `close()` applies pending requests, lets just-terminated pods finish
 * their cleanup (bounded), flushes everything (the progress made meanwhile written once, by that
 * flush), then releases the leases — except those whose checkpoint could not be written, which the
 * next process resumes from the last good one.
 * Background timers are unref'd, so a session never keeps a process alive.
 */
import { lstatSync } from 'node:fs';
import path from 'node:path';
import { createPodWorkers } from '../engine/index.js';
import { workerStateOf, type PodWorkerEvent, type PodWorkers, type PodWorkersOptions, type V1Pod } from '../engine/types.js';
import type {
  KillHandle,
  KillRequest,
  ListPodsOptions,
  Logger,
  NodeSession,
  PodInfo,
  RuntimeStep,
  SessionEvent,
  SessionOptions,
  SyncKnownCallOptions,
  SyncKnownResult,
  WaitOptions,
  WaitOutcome,
} from '../domain/session-api.js';
import { StoreError, type FolderWatch, type Store } from '../store/index.js';
import { watchFolder } from '../store/watch.js';
import { SessionEvents } from './events.js';
import { KillInbox, PodNotFound } from './inbox.js';
import { PodMemory } from './memory.js';
import { Ownership } from './ownership.js';
import { Persistence } from './persistence.js';
import { specOf } from './pod-views.js';
import type { SessionRuntime } from './runtime.js';
import { DEFAULT_FLUSH_DELAY_MS, DEFAULT_HEARTBEAT_MS, DEFAULT_RESCAN_MS, RECENT_LISTING_MS, type SessionSeams } from './seams.js';
import { desiredPodsFromApi, syncKnown, type SyncKnownDeps } from './sync-known.js';
import { PodView } from './view.js';
import { settleTerminated, waitTerminated, type WaitDeps } from './waits.js';

/** Bound of the wait, on close, for pods that just terminated to finish their cleanup. */
const CLEANUP_ON_CLOSE_MS = 5_000;

/**
 * Whether a name a folder event reported is there (not followed if a symlink). One direct system
 * call: a drain renames thousands of files, and a promise per name cost a thread-pool round trip each.
 */
function exists(file: string): boolean {
  try {
    lstatSync(file);
    return true;
  } catch {
    return false;
  }
}

export class Session implements NodeSession {
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
  /** Pods this session posted a kill request for (to another process that held them). */
  readonly #posted = new Set<string>();

  readonly #events: SessionEvents;
  readonly #memory: PodMemory;
  readonly #persistence: Persistence;
  readonly #ownership: Ownership;
  readonly #inbox: KillInbox;
  readonly #view: PodView;
  readonly #waitDeps: WaitDeps;
  readonly #syncDeps: SyncKnownDeps;

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
    const now = options.clock ? () => options.clock!.now() : Date.now;
    this.#now = now;
    this.endpoint = runtime.endpoint;
    this.stateDir = store.layout.root;
    this.simulated = runtime.simulated;
    const pid = this.#pid;
    const closed = (): boolean => this.#closed;

    this.#events = new SessionEvents(log, now);
    const warn = (message: string): void => this.#events.warn(message);
    this.#memory = new PodMemory(now, pid);
    const engineOptions: PodWorkersOptions = {
      syncer: runtime.syncer,
      cache: runtime.cache,
      beforeWorkerWakes: (uid) => this.#persistence.writeAhead(uid),
      ...(options.clock ? { clock: options.clock } : {}),
      ...seams.engine,
    };
    this.#engine = (seams.createEngine ?? createPodWorkers)(engineOptions);
    const engine = this.#engine;
    const memory = this.#memory;
    this.#persistence = new Persistence({ store, engine, memory, now, pid, log, warn, flushDelayMs: seams.flushDelayMs ?? DEFAULT_FLUSH_DELAY_MS, closed });
    const persistence = this.#persistence;
    this.#view = new PodView({ store, engine, runtime, memory, persistence, now, readOnly: options.readOnly === true });
    const view = this.#view;
    this.#inbox = new KillInbox({ store, engine, memory, persistence, view, now, pid, log, warn, closed });
    this.#ownership = new Ownership({ store, engine, memory, persistence, now, pid, log, warn, closed, onAdopted: (uid) => this.#inbox.drain(uid) });
    const ownership = this.#ownership;
    this.#waitDeps = { engine, view, ownership, events: this.#events, now, log, rescanMs: seams.rescanMs ?? DEFAULT_RESCAN_MS, closed };
    this.#syncDeps = {
      store,
      engine,
      view,
      ownership,
      memory,
      persistence,
      now,
      pid,
      log,
      closed,
      desiredPods: () => (seams.desiredPodsSource ? seams.desiredPodsSource() : desiredPodsFromApi(options)),
    };
    this.#unsubscribeEngine = engine.subscribe((event) => this.#onEngineEvent(event));
  }

  /** The engine marked this pod evicted (its runtime objects are removed once terminated). */
  isEvicted(uid: string): boolean {
    return this.#engine.statusOf(uid)?.evicted ?? false;
  }

  /**
   * A step of a termination the syncer ended (a hook, a container's or sandbox's stop, the
   * removal), in the pod's timeline; it is written with the pod's next checkpoint write (the
   * state change that follows it). A pod this session does not drive is not recorded.
   */
  noteRuntimeStep(uid: string, step: RuntimeStep): void {
    const owned = this.#memory.get(uid);
    if (owned) this.#memory.record(owned, { ...step, pid: this.#pid });
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
    const emit = (event: SessionEvent): void => this.#events.emit(event);
    this.#watches.push(
      watchFolder(inbox.folder, {
        rescanMs,
        onName: (name) => {
          const uid = inbox.uidOfName(name);
          if (uid === undefined) return;
          // a request's removal (its owner took it) is no new request
          if (exists(path.join(inbox.folder, name))) emit({ source: 'store', uid, at: this.#now(), kind: 'request-written' });
          if (leases.holds(uid)) this.#inbox.drain(uid);
        },
        onRescan: () => void this.#inbox.rescan(),
      }),
      watchFolder(checkpoints.folder, {
        rescanMs: 60_000,
        onName: (name) => {
          const uid = checkpoints.uidOfName(name);
          if (uid === undefined) return;
          // written or removed: a reader finds which when it reads it (no look at the file per event)
          emit({ source: 'store', uid, at: this.#now(), kind: 'checkpoint-changed' });
        },
        onRescan: () => {},
      }),
      watchFolder(leases.folder, {
        rescanMs: 60_000,
        onName: (name) => {
          const uid = leases.uidOfName(name);
          if (uid !== undefined) emit({ source: 'store', uid, at: this.#now(), kind: 'lease-changed' });
        },
        onRescan: () => {},
      }),
    );
    const beat = setInterval(() => void this.#ownership.heartbeat(), this.#seams.heartbeatMs ?? DEFAULT_HEARTBEAT_MS);
    beat.unref();
    this.#timers.push(beat);
    this.#unsubscribeRuntime = this.#runtime.subscribe?.((kind, uids) => emit({ source: 'runtime', at: this.#now(), kind, uids }));
  }

  #onEngineEvent(event: PodWorkerEvent): void {
    this.#memory.noteEngineEvent(event);
    this.#persistence.noteEngineEvent(event);
    this.#events.emit({ source: 'engine', event });
  }

  // ---------------------------------------------------------------------------------------------
  // the contract (domain/session-api.ts)

  async listPods(options?: ListPodsOptions): Promise<PodInfo[]> {
    this.#assertOpen();
    return await this.#view.listPods(options);
  }

  async getPod(uid: string): Promise<PodInfo | undefined> {
    this.#assertOpen();
    return await this.#view.getPod(uid);
  }

  async requestKill(request: KillRequest): Promise<KillHandle> {
    this.#assertOpen();
    this.#assertWritable();
    // counted until its intent is marked: kills requested together share one durable batch
    const applied = this.#persistence.applying();
    try {
      return await this.#requestKill(request, applied);
    } finally {
      applied();
    }
  }

  async #requestKill(request: KillRequest, applied: () => void): Promise<KillHandle> {
    const { uid } = request;
    const { leases, checkpoints, inbox } = this.#store;
    // The pod's spec and existence do not need a fresh relist; a recent one (≤ 1 s) will do.
    const runtimePod = (await this.#view.runtimeIndex(request.runtimeMaxAgeMs ?? RECENT_LISTING_MS)).get(uid);
    const known = leases.holds(uid) || runtimePod !== undefined || (await checkpoints.read(uid)) !== undefined;
    if (!known) throw new PodNotFound(uid);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      if (await this.#ownership.adopt(uid, 'kill')) {
        await this.#inbox.applyKill(uid, request, { pid: this.#pid, inbox: false }, runtimePod);
        applied();
        await this.#persistence.flush().catch(() => undefined);
        // write-ahead: a kill whose intent is not on disk was not done (the engine held it); one the
        // API records went ahead beside its write, which is retried until it lands
        if (this.#persistence.notDurable(uid) && request.recordedInApi !== true) {
          const cause = this.#persistence.storageError(uid);
          await this.#persistence.withdraw(uid);
          const code = cause instanceof StoreError ? cause.code : 'EIO';
          const where = cause instanceof StoreError ? cause.path : checkpoints.pathOf(uid);
          throw new StoreError(code, where, `${cause?.message ?? `checkpoint ${where} not written`}; nothing was done to the pod`, { cause });
        }
        return { uid, handledBy: 'local', ownerPid: this.#pid };
      }
      const owner = await leases.inspect(uid);
      if (owner?.alive && owner.record) {
        this.#posted.add(uid);
        await inbox.post({
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
    // a session that deferred the runtime's event stream to its first wait opens it now
    this.#runtime.followEvents?.();
    const outcomes = await waitTerminated(this.#waitDeps, uids, options);
    await this.#takeBackRequests(outcomes);
    return outcomes;
  }

  /**
   * A request outlives nobody: once a pod this session asked another process to kill is terminated
   * or gone, the requests it posted for that pod and nobody applied are taken back (the owner may
   * have released the pod between our look and our post, and then never reads them).
   */
  async #takeBackRequests(outcomes: Map<string, WaitOutcome>): Promise<void> {
    const { inbox } = this.#store;
    for (const [uid, outcome] of outcomes) {
      if (outcome === 'timeout' || !this.#posted.delete(uid)) continue;
      const own = (await inbox.pending(uid).catch(() => [])).filter((r) => r.fromPid === this.#pid);
      await Promise.all(own.map((r) => inbox.acknowledge(r)));
    }
  }

  /**
   * Pods this session drives (holds the lease of) whose termination is not over: what a process that
   * exits must hand on to another driver, so that no pod it drives is dropped.
   */
  drivenUnfinished(): string[] {
    if (this.#closed || this.#options.readOnly) return [];
    return (
      [...this.#engine.snapshot().values()]
        // still terminating: a terminated pod's cleanup is what close() waits for (bounded), and what
        // housekeeping finishes; handing it on would say "still terminating" of a pod that is not
        .filter((v) => this.#store.leases.holds(v.uid) && !v.finished && workerStateOf(v) === 'terminating')
        .map((v) => v.uid)
    );
  }

  /** The desired pods the API server lists for this node (sync-known's `api` source). */
  apiDesiredPods(): Promise<V1Pod[]> {
    this.#assertOpen();
    return this.#syncDeps.desiredPods();
  }

  async syncKnown(desired: V1Pod[] | undefined, options?: SyncKnownCallOptions): Promise<SyncKnownResult> {
    this.#assertOpen();
    this.#assertWritable();
    return await syncKnown(this.#syncDeps, desired, options);
  }

  subscribe(listener: (event: SessionEvent) => void): () => void {
    return this.#events.subscribe(listener);
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('the session is closed');
  }

  #assertWritable(): void {
    if (this.#options.readOnly) throw new Error('this session is read-only: open it without readOnly to act on pods');
  }

  async #shutdown(): Promise<void> {
    // the flush below writes every pod's progress once, after the cleanup waited for: none on a timer meanwhile
    this.#persistence.holdScheduledFlushes();
    for (const watch of this.#watches) watch.close();
    for (const timer of this.#timers) clearInterval(timer);
    this.#unsubscribeRuntime?.();
    // Requests that arrived for our pods are applied (recorded) before we stop. Reading the inbox
    // overlaps the wait for the cleanup of pods that just terminated; a pod that turned to its
    // cleanup meanwhile (a request applied, an adoption settled) is waited for after them, within
    // the same bound.
    const cleanupBound = Date.now() + CLEANUP_ON_CLOSE_MS;
    await Promise.all([this.#inbox.applyPendingOfHeld(), settleTerminated(this.#engine, CLEANUP_ON_CLOSE_MS)]);
    await this.#ownership.settled();
    await settleTerminated(this.#engine, Math.max(0, cleanupBound - Date.now()));
    this.#closed = true;
    await this.#engine.close();
    // Every engine event of an owned pod marked it dirty (the subscription is still on), and a
    // failed write left its pods dirty: flushing what is dirty leaves every held pod's checkpoint
    // current, without rewriting those already on disk.
    let persisted = true;
    await this.#persistence.flush().catch((error: unknown) => {
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
