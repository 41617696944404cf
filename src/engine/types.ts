/**
 * The pod-worker engine's public types: the contract every other layer (CRI, store, kube, metrics,
 * TUI, services) codes against. This module owns no behaviour and imports no I/O; the only import
 * is type-only (`V1Pod` and friends from @kubernetes/client-node), which costs nothing at run time.
 *
 * Invariants stated here hold for every implementation:
 * - Times are epoch milliseconds (`Clock.now()`); `undefined` means "not set yet".
 * - A pod's lifecycle only moves forward: sync → terminating → terminated → finished.
 * - A pod's grace period (once terminating) only shrinks.
 */
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';

export type { V1Pod, V1PodStatus };

/** Why the worker is asked to act (the kubelet's SyncPodType). */
export type SyncPodType = 'sync' | 'update' | 'create' | 'kill';

/** The phase of a pod worker; `finished` is a flag on top of `terminated`, not a state. */
export type PodWorkerState = 'sync' | 'terminating' | 'terminated';

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

/** Where a worker asks to be woken again for a pod (the kubelet's work queue). */
export interface WorkQueue {
  enqueue(uid: string, delayMs: number): void;
}

/** Records pod-scoped events (the kubelet's EventRecorder, reduced). */
export interface EventRecorder {
  event(pod: V1Pod, type: 'Normal' | 'Warning', reason: string, message: string): void;
}

export type ContainerRuntimeState = 'created' | 'running' | 'exited' | 'unknown';

/** What the runtime says about a pod (the kubelet's kubecontainer.PodStatus, reduced). */
export interface PodStatus {
  id: string;
  name: string;
  namespace: string;
  containerStatuses: {
    id: string;
    name: string;
    state: ContainerRuntimeState;
    exitCode?: number;
    startedAt?: number;
    finishedAt?: number;
  }[];
  sandboxStatuses: { id: string; state: 'ready' | 'notready' }[];
}

/** A pod found in the runtime with no spec (the kubelet's kubecontainer.Pod). */
export interface RunningPod {
  id: string;
  name: string;
  namespace: string;
  containers: { id: string; name: string; state: ContainerRuntimeState }[];
  sandboxes: { id: string; state: 'ready' | 'notready' }[];
}

export interface PodStatusCache {
  /** Latest known status, no waiting. */
  get(uid: string): PodStatus | undefined;
  /** Resolves with a status observed at or after `minTime` (epoch ms); rejects when `signal` aborts. */
  getNewerThan(uid: string, minTime: number, signal?: AbortSignal): Promise<PodStatus>;
}

export interface KillPodOptions {
  /** Called exactly once: when termination completes, or at once if the pod is already terminated. */
  onComplete?: () => void;
  evict?: boolean;
  podStatusFunc?: (status: V1PodStatus) => void;
  gracePeriodSecondsOverride?: number;
}

export interface UpdatePodOptions {
  updateType: SyncPodType;
  startTime?: number;
  /** Required unless runningPod is set. */
  pod?: V1Pod;
  mirrorPod?: V1Pod;
  runningPod?: RunningPod;
  killPodOptions?: KillPodOptions;
}

export interface PodWorkerSync {
  state: PodWorkerState;
  orphan: boolean;
  hasConfig: boolean;
  static: boolean;
}

/**
 * The four lifecycle operations the worker drives. A thrown error means "retry later with backoff".
 * When `signal` aborts, the method rejects (with signal.reason or an AbortError) unless it finished.
 */
export interface PodSyncer {
  /** Returns true when the pod is now terminal (it will never run again). */
  syncPod(signal: AbortSignal, updateType: SyncPodType, pod: V1Pod, mirrorPod: V1Pod | undefined, podStatus: PodStatus | undefined): Promise<boolean>;
  /** Repeatedly invoked with diminishing grace periods until it returns without error. */
  syncTerminatingPod(signal: AbortSignal, pod: V1Pod, podStatus: PodStatus | undefined, gracePeriodSeconds: number | undefined, podStatusFn: ((s: V1PodStatus) => void) | undefined): Promise<void>;
  /** Terminates a pod known only from the runtime (no spec): grace 1. */
  syncTerminatingRuntimePod(signal: AbortSignal, runningPod: RunningPod): Promise<void>;
  /** Cleans up after all containers stopped; invoked until it returns without error. */
  syncTerminatedPod(signal: AbortSignal, pod: V1Pod, podStatus: PodStatus | undefined): Promise<void>;
}

/** An update as it is stored and shown: the kill options without their callbacks. */
export interface UpdateView {
  updateType: SyncPodType;
  startTime?: number;
  pod?: V1Pod;
  mirrorPod?: V1Pod;
  runningPod?: RunningPod;
  killPodOptions?: { evict?: boolean; gracePeriodSecondsOverride?: number };
}

/**
 * Read-only copy of one pod's sync status (the reference's podSyncStatus without functions).
 * The state is derived (see `workerStateOf`), never stored twice.
 */
export interface PodSyncStatusView {
  uid: string;
  /** `${name}_${namespace}` */
  fullname: string;
  /** An update is pending or being processed. */
  working: boolean;
  syncedAt?: number;
  startedAt?: number;
  /** Set once termination is requested; never cleared. */
  terminatingAt?: number;
  /** Set once no container can be running and none will be started. */
  terminatedAt?: number;
  /** Seconds; meaningful once terminatingAt is set; only shrinks. */
  gracePeriod: number;
  startedTerminating: boolean;
  deleted: boolean;
  evicted: boolean;
  /** syncTerminatedPod completed; the worker only waits to be forgotten by syncKnownPods. */
  finished: boolean;
  restartRequested: boolean;
  observedRuntime: boolean;
  pendingUpdate?: UpdateView;
  activeUpdate?: UpdateView;
}

/** Which syncer operation a worker wake-up ran. */
export type SyncPhase = 'sync' | 'terminating' | 'terminating-runtime' | 'terminated';

/**
 * Typed transition events the engine emits (synchronously, in order, per pod). The store persists
 * on them, metrics count them, the TUI draws them. Listeners must not throw and must not block.
 */
export type PodWorkerEvent =
  | { type: 'update-queued'; uid: string; fullname: string; at: number; updateType: SyncPodType }
  | { type: 'termination-requested'; uid: string; fullname: string; at: number; gracePeriod: number; evicted: boolean; deleted: boolean }
  | { type: 'grace-shortened'; uid: string; fullname: string; at: number; from: number; to: number }
  | { type: 'restart-requested'; uid: string; fullname: string; at: number }
  | { type: 'sync-started'; uid: string; fullname: string; at: number; phase: SyncPhase }
  | { type: 'sync-succeeded'; uid: string; fullname: string; at: number; phase: SyncPhase }
  /** `aborted`: the sync was cancelled (termination requested or grace shortened); pending work follows at once. */
  | { type: 'sync-failed'; uid: string; fullname: string; at: number; phase: SyncPhase; error: string; retryInMs: number; aborted?: boolean }
  | { type: 'state-changed'; uid: string; fullname: string; at: number; from: PodWorkerState | 'new'; to: PodWorkerState }
  | { type: 'finished'; uid: string; fullname: string; at: number }
  | { type: 'forgotten'; uid: string; fullname: string; at: number }
  /** `write-ahead`: `beforeWorkerWakes` answered false (the pod's intent is not durable): the update waits. */
  | { type: 'requeued'; uid: string; fullname: string; at: number; delayMs: number; reason: 'phase-change' | 'resync' | 'network-not-ready' | 'backoff' | 'replay' | 'write-ahead' };

export type PodWorkerEventType = PodWorkerEvent['type'];

export interface PodWorkersOptions {
  syncer: PodSyncer;
  cache: PodStatusCache;
  /** Default: an internal timer queue that re-syncs the pod. */
  workQueue?: WorkQueue;
  /** Default: Date.now. */
  clock?: Clock;
  /** Default 60_000 (kubelet default). */
  resyncIntervalMs?: number;
  /** Default 10_000. */
  backOffPeriodMs?: number;
  recorder?: EventRecorder;
  /**
   * Awaited each time a pod's worker wakes for new work, before it consumes the update (the
   * session's write-ahead). Answering `false` holds the update: the worker does not act, the pod is
   * not working, and the update is tried again after the back-off period (`requeued`,
   * `write-ahead`). A throw is ignored (the worker goes on).
   */
  beforeWorkerWakes?: (uid: string) => Promise<void | boolean> | void | boolean;
  /** Receives every transition event (same as `subscribe`). */
  onEvent?: (event: PodWorkerEvent) => void;
}

export interface PodWorkers {
  updatePod(options: UpdatePodOptions): void;
  syncKnownPods(desiredPods: V1Pod[]): Map<string, PodWorkerSync>;
  isPodKnownTerminated(uid: string): boolean;
  couldHaveRunningContainers(uid: string): boolean;
  shouldPodBeFinished(uid: string): boolean;
  isPodTerminationRequested(uid: string): boolean;
  shouldPodContainersBeTerminating(uid: string): boolean;
  shouldPodRuntimeBeRemoved(uid: string): boolean;
  shouldPodContentBeRemoved(uid: string): boolean;
  /** fullname = `${name}_${namespace}` */
  isPodForMirrorPodTerminatingByFullName(podFullName: string): boolean;
  /** Read-only view of every tracked pod's sync status. */
  snapshot(): Map<string, PodSyncStatusView>;
  /**
   * Resolves when no worker has a pending or running sync (timers for later resyncs may remain).
   * `except`: UIDs whose work is ignored (e.g. workers a test holds in `beforeWorkerWakes`).
   */
  whenIdle(options?: { except?: Iterable<string> }): Promise<void>;
  /** One pod's view (same shape as a `snapshot()` entry), or undefined when the pod is not tracked. */
  statusOf(uid: string): PodSyncStatusView | undefined;
  /** Stops all workers (aborts running syncs) and releases timers. */
  close(): Promise<void>;
  /** Adds a transition-event listener; returns the function that removes it. */
  subscribe(listener: (event: PodWorkerEvent) => void): () => void;
  /**
   * Restore path: loads saved statuses (from a checkpoint) into this fresh instance, before any
   * updatePod for those UIDs. Finished pods stay finished; terminated pods keep only the terminated
   * step; terminating pods replay their last update so the worker drives them on with the saved
   * grace period (never longer); pods in `sync` are tracked and resume on the next update.
   */
  restore(views: Iterable<PodSyncStatusView>): void;
}

/** The derived lifecycle state of a status (the reference's WorkType). */
export function workerStateOf(v: Pick<PodSyncStatusView, 'terminatingAt' | 'terminatedAt'>): PodWorkerState {
  if (v.terminatedAt !== undefined) return 'terminated';
  if (v.terminatingAt !== undefined) return 'terminating';
  return 'sync';
}
