/**
 * The node session: the one seam between podctl's commands/TUI and its engine, runtime and store.
 *
 * A session is what every podctl process opens first. It owns, for the life of the process:
 * - the CRI connection (or the embedded simulator's) and the runtime-backed PodStatusCache;
 * - this process's in-process PodWorkers engine, restored from the checkpoint store for the pods
 *   this process drives (holds the lease of);
 * - the per-pod leases it holds, their heartbeats, and persistence of every engine transition.
 *
 * Invariants:
 * - Exactly one process drives a pod at a time (the lease holder). A session that wants to change a
 *   pod another live process owns writes a request into the store; the owner applies it through
 *   `updatePod` (so a second `kill --grace 1` shortens the first one's in-flight termination).
 * - A pod whose owner died is taken over by the next session that touches it, and resumed from its
 *   checkpoint (finished stays finished; terminating continues with its remembered grace, never
 *   longer).
 * - `close()` persists everything and releases leases; a crash (SIGKILL) loses nothing that was
 *   already reported done, and leaves no corrupt checkpoint.
 *
 * This file holds types only (the domain layer: every layer above imports it); `openSession` lives in
 * `session/open.ts`.
 */
import type { Clock, PodStatus, PodSyncStatusView, PodWorkerEvent, PodWorkerState, PodWorkerSync, V1Pod } from '../engine/types.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type Logger = (level: LogLevel, message: string) => void;

export interface SessionOptions {
  /** Default `/var/lib/podctl` (env PODCTL_STATE_DIR). */
  stateDir: string;
  /** `unix:///path` or a path; default: CONTAINER_RUNTIME_ENDPOINT, then the well-known sockets. */
  runtimeEndpoint?: string;
  /** When set, desired pods / evictions go through the API server. */
  kubeconfig?: string;
  node?: string;
  clock?: Clock;
  log?: Logger;
  /** Deadline for each CRI call, ms (default 10_000). */
  rpcTimeoutMs?: number;
  /**
   * A session that only reads (`status`): it never takes a lease nor drives a pod, so it starts no
   * store watchers, heartbeats or runtime event stream. Its first runtime listing starts while it
   * opens, and `listPods` accepts a listing up to 1 s old by default. `requestKill`,
   * `waitTerminated` and `syncKnown` reject.
   */
  readOnly?: boolean;
  /**
   * Whose exited containers the runtime listings ask ContainerStatus about (exit code, times):
   * 'all' (default; drain, sync-known and watch decide and show by them) or 'driven', only where
   * this session decides by them: pods it drives whose restart policy (OnFailure, Never) makes
   * their exit codes say whether they have finished (kill, evict: a node's other exited
   * containers, and the ones these commands stop, cost no calls).
   */
  exitDetails?: 'all' | 'driven';
  /**
   * Least time between two runtime relists that container events start (ms, or a function of the
   * node's pod count); default 0, a relist per event. A session that follows more than it drives
   * (watch) bounds it: its own kills still wait on fresh relists of their own.
   */
  eventRelistIntervalMs?: number | ((pods: number) => number);
  /**
   * Apply the runtime's container events to the pods they name instead of relisting (watch): while
   * the event stream delivers, a listing that accepts an age is kept current by them until the last
   * relist is 30 s old (cri/cache/cache.ts). Kills still wait on relists.
   */
  runtimeEventPatches?: boolean;
  /**
   * Called once, when the runtime's connection is up (the endpoint check's connection, or the
   * runtime's HTTP/2 answer on a new one) and its first requests (Version, the first relist) are on
   * their way, while the session still opens: work that needs no session (a command's own checks)
   * can run while the runtime answers. Not called when the open fails first, nor for a runtime that
   * is not the CRI one (tests' seams).
   */
  onRuntimeAsked?: () => void;
  /**
   * Open the runtime's event stream at the session's first `waitTerminated` instead of at open
   * (kill): a command that stops pods before it waits reads no runtime event before its wait, and
   * the stream's connection (on containerd 1.6 an Unimplemented answer, then the poll) is then not
   * set up on the way to its first stop. Default: at open (a writable session).
   */
  runtimeEventsFromFirstWait?: boolean;
}

/** One entry of a pod's bounded timeline (persisted in its checkpoint). */
export interface TransitionRecord {
  at: number;
  /** The engine event type, or a store/session event such as 'lease-taken', 'request-applied'. */
  type: string;
  /** Human-readable detail: "grace 30s → 5s", "StopContainer: DeadlineExceeded", … */
  detail: string;
  pid: number;
  /**
   * A step that lasted — a preStop hook ('prestop'), a container's stop ('container-stopped'), the
   * sandbox's stop ('sandbox-stopped'), the removal ('removed') — began at `from` and ended at `at`.
   */
  from?: number;
  /** What the step was about: the container's name. */
  subject?: string;
  /** A hook's type (exec, sleep, httpGet, unknown); a stopped container's: 'container' or 'sidecar'. */
  kind?: string;
  /**
   * How the step ended, one word. A hook: succeeded, failed, not-run. A container: exited (it ended
   * on SIGTERM), killed-at-deadline (SIGKILL when its StopContainer timeout ran out: exit 137),
   * killed (SIGKILL with no grace left), stopped (its exit is unknown). A sandbox stop or removal:
   * succeeded or failed.
   */
  outcome?: string;
  /** A stopped container's exit code, when the runtime gave it. */
  exitCode?: number;
}

/** A runtime step as the syncer reports it, before the session stamps its process on it. */
export type RuntimeStep = Omit<TransitionRecord, 'pid'> & { type: 'prestop' | 'container-stopped' | 'sandbox-stopped' | 'removed' };

export interface LeaseInfo {
  pid: number;
  /** Owner process start time (epoch ms), to tell a reused PID from the owner. */
  startedAt: number;
  heartbeatAt: number;
  /** The owner process is still alive (false: the lease is stale and may be taken over). */
  alive: boolean;
}

export interface RuntimeErrorInfo {
  message: string;
  at: number;
  /** When the worker will retry (epoch ms), if known. */
  retryAt?: number;
}

/** Everything podctl knows about one pod on this node: one row of `status`, one line of `watch`. */
export interface PodInfo {
  uid: string;
  namespace: string;
  name: string;
  /** The pod's spec: from the API server, the checkpoint, or rebuilt from CRI labels/annotations. */
  pod?: V1Pod;
  static: boolean;
  /** 'runtime' = seen in the runtime only, no worker has ever tracked it. */
  state: PodWorkerState | 'finished' | 'runtime';
  /** The worker status (this process's engine, or the owner's last checkpoint). */
  worker?: PodSyncStatusView;
  /** Latest runtime status, if the pod still exists in the runtime. */
  runtime?: PodStatus;
  containersRunning: number;
  containersTotal: number;
  /** When the current state was entered (epoch ms). */
  since: number;
  /** Grace period in force (seconds) and when it runs out (epoch ms), while terminating. */
  gracePeriod?: number;
  graceDeadline?: number;
  owner?: LeaseInfo;
  lastError?: RuntimeErrorInfo;
  history: TransitionRecord[];
  /**
   * Its worker finished and was forgotten (SyncKnownPods): `worker`, `since` and `history` are its
   * ending as last written, kept while the runtime lists the pod running nothing.
   */
  forgotten?: boolean;
}

export interface ListPodsOptions {
  /**
   * Accept a runtime listing this old (ms) instead of relisting the runtime for this call (default
   * 0: a relist started after the call). For readers that learn of runtime changes from `subscribe`
   * (watch), where each listing would otherwise add a relist.
   */
  runtimeMaxAgeMs?: number;
  /**
   * Which pods: 'all' (default) the runtime's, the store's and this session's; 'runtime' only pods
   * the runtime listing shows plus those this session drives. 'runtime' reads the store only for
   * those pods, so its cost does not grow with the finished pods the store remembers until
   * sync-known forgets them.
   */
  scope?: 'all' | 'runtime';
  /**
   * Only these pods (by UID): the store is read for them alone, and pods not known any more are
   * absent from the result. For readers that follow changes by name (watch); overrides `scope`.
   */
  uids?: readonly string[];
  /** Stops waiting for the listing: the call rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface SyncKnownCallOptions {
  /**
   * Stops the sync early: it stops waiting for the pods it drives and rejects with the signal's
   * reason. Those pods stay owned by the session; `close()` persists them and releases their leases,
   * so the next podctl run resumes them.
   */
  signal?: AbortSignal;
  /**
   * Whether the call waits (bounded) until the pods it drives are terminated (default true: a
   * one-shot `sync-known`). A long-lived owner (the agent) passes false: it returns once the step
   * has started everything, and the session goes on driving between steps.
   */
  wait?: boolean;
}

export interface KillRequest {
  uid: string;
  /** Shorter than the pod's current grace to take effect; never lengthens it. */
  gracePeriodSeconds?: number;
  evict?: boolean;
  reason?: string;
  message?: string;
  /** The pod as the API server holds it: its spec orders the kill (sidecars last), as the kubelet's does. */
  pod?: V1Pod;
  /**
   * The oldest runtime listing (ms) in which the pod may be found (default 1 s: a relist when the
   * last is older). A caller acting on an event at once (the agent's deletion follower) accepts the
   * last listing rather than wait behind a relist in flight; a pod it does not list is not found.
   */
  runtimeMaxAgeMs?: number;
  /**
   * The kill carries out a deletion the API server records (the pod's deletionTimestamp and its
   * grace, which only ever shortens): the API is the record of this intent, so the pod's checkpoint
   * is written and made durable beside the stop instead of before it (session/persistence.ts). A
   * crash in between leaves the deletion in the API, which the next run (the agent, sync-known)
   * carries out again. The call still resolves only once the checkpoint is durable.
   */
  recordedInApi?: boolean;
}

export interface KillHandle {
  uid: string;
  /** 'local': this session drives the pod; 'delegated': written to the live owner's inbox. */
  handledBy: 'local' | 'delegated';
  ownerPid: number;
}

export interface WaitOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Called on every change of any awaited pod (for progress on stderr). */
  onProgress?: (pod: PodInfo) => void;
}

export type WaitOutcome = 'terminated' | 'timeout' | 'gone';

export interface SyncKnownResult {
  /** The engine's known-workers map after the sync. */
  workers: Map<string, PodWorkerSync>;
  /** Runtime pods no worker knew, now being terminated. */
  orphanedRuntimePods: string[];
  /** Pods whose dead owner's lease this session took over and resumed. */
  resumed: string[];
  /** Finished workers forgotten by this sync. */
  forgotten: string[];
}

/** What `subscribe` delivers: this process's engine, other processes (via the store), the runtime. */
export type SessionEvent =
  | { source: 'engine'; event: PodWorkerEvent }
  | { source: 'store'; uid: string; at: number; kind: 'checkpoint-changed' | 'lease-changed' | 'request-written' }
  | { source: 'runtime'; at: number; kind: 'relisted' | 'container-event'; uids: string[] }
  | { source: 'session'; at: number; kind: 'warning'; message: string };

export interface NodeSession {
  readonly endpoint: string;
  readonly stateDir: string;
  /** True when talking to the embedded simulator rather than a real runtime. */
  readonly simulated: boolean;
  /** Every pod podctl knows about: tracked workers (any process) and runtime pods. */
  listPods(options?: ListPodsOptions): Promise<PodInfo[]>;
  getPod(uid: string): Promise<PodInfo | undefined>;
  /** Starts (or shortens) a termination; returns at once. */
  requestKill(request: KillRequest): Promise<KillHandle>;
  /** Waits until every pod is terminated (or gone), the timeout passes, or the signal aborts. */
  waitTerminated(uids: string[], options: WaitOptions): Promise<Map<string, WaitOutcome>>;
  /** The kubelet's housekeeping step; `desired` undefined = desired pods from the API server. */
  syncKnown(desired: V1Pod[] | undefined, options?: SyncKnownCallOptions): Promise<SyncKnownResult>;
  subscribe(listener: (event: SessionEvent) => void): () => void;
  /**
   * Pods this session drives that are still terminating (uids): a process that exits hands these to
   * another driver before it closes (a terminated pod's cleanup is left to close() and housekeeping).
   * Empty for a read-only or closed session.
   */
  drivenUnfinished(): string[];
  /** The desired pods the API server lists for this node; rejects when none is configured. */
  apiDesiredPods(): Promise<V1Pod[]>;
  /** Persists all state, stops the engine, releases leases and the CRI connection. */
  close(): Promise<void>;
}
