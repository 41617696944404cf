/**
 * The per-pod sync record (the kubelet's podSyncStatus) and the update it carries.
 *
 * Invariants:
 * - Every boolean question about a pod's lifecycle is derived from timestamps: termination is
 *   requested once `terminatingAt` is set, the pod is terminated once `terminatedAt` is set, started
 *   once `startedAt` is set. The state (`sync`/`terminating`/`terminated`) is computed, never stored.
 * - Timestamps are set once and never cleared (a record is forgotten as a whole instead).
 * - `pendingUpdate` is what the worker will see next; it is invisible to other components until the
 *   worker consumes it and merges it into `activeUpdate`. A pod that never started has no
 *   `activeUpdate`.
 * - `finished` implies terminated; terminated implies termination requested.
 * - Callbacks (`onComplete`, status functions) live only in the record's lists and in a pending
 *   update; views and `activeUpdate` never carry them.
 */
import type { KillPodOptions, PodStatus, PodSyncStatusView, PodWorkerState, RunningPod, SyncPodType, UpdateView, V1Pod, V1PodStatus } from './types.js';

/** One update as the engine stores it (the kubelet's UpdatePodOptions). Fixed shape. */
export interface PodUpdate {
  updateType: SyncPodType;
  /** When the update was created (for latency figures only). */
  startTime: number | undefined;
  /** The pod spec; undefined only for a runtime-only pod. */
  pod: V1Pod | undefined;
  mirrorPod: V1Pod | undefined;
  /** Set only when the pod is known from the runtime alone. */
  runningPod: RunningPod | undefined;
  killPodOptions: KillPodOptions | undefined;
}

export function newUpdate(
  updateType: SyncPodType,
  pod: V1Pod | undefined,
  mirrorPod: V1Pod | undefined,
  runningPod: RunningPod | undefined,
  killPodOptions: KillPodOptions | undefined,
  startTime: number | undefined,
): PodUpdate {
  return { updateType, startTime, pod, mirrorPod, runningPod, killPodOptions };
}

/** A shallow copy (the kubelet copies the options struct by value when it replays an update). */
export function copyUpdate(u: PodUpdate): PodUpdate {
  return { updateType: u.updateType, startTime: u.startTime, pod: u.pod, mirrorPod: u.mirrorPod, runningPod: u.runningPod, killPodOptions: u.killPodOptions };
}

/** Tracks one pod through setup (sync), teardown (terminating) and cleanup (terminated). */
export class PodSyncRecord {
  /** `${name}_${namespace}` of the pod as first seen. */
  fullname: string;
  /** An update is pending or being worked on by this pod's worker. */
  working = false;
  /** The newest update the worker has not consumed yet (replaces any older pending one). */
  pendingUpdate: PodUpdate | undefined = undefined;
  /** The accumulated last update the worker acted on; the source of truth once started. */
  activeUpdate: PodUpdate | undefined = undefined;
  /** When the engine first saw this pod. */
  syncedAt: number;
  /** When the worker allowed the pod to start. */
  startedAt: number | undefined = undefined;
  /** When termination was requested (may precede the worker noticing it). */
  terminatingAt: number | undefined = undefined;
  /** When all containers were known stopped (syncTerminatingPod succeeded, or never started). */
  terminatedAt: number | undefined = undefined;
  /** Seconds; set once terminating; only shrinks. 0 means "not computed" (the pod's default). */
  gracePeriod = 0;
  /** onComplete callbacks of kill requests, called once the pod is terminated. */
  notifyPostTerminating: (() => void)[] | undefined = undefined;
  /** Status overrides of kill requests; the last one is applied on each termination attempt. */
  statusPostTerminating: ((status: V1PodStatus) => void)[] | undefined = undefined;
  /** The worker observed the termination request: no container may start from now on. */
  startedTerminating = false;
  /** Deleted in the API, or no config left (orphaned / runtime-only). */
  deleted = false;
  /** Killed as an eviction (content may be reclaimed aggressively). */
  evicted = false;
  /** syncTerminatedPod succeeded; the record only waits to be forgotten by syncKnownPods. */
  finished = false;
  /** A create arrived for this UID after termination was requested. */
  restartRequested = false;
  /** The pod was seen in the runtime, so it must go through a terminating step. */
  observedRuntime = false;
  /** Cancels the worker's current sync (the kubelet's context cancel); replaced once aborted. */
  abort: AbortController | undefined = undefined;
  /** A syncer call (or its status read) is in flight; only then is there anything to abort. */
  syncing = false;

  constructor(fullname: string, syncedAt: number) {
    this.fullname = fullname;
    this.syncedAt = syncedAt;
  }

  isTerminationRequested(): boolean {
    return this.terminatingAt !== undefined;
  }
  isTerminated(): boolean {
    return this.terminatedAt !== undefined;
  }
  isStarted(): boolean {
    return this.startedAt !== undefined;
  }
  /** The derived lifecycle state (the kubelet's WorkType). */
  state(): PodWorkerState {
    if (this.terminatedAt !== undefined) return 'terminated';
    if (this.terminatingAt !== undefined) return 'terminating';
    return 'sync';
  }
}

/** True when the cached runtime status shows nothing running: no running container, no ready sandbox. */
export function isPodStatusCacheTerminal(status: PodStatus): boolean {
  // An empty status (the runtime knows the pod, nothing is left) is terminal.
  for (const c of status.containerStatuses ?? []) if (c.state === 'running') return false;
  for (const s of status.sandboxStatuses ?? []) if (s.state === 'ready') return false;
  return true;
}

/** An update without its callbacks (what views and checkpoints show). */
function updateViewOf(u: PodUpdate): UpdateView {
  const view: UpdateView = { updateType: u.updateType };
  if (u.startTime !== undefined) view.startTime = u.startTime;
  if (u.pod !== undefined) view.pod = u.pod;
  if (u.mirrorPod !== undefined) view.mirrorPod = u.mirrorPod;
  if (u.runningPod !== undefined) view.runningPod = u.runningPod;
  const k = u.killPodOptions;
  if (k !== undefined) {
    const kv: { evict?: boolean; gracePeriodSecondsOverride?: number } = {};
    if (k.evict) kv.evict = true;
    if (k.gracePeriodSecondsOverride !== undefined) kv.gracePeriodSecondsOverride = k.gracePeriodSecondsOverride;
    view.killPodOptions = kv;
  }
  return view;
}

/** An update rebuilt from its view (no callbacks: those never survive a checkpoint). */
export function updateFromView(v: UpdateView): PodUpdate {
  const k = v.killPodOptions;
  let killPodOptions: KillPodOptions | undefined;
  if (k !== undefined) {
    killPodOptions = {};
    if (k.evict) killPodOptions.evict = true;
    if (k.gracePeriodSecondsOverride !== undefined) killPodOptions.gracePeriodSecondsOverride = k.gracePeriodSecondsOverride;
  }
  return newUpdate(v.updateType, v.pod, v.mirrorPod, v.runningPod, killPodOptions, v.startTime);
}

/** A read-only copy of a record (pods are shared, not cloned: treat them as immutable). */
export function viewOfRecord(uid: string, r: PodSyncRecord): PodSyncStatusView {
  const view = {
    fullname: r.fullname,
    working: r.working,
    syncedAt: r.syncedAt,
    gracePeriod: r.gracePeriod,
    startedTerminating: r.startedTerminating,
    deleted: r.deleted,
    evicted: r.evicted,
    finished: r.finished,
    restartRequested: r.restartRequested,
    observedRuntime: r.observedRuntime,
  } as PodSyncStatusView;
  // The UID is the snapshot map's key; on the view it is a convenience for consumers (the store),
  // kept out of enumeration so the view's own fields are exactly the reference's podSyncStatus.
  Object.defineProperty(view, 'uid', { value: uid, enumerable: false });
  if (r.startedAt !== undefined) view.startedAt = r.startedAt;
  if (r.terminatingAt !== undefined) view.terminatingAt = r.terminatingAt;
  if (r.terminatedAt !== undefined) view.terminatedAt = r.terminatedAt;
  if (r.pendingUpdate !== undefined) view.pendingUpdate = updateViewOf(r.pendingUpdate);
  if (r.activeUpdate !== undefined) view.activeUpdate = updateViewOf(r.activeUpdate);
  return view;
}
