/**
 * The pod workers: one serial worker per pod UID that drives the pod through sync → terminating →
 * terminated → finished (the kubelet's podWorkers).
 *
 * Invariants:
 * - One worker per UID, and it runs at most one syncer call at a time. `updatePod` and
 *   `syncKnownPods` only record intent and wake the worker later (a microtask); they never sync.
 * - A newer pending update replaces an older one: intermediate states may be skipped, the latest
 *   always arrives. The worker awaits `beforeWorkerWakes(uid)` once per wake-up, then consumes it.
 * - `working` is true from the moment an update is pending until the worker has finished with it;
 *   a static pod waiting for its turn keeps its pending update and is not working.
 * - A pod's lifecycle only moves forward; termination, once requested, cannot be undone for that
 *   UID until `syncKnownPods` forgets the finished record. Grace periods only shrink; a shorter
 *   grace or a new termination aborts the in-flight sync so the terminating step reruns at once.
 * - Each kill's `onComplete` is called exactly once: when the pod is terminated, at once when it
 *   already is (or is forgotten, or the kill does not apply), never twice.
 * - Static pods sharing a full name start one at a time, in arrival order.
 * - Every transition emits a typed event synchronously, in order; every timestamp comes from the clock.
 */
import { EventFanout, callSafely } from './events.js';
import { calculateEffectiveGracePeriod, RUNTIME_POD_GRACE_SECONDS } from './grace.js';
import { mergeLastUpdate } from './merge.js';
import { placeholderPodOf, uidOfPod } from './pods.js';
import { isStaticPod, isTerminalPhase, podFullName } from './pod-kinds.js';
import { TimerWorkQueue } from './queue.js';
import { decideRequeue, errorMessageOf, jitter, BACKOFF_JITTER_FACTOR } from './requeue.js';
import { recordFromView, replayUpdateFor } from './restore.js';
import { StaticPodStarts } from './static-pods.js';
import { copyUpdate, isPodStatusCacheTerminal, newUpdate, PodSyncRecord, viewOfRecord, type PodUpdate } from './status.js';
import type {
  Clock,
  EventRecorder,
  KillPodOptions,
  PodStatus,
  PodStatusCache,
  PodSyncer,
  PodSyncStatusView,
  PodWorkerEvent,
  PodWorkers,
  PodWorkersOptions,
  PodWorkerState,
  PodWorkerSync,
  SyncPhase,
  UpdatePodOptions,
  V1Pod,
  V1PodStatus,
  WorkQueue,
} from './types.js';

export const DEFAULT_RESYNC_INTERVAL_MS = 60_000;
export const DEFAULT_BACKOFF_PERIOD_MS = 10_000;
/** How long close() waits for aborted syncs to return. */
const CLOSE_WAIT_MS = 5_000;

const systemClock: Clock = { now: () => Date.now() };

/** The wake-up state of one pod's worker (the kubelet's per-pod channel and goroutine). */
interface WorkerHandle {
  /** A wake-up is owed (the buffered notification). */
  signalled: boolean;
  /** The worker loop is scheduled or running. */
  running: boolean;
  /** When the last syncer call ended; the next status must be at least this fresh. */
  lastSyncTime: number;
  loop: Promise<void> | undefined;
}

/** What `startPodSync` hands the worker loop. */
interface StartedWork {
  update: PodUpdate;
  workType: PodWorkerState;
  signal: AbortSignal;
  canStart: boolean;
  canEverStart: boolean;
}

interface IdleWaiter {
  except: Set<string> | undefined;
  resolve: () => void;
}

/** Options for `whenIdle`. */
export interface WhenIdleOptions {
  /** UIDs whose work is ignored (e.g. workers a test holds back). */
  except?: Iterable<string>;
}

/** State a test may inject to exercise one transition in isolation (in-package tests only). */
export interface EngineInternals {
  statuses: Map<string, PodSyncRecord>;
  staticPods: StaticPodStarts;
}

/**
 * The engine behind `createPodWorkers`. Besides the PodWorkers surface it exposes, for in-package
 * tests only, the kubelet's internal transitions `allowPodStart` and `removeTerminatedWorker`
 * and the injectable `EngineInternals` (the kubelet's tests reach the same internals).
 */
/** The cache's latest status; a cache that fails to answer counts as "nothing cached". */
function cachedStatusOrNothing(cache: PodStatusCache, uid: string): PodStatus | undefined {
  try {
    return cache.get(uid);
  } catch {
    return undefined;
  }
}

export class PodWorkerEngine implements PodWorkers {
  readonly #syncer: PodSyncer;
  readonly #cache: PodStatusCache;
  readonly #queue: WorkQueue;
  readonly #ownQueue: TimerWorkQueue | undefined;
  readonly #clock: Clock;
  readonly #resyncIntervalMs: number;
  readonly #backOffPeriodMs: number;
  readonly #recorder: EventRecorder | undefined;
  readonly #beforeWorkerWakes: ((uid: string) => Promise<void | boolean> | void | boolean) | undefined;
  readonly #events = new EventFanout();

  /** Every tracked pod by UID (the kubelet's podSyncStatuses). */
  readonly #statuses: Map<string, PodSyncRecord>;
  readonly #static: StaticPodStarts;
  /** Live workers by UID (the kubelet's podUpdates channels). */
  readonly #workers = new Map<string, WorkerHandle>();
  /** UIDs whose record is `working`. */
  readonly #working = new Set<string>();
  #idleWaiters: IdleWaiter[] = [];
  /** syncKnownPods ran once: every existing pod has been handed to updatePod. */
  #podsSynced = false;
  #closed = false;

  constructor(options: PodWorkersOptions, internals?: Partial<EngineInternals>) {
    this.#syncer = options.syncer;
    this.#cache = options.cache;
    this.#clock = options.clock ?? systemClock;
    this.#resyncIntervalMs = options.resyncIntervalMs ?? DEFAULT_RESYNC_INTERVAL_MS;
    this.#backOffPeriodMs = options.backOffPeriodMs ?? DEFAULT_BACKOFF_PERIOD_MS;
    this.#recorder = options.recorder;
    this.#beforeWorkerWakes = options.beforeWorkerWakes;
    if (options.workQueue !== undefined) {
      this.#queue = options.workQueue;
    } else {
      this.#ownQueue = new TimerWorkQueue((uid) => this.#resyncFromQueue(uid));
      this.#queue = this.#ownQueue;
    }
    if (options.onEvent !== undefined) this.#events.subscribe(options.onEvent);
    this.#statuses = internals?.statuses ?? new Map<string, PodSyncRecord>();
    this.#static = internals?.staticPods ?? new StaticPodStarts();
  }

  // ---------------------------------------------------------------------------------------------
  // updatePod: record intent, decide transitions, wake the worker

  updatePod(options: UpdatePodOptions): void {
    if (this.#closed) throw new Error('pod workers are closed');
    const runningPod = options.runningPod;
    const pod = options.pod;
    const kill = options.killPodOptions;
    let isRuntimePod = false;
    let uid: string;
    let name: string | undefined;
    let namespace: string | undefined;
    if (pod === undefined) {
      if (runningPod === undefined) throw new TypeError('updatePod needs a pod or a runningPod');
      if (options.updateType !== 'kill') {
        // runtime-only pods can only be killed; the kill request does not apply, so it is done
        callSafely(kill?.onComplete);
        return;
      }
      uid = runningPod.id;
      name = runningPod.name;
      namespace = runningPod.namespace;
      isRuntimePod = true;
    } else {
      // a runningPod next to a pod is ignored: the spec wins
      uid = uidOfPod(pod);
      name = pod.metadata?.name;
      namespace = pod.metadata?.namespace;
    }

    const now = this.#clock.now();
    let record = this.#statuses.get(uid);
    const firstTime = record === undefined;
    if (record === undefined) {
      record = this.#newRecord(uid, podFullName(name, namespace), now, pod);
    }
    const before: PodWorkerState | 'new' = firstTime ? 'new' : record.state();

    const update = newUpdate(options.updateType, isRuntimePod ? undefined : pod, options.mirrorPod, isRuntimePod ? runningPod : undefined, kill, options.startTime);

    // A runtime pod carries no spec: prefer the newest spec we know, else reason on a placeholder.
    let effectivePod: V1Pod;
    if (isRuntimePod) {
      record.observedRuntime = true;
      const known = record.pendingUpdate?.pod ?? record.activeUpdate?.pod;
      if (known !== undefined) {
        effectivePod = known;
        update.pod = known;
        update.runningPod = undefined;
      } else {
        effectivePod = placeholderPodOf(runningPod!);
      }
    } else {
      effectivePod = pod!;
    }

    // A create for a UID already terminating: two pods with one UID (usually static). Remember it,
    // so the finished record is forgotten at the next syncKnownPods and the new pod can start.
    if (!firstTime && record.isTerminationRequested() && options.updateType === 'create') {
      record.restartRequested = true;
      if (this.#events.active) this.#emit({ type: 'restart-requested', uid, fullname: record.fullname, at: now });
      this.#settleUnusedKill(record, kill);
      return;
    }

    // A finished UID ignores everything until syncKnownPods forgets it.
    if (record.finished) {
      callSafely(kill?.onComplete);
      return;
    }

    const becameTerminating = this.#detectTermination(record, effectivePod, isRuntimePod, options.updateType, kill, now);

    // Once terminating, every update is a kill and the grace period can only shrink.
    let shortenedFrom: number | undefined;
    if (record.isTerminated()) {
      callSafely(kill?.onComplete);
      // a stale runtime-only kill for a pod that is only waiting for cleanup is ignored
      if (isRuntimePod) return;
      update.killPodOptions = undefined;
    } else if (record.isTerminationRequested()) {
      const options_: KillPodOptions = kill !== undefined ? { ...kill } : {};
      if (options_.onComplete !== undefined) (record.notifyPostTerminating ??= []).push(options_.onComplete);
      if (options_.podStatusFunc !== undefined) (record.statusPostTerminating ??= []).push(options_.podStatusFunc);
      const previous = record.gracePeriod;
      const { gracePeriod, shortened } = calculateEffectiveGracePeriod(record, effectivePod, options_);
      if (shortened) shortenedFrom = previous;
      record.gracePeriod = gracePeriod;
      // always hand syncTerminatingPod the decided value
      options_.gracePeriodSecondsOverride = gracePeriod;
      update.killPodOptions = options_;
    } else if (kill !== undefined) {
      // kill options mean nothing to a pod that keeps running
      callSafely(kill.onComplete);
      update.killPodOptions = undefined;
    }

    if (!this.#workers.has(uid)) {
      this.#workers.set(uid, newHandle());
      // static pods start in the order updatePod first saw them
      if (isStaticPod(effectivePod)) this.#static.addWaiting(record.fullname, uid);
    }

    // keep the oldest start time (latency of the update that has waited longest)
    const pending = record.pendingUpdate;
    if (pending?.startTime !== undefined && update.startTime !== undefined && pending.startTime < update.startTime) {
      update.startTime = pending.startTime;
    }
    record.pendingUpdate = update;
    this.#setWorking(uid, record, true);

    if (this.#events.active) {
      const fullname = record.fullname;
      const after = record.state();
      if (after !== before) this.#emit({ type: 'state-changed', uid, fullname, at: now, from: before, to: after });
      if (becameTerminating) {
        this.#emit({ type: 'termination-requested', uid, fullname, at: now, gracePeriod: record.gracePeriod, evicted: record.evicted, deleted: record.deleted });
      }
      if (shortenedFrom !== undefined) {
        this.#emit({ type: 'grace-shortened', uid, fullname, at: now, from: shortenedFrom, to: record.gracePeriod });
      }
      this.#emit({ type: 'update-queued', uid, fullname, at: now, updateType: options.updateType });
    }
    this.#wake(uid);

    // cancel the in-flight sync so the worker reruns at once with the new intent (an idle worker
    // has nothing to cancel: its next sync already sees the new state)
    if ((becameTerminating || shortenedFrom !== undefined) && record.syncing && record.abort !== undefined) {
      record.abort.abort(syncCancelled());
    }
  }

  #newRecord(uid: string, fullname: string, now: number, pod: V1Pod | undefined): PodSyncRecord {
    const record = new PodSyncRecord(fullname, now);
    // A terminal pod seen for the first time (usually after a restart) whose cached runtime status
    // shows nothing running already went through termination: it only needs the terminated step.
    if (pod !== undefined && isTerminalPhase(pod)) {
      const cached = cachedStatusOrNothing(this.#cache, uid);
      if (cached !== undefined && isPodStatusCacheTerminal(cached)) {
        record.terminatingAt = now;
        record.terminatedAt = now;
        record.startedTerminating = true;
      }
    }
    this.#statuses.set(uid, record);
    return record;
  }

  /** Marks a transition to terminating if the update calls for one; true when it did. */
  #detectTermination(record: PodSyncRecord, pod: V1Pod, isRuntimePod: boolean, updateType: UpdatePodOptions['updateType'], kill: KillPodOptions | undefined, now: number): boolean {
    if (record.isTerminationRequested()) return false;
    if (isRuntimePod) {
      // orphaned: no config left, must be torn down
      record.deleted = true;
    } else if (pod.metadata?.deletionTimestamp !== undefined && pod.metadata.deletionTimestamp !== null) {
      record.deleted = true;
    } else if (isTerminalPhase(pod)) {
      // Succeeded/Failed: tear down
    } else if (updateType === 'kill') {
      if (kill?.evict) record.evicted = true;
    } else {
      return false;
    }
    record.terminatingAt = now;
    return true;
  }

  /** Kill options of an update that is not applied: complete now unless termination is still underway. */
  #settleUnusedKill(record: PodSyncRecord, kill: KillPodOptions | undefined): void {
    const onComplete = kill?.onComplete;
    if (onComplete === undefined) return;
    if (record.isTerminationRequested() && !record.isTerminated()) (record.notifyPostTerminating ??= []).push(onComplete);
    else callSafely(onComplete);
  }

  // ---------------------------------------------------------------------------------------------
  // the worker loop

  #wake(uid: string): void {
    if (this.#closed) return;
    let handle = this.#workers.get(uid);
    if (handle === undefined) {
      handle = newHandle();
      this.#workers.set(uid, handle);
    }
    handle.signalled = true;
    if (!handle.running) {
      handle.running = true;
      const h = handle;
      h.loop = Promise.resolve().then(() => this.#workerLoop(uid, h));
    }
  }

  async #workerLoop(uid: string, handle: WorkerHandle): Promise<void> {
    try {
      while (handle.signalled && !this.#closed && this.#workers.get(uid) === handle) {
        if (this.#beforeWorkerWakes !== undefined) {
          let ready: void | boolean = true;
          try {
            ready = await this.#beforeWorkerWakes(uid);
          } catch {
            // a failing seam does not stop the worker
          }
          if (this.#closed || this.#workers.get(uid) !== handle) return;
          if (ready === false) {
            this.#holdForWriteAhead(uid);
            return;
          }
        }
        handle.signalled = false;
        const work = this.#startPodSync(uid, handle);
        if (work === undefined) continue;
        if (!work.canEverStart) return;
        if (!work.canStart) continue;
        if (await this.#runSync(uid, handle, work)) return;
      }
    } finally {
      handle.running = false;
    }
  }

  /**
   * Consumes the pending update: decides whether the pod is (or may be) started and makes the
   * update visible as `activeUpdate` once it is. A static pod that must wait keeps its pending
   * update; a pod terminated before it could start is cleaned up and finished.
   */
  #startPodSync(uid: string, handle: WorkerHandle): StartedWork | undefined {
    const record = this.#statuses.get(uid);
    if (record === undefined) return undefined;
    const update = record.pendingUpdate;
    if (update === undefined) {
      // woken without work: nothing to do
      this.#setWorking(uid, record, false);
      return undefined;
    }
    const workType = record.state();
    record.pendingUpdate = undefined;
    handle.signalled = false;

    if (record.abort === undefined || record.abort.signal.aborted) record.abort = new AbortController();
    const signal = record.abort.signal;

    if (record.isStarted()) {
      mergeLastUpdate(record, update);
      return { update, workType, signal, canStart: true, canEverStart: true };
    }
    // a runtime-only pod that is terminating may "start" straight into termination
    if (update.runningPod !== undefined && workType === 'terminating') {
      mergeLastUpdate(record, update);
      return { update, workType, signal, canStart: true, canEverStart: true };
    }
    if (update.pod === undefined) {
      // a runtime-only pod can never start; there is nothing this worker can do with it
      mergeLastUpdate(record, update);
      this.#setWorking(uid, record, false);
      return { update, workType, signal, canStart: false, canEverStart: false };
    }
    const { canStart, canEverStart } = this.allowPodStart(update.pod);
    if (!canEverStart) {
      this.#cleanupUnstartedPod(uid, record);
      return { update, workType, signal, canStart, canEverStart };
    }
    if (!canStart) {
      record.pendingUpdate = update;
      this.#setWorking(uid, record, false);
      return { update, workType, signal, canStart, canEverStart };
    }
    record.startedAt = this.#clock.now();
    mergeLastUpdate(record, update);
    return { update, workType, signal, canStart: true, canEverStart: true };
  }

  /** Runs one syncer call and applies its outcome; true when the worker is done for good. */
  async #runSync(uid: string, handle: WorkerHandle, work: StartedWork): Promise<boolean> {
    const { update, workType, signal } = work;
    const phase: SyncPhase = workType === 'terminated' ? 'terminated' : workType === 'terminating' ? (update.runningPod !== undefined ? 'terminating-runtime' : 'terminating') : 'sync';
    const fullname = this.#statuses.get(uid)?.fullname ?? '';
    if (this.#events.active) this.#emit({ type: 'sync-started', uid, fullname, at: this.#clock.now(), phase });

    let isTerminal = false;
    let failed = false;
    let error: unknown;
    const record = this.#statuses.get(uid);
    if (record !== undefined) record.syncing = true;
    try {
      isTerminal = await this.#callSyncer(uid, handle, update, workType, signal);
    } catch (e) {
      failed = true;
      error = e;
    } finally {
      if (record !== undefined) record.syncing = false;
    }
    if (this.#closed) return true;

    let phaseTransition = false;
    if (!failed) {
      if (this.#events.active) this.#emit({ type: 'sync-succeeded', uid, fullname, at: this.#clock.now(), phase });
      if (workType === 'terminated') {
        this.#completeTerminated(uid);
        return true;
      }
      if (workType === 'terminating') {
        if (update.runningPod !== undefined) {
          this.#completeTerminatingRuntimePod(uid);
          return true;
        }
        this.#completeTerminating(uid);
        phaseTransition = true;
      } else if (isTerminal) {
        this.#completeSync(uid);
        phaseTransition = true;
      }
    }
    this.#completeWork(uid, fullname, phase, phaseTransition, failed, error, failed && signal.aborted);
    return false;
  }

  /** Fetches a fresh enough status (unless runtime-only) and dispatches to the syncer. */
  async #callSyncer(uid: string, handle: WorkerHandle, update: PodUpdate, workType: PodWorkerState, signal: AbortSignal): Promise<boolean> {
    let status: PodStatus | undefined;
    const pod = update.pod;
    if (update.runningPod === undefined) {
      if (pod === undefined) throw new Error(`pod ${uid} has neither a pod nor a running pod to sync`);
      try {
        status = await this.#cache.getNewerThan(uid, handle.lastSyncTime, signal);
      } catch (e) {
        if (!signal.aborted) this.#recorder?.event(pod, 'Warning', 'FailedSync', `error determining status: ${errorMessageOf(e)}`);
        throw e;
      }
    }
    try {
      switch (workType) {
        case 'terminated':
          await this.#syncer.syncTerminatedPod(signal, pod!, status);
          return false;
        case 'terminating': {
          const gracePeriod = update.killPodOptions?.gracePeriodSecondsOverride;
          const statusFn = this.#acknowledgeTerminating(uid);
          if (update.runningPod !== undefined) await this.#syncer.syncTerminatingRuntimePod(signal, update.runningPod);
          else await this.#syncer.syncTerminatingPod(signal, pod!, status, gracePeriod, statusFn);
          return false;
        }
        default:
          return (await this.#syncer.syncPod(signal, update.updateType, pod!, update.mirrorPod, status)) === true;
      }
    } finally {
      handle.lastSyncTime = this.#clock.now();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // transitions: look up, guard, stamp the clock, requeue

  /** The worker saw the termination request: no container may start from now on. */
  #acknowledgeTerminating(uid: string): ((s: V1PodStatus) => void) | undefined {
    const record = this.#statuses.get(uid);
    if (record === undefined) return undefined;
    if (record.terminatingAt !== undefined) record.startedTerminating = true;
    const fns = record.statusPostTerminating;
    return fns !== undefined && fns.length > 0 ? fns[fns.length - 1] : undefined;
  }

  /** syncPod reported the pod terminal (its natural end): move to terminating now. */
  #completeSync(uid: string): void {
    const record = this.#statuses.get(uid);
    if (record === undefined) return;
    const now = this.#clock.now();
    const became = record.terminatingAt === undefined;
    if (became) record.terminatingAt = now;
    record.startedTerminating = true;
    if (became && this.#events.active) {
      const fullname = record.fullname;
      this.#emit({ type: 'state-changed', uid, fullname, at: now, from: 'sync', to: 'terminating' });
      this.#emit({ type: 'termination-requested', uid, fullname, at: now, gracePeriod: record.gracePeriod, evicted: record.evicted, deleted: record.deleted });
    }
    this.#requeueLastPodUpdate(uid, record);
  }

  /** syncTerminatingPod succeeded: no container runs or will start; move to terminated now. */
  #completeTerminating(uid: string): void {
    const record = this.#statuses.get(uid);
    if (record === undefined) return;
    const now = this.#clock.now();
    record.terminatedAt = now;
    if (this.#events.active) this.#emit({ type: 'state-changed', uid, fullname: record.fullname, at: now, from: 'terminating', to: 'terminated' });
    this.#notifyTerminated(record);
    record.statusPostTerminating = undefined;
    this.#requeueLastPodUpdate(uid, record);
  }

  /** A runtime-only pod is stopped: nothing more to do, and nothing to remember. */
  #completeTerminatingRuntimePod(uid: string): void {
    this.#workers.delete(uid);
    const record = this.#statuses.get(uid);
    if (record === undefined) return;
    const now = this.#clock.now();
    const before = record.state();
    record.terminatedAt = now;
    record.finished = true;
    this.#setWorking(uid, record, false);
    this.#static.release(record.fullname, uid);
    record.abort = undefined;
    this.#statuses.delete(uid);
    if (this.#events.active) {
      const fullname = record.fullname;
      if (before !== 'terminated') this.#emit({ type: 'state-changed', uid, fullname, at: now, from: before, to: 'terminated' });
      this.#emit({ type: 'finished', uid, fullname, at: now });
      this.#emit({ type: 'forgotten', uid, fullname, at: now });
    }
    this.#notifyTerminated(record);
  }

  /** syncTerminatedPod succeeded: the pod is finished; the worker stops. */
  #completeTerminated(uid: string): void {
    this.#workers.delete(uid);
    const record = this.#statuses.get(uid);
    if (record === undefined) return;
    record.finished = true;
    this.#setWorking(uid, record, false);
    this.#static.release(record.fullname, uid);
    record.abort = undefined;
    if (this.#events.active) this.#emit({ type: 'finished', uid, fullname: record.fullname, at: this.#clock.now() });
  }

  /** A pod terminated before it could ever start: finished without any syncer call. */
  #cleanupUnstartedPod(uid: string, record: PodSyncRecord): void {
    this.#workers.delete(uid);
    const now = this.#clock.now();
    const before = record.state();
    record.finished = true;
    record.terminatedAt = now;
    this.#setWorking(uid, record, false);
    this.#static.release(record.fullname, uid);
    record.abort = undefined;
    if (this.#events.active) {
      if (before !== 'terminated') this.#emit({ type: 'state-changed', uid, fullname: record.fullname, at: now, from: before, to: 'terminated' });
      this.#emit({ type: 'finished', uid, fullname: record.fullname, at: now });
    }
    this.#notifyTerminated(record);
  }

  /** Calls (once) and drops every onComplete waiting for this pod's termination. */
  #notifyTerminated(record: PodSyncRecord): void {
    const callbacks = record.notifyPostTerminating;
    if (callbacks === undefined) return;
    record.notifyPostTerminating = undefined;
    for (const fn of callbacks) callSafely(fn);
  }

  /** Queues the next wake-up per the requeue policy, then continues with pending work or goes idle. */
  #completeWork(uid: string, fullname: string, phase: SyncPhase, phaseTransition: boolean, failed: boolean, error: unknown, aborted: boolean): void {
    const decision = decideRequeue(phaseTransition, error, failed, this.#resyncIntervalMs, this.#backOffPeriodMs);
    if (failed && this.#events.active) {
      this.#emit({ type: 'sync-failed', uid, fullname, at: this.#clock.now(), phase, error: errorMessageOf(error), retryInMs: decision.delayMs, aborted });
    }
    this.#enqueue(uid, fullname, decision.delayMs, decision.reason);
    const record = this.#statuses.get(uid);
    if (record === undefined) return;
    if (record.pendingUpdate !== undefined) this.#wake(uid);
    else this.#setWorking(uid, record, false);
  }

  #enqueue(uid: string, fullname: string, delayMs: number, reason: 'phase-change' | 'resync' | 'network-not-ready' | 'backoff' | 'write-ahead'): void {
    if (this.#closed) return;
    this.#queue.enqueue(uid, delayMs);
    if (this.#events.active) this.#emit({ type: 'requeued', uid, fullname, at: this.#clock.now(), delayMs, reason });
  }

  /** Replays the last acted-on update, unless an update is already pending or there is none. */
  #requeueLastPodUpdate(uid: string, record: PodSyncRecord): void {
    if (record.pendingUpdate !== undefined || record.activeUpdate === undefined) return;
    record.pendingUpdate = copyUpdate(record.activeUpdate);
    this.#setWorking(uid, record, true);
    if (this.#events.active) this.#emit({ type: 'requeued', uid, fullname: record.fullname, at: this.#clock.now(), delayMs: 0, reason: 'replay' });
    this.#wake(uid);
  }

  /** The default queue's due callback: re-sync the pod as the kubelet's sync loop would. */
  /**
   * The write-ahead of the pod's intent failed: its pending update stays pending (nothing is done
   * that is not durable), the pod is not working (as a static pod waiting for its turn), and the
   * update is tried again after the back-off period.
   */
  #holdForWriteAhead(uid: string): void {
    const record = this.#statuses.get(uid);
    if (record === undefined || record.pendingUpdate === undefined) return;
    this.#setWorking(uid, record, false);
    this.#enqueue(uid, record.fullname, jitter(this.#backOffPeriodMs, BACKOFF_JITTER_FACTOR), 'write-ahead');
  }

  #resyncFromQueue(uid: string): void {
    if (this.#closed) return;
    const record = this.#statuses.get(uid);
    if (record === undefined || record.finished) return;
    if (record.pendingUpdate !== undefined) {
      // e.g. a static pod waiting for its turn: try again
      if (!record.working) {
        this.#setWorking(uid, record, true);
        this.#wake(uid);
      }
      return;
    }
    if (record.activeUpdate === undefined) return;
    record.pendingUpdate = copyUpdate(record.activeUpdate);
    this.#setWorking(uid, record, true);
    this.#wake(uid);
  }

  // ---------------------------------------------------------------------------------------------
  // static pods

  /**
   * Whether the pod may start now (`canStart`) and ever (`canEverStart`). A static pod whose full
   * name is held by another UID is requeued with back-off.
   */
  allowPodStart(pod: V1Pod): { canStart: boolean; canEverStart: boolean } {
    if (!isStaticPod(pod)) return { canStart: true, canEverStart: true };
    const uid = uidOfPod(pod);
    const record = this.#statuses.get(uid);
    if (record === undefined) return { canStart: false, canEverStart: false };
    if (record.isTerminationRequested()) return { canStart: false, canEverStart: false };
    if (!this.#static.allowStart(record.fullname, uid, (u) => this.#statuses.get(u))) {
      this.#enqueue(uid, record.fullname, jitter(this.#backOffPeriodMs, BACKOFF_JITTER_FACTOR), 'backoff');
      return { canStart: false, canEverStart: true };
    }
    return { canStart: true, canEverStart: true };
  }

  // ---------------------------------------------------------------------------------------------
  // syncKnownPods and forgetting

  syncKnownPods(desiredPods: V1Pod[]): Map<string, PodWorkerSync> {
    if (this.#closed) throw new Error('pod workers are closed');
    const known = new Set<string>();
    for (const pod of desiredPods) known.add(uidOfPod(pod));
    this.#podsSynced = true;
    const workers = new Map<string, PodWorkerSync>();
    for (const [uid, record] of this.#statuses) {
      const orphan = !known.has(uid);
      if ((record.restartRequested || orphan) && this.removeTerminatedWorker(uid, record, orphan)) continue;
      const sync: PodWorkerSync = { state: record.state(), orphan, hasConfig: false, static: false };
      const config = record.activeUpdate !== undefined ? record.activeUpdate.pod : record.pendingUpdate?.pod;
      if (config !== undefined) {
        sync.hasConfig = true;
        sync.static = isStaticPod(config);
      }
      workers.set(uid, sync);
    }
    return workers;
  }

  /**
   * Forgets a finished pod (true), or — for an orphan that is not finished — drives it to
   * completion: an orphan never started is forgotten at once; a running orphan starts terminating;
   * a terminating or terminated orphan gets its last update replayed.
   */
  removeTerminatedWorker(uid: string, record: PodSyncRecord, orphaned: boolean): boolean {
    if (!record.finished) {
      if (!orphaned) return false;
      // every orphan counts as deleted
      record.deleted = true;
      if (record.isStarted() || record.observedRuntime) {
        if (!record.isTerminationRequested()) {
          const now = this.#clock.now();
          record.terminatingAt = now;
          const pod = record.activeUpdate?.pod;
          record.gracePeriod = pod !== undefined ? calculateEffectiveGracePeriod(record, pod).gracePeriod : RUNTIME_POD_GRACE_SECONDS;
          if (this.#events.active) {
            const fullname = record.fullname;
            this.#emit({ type: 'state-changed', uid, fullname, at: now, from: 'sync', to: 'terminating' });
            this.#emit({ type: 'termination-requested', uid, fullname, at: now, gracePeriod: record.gracePeriod, evicted: record.evicted, deleted: true });
          }
        }
        this.#requeueLastPodUpdate(uid, record);
        return false;
      }
      // never started and never seen running: safe to forget without any sync
    }
    this.#forget(uid, record);
    return true;
  }

  #forget(uid: string, record: PodSyncRecord): void {
    this.#statuses.delete(uid);
    this.#workers.delete(uid);
    this.#static.release(record.fullname, uid);
    if (record.working) this.#setWorking(uid, record, false);
    record.abort = undefined;
    if (this.#events.active) this.#emit({ type: 'forgotten', uid, fullname: record.fullname, at: this.#clock.now() });
    // the pod no longer exists here: any kill still waiting is complete
    this.#notifyTerminated(record);
  }

  // ---------------------------------------------------------------------------------------------
  // questions other components ask

  isPodKnownTerminated(uid: string): boolean {
    return this.#statuses.get(uid)?.isTerminated() ?? false;
  }

  couldHaveRunningContainers(uid: string): boolean {
    const record = this.#statuses.get(uid);
    if (record !== undefined) return !record.isTerminated();
    return !this.#podsSynced;
  }

  shouldPodBeFinished(uid: string): boolean {
    const record = this.#statuses.get(uid);
    if (record !== undefined) return record.finished;
    return this.#podsSynced;
  }

  isPodTerminationRequested(uid: string): boolean {
    return this.#statuses.get(uid)?.isTerminationRequested() ?? false;
  }

  shouldPodContainersBeTerminating(uid: string): boolean {
    const record = this.#statuses.get(uid);
    if (record !== undefined) return record.startedTerminating;
    return this.#podsSynced;
  }

  shouldPodRuntimeBeRemoved(uid: string): boolean {
    const record = this.#statuses.get(uid);
    if (record !== undefined) return record.isTerminated();
    return this.#podsSynced;
  }

  shouldPodContentBeRemoved(uid: string): boolean {
    const record = this.#statuses.get(uid);
    if (record !== undefined) return record.evicted || (record.deleted && record.isTerminated());
    return this.#podsSynced;
  }

  isPodForMirrorPodTerminatingByFullName(podFullName: string): boolean {
    const uid = this.#static.started.get(podFullName);
    if (uid === undefined) return false;
    const record = this.#statuses.get(uid);
    if (record === undefined) return false;
    return record.isTerminationRequested() && !record.isTerminated();
  }

  // ---------------------------------------------------------------------------------------------
  // views, idleness, events, lifecycle

  snapshot(): Map<string, PodSyncStatusView> {
    const views = new Map<string, PodSyncStatusView>();
    for (const [uid, record] of this.#statuses) views.set(uid, viewOfRecord(uid, record));
    return views;
  }

  /** One pod's view, or undefined when the pod is not tracked. */
  statusOf(uid: string): PodSyncStatusView | undefined {
    const record = this.#statuses.get(uid);
    return record === undefined ? undefined : viewOfRecord(uid, record);
  }

  /** Number of tracked pods. */
  get size(): number {
    return this.#statuses.size;
  }

  /** Number of live workers (pods not finished or forgotten). */
  get workerCount(): number {
    return this.#workers.size;
  }

  whenIdle(options?: WhenIdleOptions): Promise<void> {
    const except = options?.except !== undefined ? new Set(options.except) : undefined;
    const waiter: IdleWaiter = { except, resolve: () => {} };
    const promise = new Promise<void>((resolve) => {
      waiter.resolve = resolve;
    });
    if (this.#closed || this.#isIdle(except)) waiter.resolve();
    else this.#idleWaiters.push(waiter);
    return promise;
  }

  #isIdle(except: Set<string> | undefined): boolean {
    if (this.#working.size === 0) return true;
    if (except === undefined || except.size < this.#working.size) return false;
    for (const uid of this.#working) if (!except.has(uid)) return false;
    return true;
  }

  #setWorking(uid: string, record: PodSyncRecord, working: boolean): void {
    record.working = working;
    if (working) {
      this.#working.add(uid);
      return;
    }
    this.#working.delete(uid);
    if (this.#idleWaiters.length === 0) return;
    const waiting: IdleWaiter[] = [];
    for (const waiter of this.#idleWaiters) {
      if (this.#isIdle(waiter.except)) waiter.resolve();
      else waiting.push(waiter);
    }
    this.#idleWaiters = waiting;
  }

  subscribe(listener: (event: PodWorkerEvent) => void): () => void {
    return this.#events.subscribe(listener);
  }

  #emit(event: PodWorkerEvent): void {
    this.#events.emit(event);
  }

  restore(views: Iterable<PodSyncStatusView>): void {
    if (this.#closed) throw new Error('pod workers are closed');
    const list = [...views].sort((a, b) => (a.syncedAt ?? 0) - (b.syncedAt ?? 0));
    const seen = new Set<string>();
    for (const view of list) {
      if (this.#statuses.has(view.uid) || seen.has(view.uid)) {
        throw new Error(`cannot restore pod ${view.uid}: it is already tracked`);
      }
      seen.add(view.uid);
    }
    const now = this.#clock.now();
    for (const view of list) {
      const uid = view.uid;
      const record = recordFromView(view, now);
      this.#statuses.set(uid, record);
      const replay = replayUpdateFor(record, view);
      if (this.#events.active) {
        this.#emit({ type: 'state-changed', uid, fullname: record.fullname, at: now, from: 'new', to: record.state() });
        if (record.finished) this.#emit({ type: 'finished', uid, fullname: record.fullname, at: now });
      }
      if (record.finished) continue;

      this.#workers.set(uid, newHandle());
      const config = record.activeUpdate?.pod ?? replay?.pod;
      if (isStaticPod(config)) {
        if (!record.isStarted()) this.#static.addWaiting(record.fullname, uid);
        else if (!this.#static.started.has(record.fullname)) this.#static.started.set(record.fullname, uid);
      }
      if (replay !== undefined) {
        record.pendingUpdate = replay;
        this.#setWorking(uid, record, true);
        if (this.#events.active) this.#emit({ type: 'update-queued', uid, fullname: record.fullname, at: now, updateType: replay.updateType });
        this.#wake(uid);
      }
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#ownQueue?.close();
    for (const record of this.#statuses.values()) if (record.syncing) record.abort?.abort(new DOMException('pod workers closed', 'AbortError'));
    const loops: Promise<void>[] = [];
    for (const handle of this.#workers.values()) if (handle.loop !== undefined) loops.push(handle.loop);
    this.#workers.clear();
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const waiter of waiters) waiter.resolve();
    // syncers must honour their signal; one that does not cannot hold close() forever
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_WAIT_MS);
      timer.unref?.();
    });
    await Promise.race([Promise.allSettled(loops), bound]);
    clearTimeout(timer);
  }
}

let cancelledReason: DOMException | undefined;
/** The abort reason of a cancelled sync: one shared AbortError (building one per abort is costly). */
function syncCancelled(): DOMException {
  cancelledReason ??= new DOMException('pod sync cancelled: termination requested or grace period shortened', 'AbortError');
  return cancelledReason;
}

function newHandle(): WorkerHandle {
  return { signalled: false, running: false, lastSyncTime: 0, loop: undefined };
}
