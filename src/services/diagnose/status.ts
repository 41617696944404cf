/**
 * `podctl status`: what podctl knows about the node's pods (tracked workers of every podctl process,
 * and runtime pods), and `--explain`: why a pod is still here.
 *
 * The engine's predicates are derived from the worker status view exactly as the kubelet derives
 * them from its podSyncStatus (timestamps and flags); a pod no worker tracks is answered as the
 * kubelet answers after its first full sync.
 *
 * It returns data (rows, explanations); output.ts draws them for the commands and the TUI.
 *
 * Invariants: rows have a fixed set of keys (absent values are null), so the JSON/YAML shape does not
 * depend on a pod's state; `now` is injected, so the same input renders the same output.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { formatDuration } from '../../lib/duration.js';
import { ExitCode, type ExitCodeValue } from '../../lib/exit-codes.js';
import type { KubeletStatus } from '../../kube/kubelet.js';
import { resolveSelection, type PodSelection } from '../../lib/refs.js';
import { isStuck } from './stuck.js';
import { checkPodVolumes, volumeWithheldReason } from './volumes.js';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import type { PodSyncStatusView } from '../../engine/types.js';
import { blockedBy, type BlockedBy, type ProcessFact, type StuckFacts } from './blocked-by.js';
import { createdAtOf, readyOf, type PodReady } from './pod-ready.js';
import type { ApiWaitRecord } from '../../store/api-waits.js';

type PodState = PodInfo['state'];

export interface StatusRow {
  uid: string;
  namespace: string;
  name: string;
  state: PodState;
  static: boolean;
  evicted: boolean;
  priority: number | null;
  /** The pod's labels (null when its spec is not known). */
  labels: Record<string, string> | null;
  /** Grace period in force while terminating (seconds). */
  gracePeriodSeconds: number | null;
  graceLeftSeconds: number | null;
  /** When the current state was entered (ISO 8601). */
  since: string;
  inStateSeconds: number;
  containersRunning: number;
  containersTotal: number;
  /** kubectl's READY from the runtime: containers running / total (newest attempts), and the sandbox's readiness; null when the runtime does not report the pod. */
  ready: PodReady | null;
  /** When the pod was created (ISO 8601; its creationTimestamp, else its oldest sandbox's), or null. */
  createdAt: string | null;
  /** The pod's age (kubectl's AGE), or null when its creation time is not known. */
  ageSeconds: number | null;
  ownerPid: number | null;
  ownerAlive: boolean | null;
  /**
   * While its termination is not over: whether a live podctl process drives it (false: nobody does,
   * so no grace counts down; `--explain` says how to resume). null when not terminating.
   */
  driven: boolean | null;
  /** Terminating longer than its grace period plus the stuck-after margin (30 s; the agent's rule, stuck.ts). */
  stuck: boolean;
  lastError: string | null;
  lastErrorAt: string | null;
  nextRetryAt: string | null;
  /** Why a pod on its way out is not finishing, with the operator's next step (null: nothing holds it). */
  blockedBy: BlockedBy | null;
  /** An eviction a PodDisruptionBudget holds back now (a live podctl retries it), or null. */
  evictionHeld: EvictionHeld | null;
}

/** A PodDisruptionBudget holding a pod's eviction back, as the evicting podctl journals it. */
export interface EvictionHeld {
  /** "PodDisruptionBudget web/pdb". */
  budget: string;
  /** Since when (ISO 8601). */
  since: string;
  /** The podctl process retrying the eviction. */
  pid: number;
  /** The API server's words. */
  detail: string;
}

/** Node facts beyond the session's view, gathered by podStatus for pods on their way out. */
export interface NodeFacts {
  kubeletRunning: boolean;
  processes: ReadonlyMap<string, readonly ProcessFact[]>;
  mounts: ReadonlyMap<string, readonly string[]>;
  podDir: (uid: string) => string;
  /** The API objects of the node's pods, by UID (empty without an API server). */
  api: ReadonlyMap<string, V1Pod>;
  /** The API waits going on now, by UID (store/api-waits.ts); absent: none looked at. */
  apiWaits?: ReadonlyMap<string, ApiWaitRecord>;
}

/** No node facts beyond the listing (kubelet not running, no processes or mounts, no API objects). */
export const NO_NODE_FACTS: NodeFacts = { kubeletRunning: false, processes: new Map(), mounts: new Map(), podDir: (uid) => `/var/lib/kubelet/pods/${uid}`, api: new Map() };

export interface PredicateAnswer {
  name: string;
  value: boolean;
  meaning: string;
}

interface TimelineEntry {
  at: string;
  type: string;
  detail: string;
  pid: number;
}

export interface Explanation {
  uid: string;
  namespace: string;
  name: string;
  state: PodState;
  tracked: boolean;
  predicates: PredicateAnswer[];
  waitingFor: string;
  gracePeriodSeconds: number | null;
  graceLeftSeconds: number | null;
  /** While terminating: when its grace runs out (ISO 8601), driven or not; null otherwise or when unknown. */
  graceDeadline: string | null;
  lastError: string | null;
  lastErrorAt: string | null;
  nextRetryAt: string | null;
  owner: { pid: number; alive: boolean; heartbeatAt: string } | null;
  /** As StatusRow.driven. */
  driven: boolean | null;
  /** As StatusRow.stuck. */
  stuck: boolean;
  /** Why a final delete would be withheld (a volume still mounted under the kubelet's pods directory), or null. */
  finalDelete: string | null;
  /** As StatusRow.blockedBy. */
  blockedBy: BlockedBy | null;
  /** As StatusRow.evictionHeld. */
  evictionHeld: EvictionHeld | null;
  timeline: TimelineEntry[];
}

export interface StatusResult {
  endpoint: string;
  simulated: boolean;
  stateDir: string;
  generatedAt: string;
  pods: StatusRow[];
  missing: string[];
  explain?: Explanation[];
  /** Whether a kubelet runs beside podctl (kube/kubelet.ts); set by the command. */
  kubelet?: KubeletStatus;
}

export interface StatusOptions {
  session: NodeSession;
  selection: PodSelection;
  explain: boolean;
  /** The kubelet's root directory (the final delete's volume check in --explain). */
  kubeletRoot?: string;
  now?: () => number;
  /** SIGINT/SIGTERM: stop waiting for the listing and reject with the signal's reason. */
  signal?: AbortSignal;
  /** Whether a kubelet runs beside podctl (decides kubelet-owns); set on the result too. */
  kubelet?: Promise<KubeletStatus>;
  /** Gather process and mount facts for pods that are not finishing (default true). */
  nodeFacts?: boolean;
  /** The node's pods from the API server (finalizers, deletions), when one is configured. */
  apiPods?: Promise<V1Pod[] | undefined>;
}

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

/** A pod whose termination is under way but over for no one: no live process holds its lease. */
export function isUndriven(pod: Pick<PodInfo, 'state' | 'owner' | 'worker'>): boolean {
  const underWay = pod.state === 'terminating' || (pod.state === 'terminated' && pod.worker?.finished !== true);
  return underWay && pod.owner?.alive !== true;
}

/** The facts blocked-by.ts classifies from, for one pod. */
export function stuckFactsOf(pod: PodInfo, now: number, facts: NodeFacts = NO_NODE_FACTS): StuckFacts {
  const row = baseRow(pod, now);
  const meta = (facts.api.get(pod.uid) ?? pod.pod)?.metadata;
  return {
    namespace: pod.namespace,
    name: pod.name,
    state: pod.state,
    apiDeleting: meta?.deletionTimestamp !== undefined && meta?.deletionTimestamp !== null,
    finalizers: meta?.finalizers ?? [],
    driven: row.driven,
    kubeletRunning: facts.kubeletRunning,
    gracePeriodSeconds: row.gracePeriodSeconds,
    graceLeftMs: row.driven === true && pod.state === 'terminating' && pod.graceDeadline !== undefined ? Math.max(0, pod.graceDeadline - now) : null,
    containersRunning: pod.containersRunning,
    lastError: pod.lastError?.message ?? null,
    processes: facts.processes.get(pod.uid) ?? [],
    mountsHeld: facts.mounts.get(pod.uid) ?? [],
    podDir: facts.podDir(pod.uid),
  };
}

export function statusRow(pod: PodInfo, now: number, facts: NodeFacts = NO_NODE_FACTS): StatusRow {
  return { ...baseRow(pod, now), blockedBy: blockedBy(stuckFactsOf(pod, now, facts)), evictionHeld: evictionHeldOf(facts.apiWaits?.get(pod.uid)) };
}

function evictionHeldOf(wait: ApiWaitRecord | undefined): EvictionHeld | null {
  if (wait?.kind !== 'eviction-wait') return null;
  return { budget: wait.label, since: new Date(wait.from).toISOString(), pid: wait.pid, detail: wait.detail };
}

function baseRow(pod: PodInfo, now: number): Omit<StatusRow, 'blockedBy' | 'evictionHeld'> {
  const undriven = isUndriven(pod);
  // a grace counts down only while some process drives the pod
  const terminating = pod.state === 'terminating' && !undriven;
  const createdAt = createdAtOf(pod);
  return {
    uid: pod.uid,
    namespace: pod.namespace,
    name: pod.name,
    state: pod.state,
    static: pod.static,
    evicted: pod.worker?.evicted ?? false,
    priority: pod.pod?.spec?.priority ?? null,
    labels: pod.pod?.metadata?.labels ?? null,
    gracePeriodSeconds: pod.gracePeriod ?? null,
    graceLeftSeconds: terminating && pod.graceDeadline !== undefined ? Math.max(0, Math.round((pod.graceDeadline - now) / 1000)) : null,
    since: new Date(pod.since).toISOString(),
    inStateSeconds: Math.max(0, Math.round((now - pod.since) / 1000)),
    containersRunning: pod.containersRunning,
    containersTotal: pod.containersTotal,
    ready: readyOf(pod),
    createdAt: iso(createdAt),
    ageSeconds: createdAt === undefined ? null : Math.max(0, Math.round((now - createdAt) / 1000)),
    ownerPid: pod.owner?.pid ?? null,
    ownerAlive: pod.owner?.alive ?? null,
    driven: pod.state === 'terminating' || (pod.state === 'terminated' && pod.worker?.finished !== true) ? !undriven : null,
    stuck: isStuck(pod, now),
    lastError: pod.lastError?.message ?? null,
    lastErrorAt: iso(pod.lastError?.at),
    nextRetryAt: iso(pod.lastError?.retryAt),
  };
}

/** The engine's predicates for one pod, from its status view (undefined: no worker tracks it). */
export function predicatesOf(view: PodSyncStatusView | undefined, isStatic: boolean): PredicateAnswer[] {
  const tracked = view !== undefined;
  const terminated = view?.terminatedAt !== undefined;
  const requested = view?.terminatingAt !== undefined;
  return [
    {
      name: 'isPodKnownTerminated',
      value: tracked && terminated,
      meaning: tracked ? (terminated ? 'no container can be running and none will start' : 'containers may still run') : 'no worker knows the pod',
    },
    {
      name: 'couldHaveRunningContainers',
      value: tracked ? !terminated : false,
      meaning: tracked
        ? terminated
          ? 'the worker has seen every container stopped'
          : 'the worker has not yet seen every container stopped'
        : 'untracked pods are not expected to run (a runtime pod is an orphan)',
    },
    {
      name: 'isPodTerminationRequested',
      value: tracked && requested,
      meaning: requested ? 'a kill, eviction, deletion or terminal phase started termination' : 'nobody asked this pod to terminate',
    },
    {
      name: 'shouldPodContainersBeTerminating',
      value: tracked ? view.startedTerminating : true,
      meaning: tracked
        ? view.startedTerminating
          ? 'the worker has begun terminating: no container will be started again'
          : 'the worker has not begun terminating'
        : 'untracked pods should have no containers',
    },
    {
      name: 'shouldPodRuntimeBeRemoved',
      value: tracked ? terminated : true,
      meaning: tracked ? (terminated ? 'sandboxes and containers may be removed' : 'runtime objects must stay until termination completes') : 'untracked: the runtime objects may be removed',
    },
    {
      name: 'shouldPodContentBeRemoved',
      value: tracked ? view.evicted || (view.deleted && terminated) : true,
      meaning: tracked
        ? view.evicted
          ? 'evicted: content goes'
          : view.deleted
            ? 'deleted: content goes once terminated'
            : 'content stays (not evicted or deleted)'
        : 'untracked: content may be removed',
    },
    {
      name: 'shouldPodBeFinished',
      value: tracked ? view.finished : true,
      meaning: tracked ? (view.finished ? 'syncTerminatedPod completed' : 'the terminated step has not completed') : 'untracked pods count as finished',
    },
    {
      name: 'isPodForMirrorPodTerminatingByFullName',
      value: tracked && isStatic && requested && !terminated,
      meaning: isStatic ? 'a static pod with this full name is terminating' : 'not a static pod',
    },
  ];
}

/** One sentence: what the worker waits for before the pod can go. */
export function waitingFor(pod: PodInfo, now: number): string {
  const view = pod.worker;
  if (!view) {
    if (pod.state === 'runtime') {
      return 'Nothing: no worker tracks it yet (podctl has not acted on it; it runs as the runtime reports). `podctl kill` terminates it; `podctl sync-known` terminates it only if it is not desired (an orphaned runtime pod).';
    }
    return 'Nothing: no worker tracks this pod.';
  }
  if (pod.owner && !pod.owner.alive && !view.finished) {
    return `Its owner (pid ${pod.owner.pid}) is gone, so nobody drives it: \`podctl sync-known\` takes the lease over and resumes it from its checkpoint.`;
  }
  if (!pod.owner && !view.finished && view.terminatingAt !== undefined) {
    return 'No podctl process drives it now (the one that started the termination has exited): `podctl sync-known` (or another `podctl kill`) takes it over and finishes it with its remembered grace.';
  }
  const retry = pod.lastError?.retryAt !== undefined && pod.lastError.retryAt > now ? pod.lastError : undefined;
  const retryText = retry ? ` The last attempt failed (${retry.message}); next retry in ${formatDuration((retry.retryAt ?? now) - now)}.` : '';
  if (view.finished && pod.forgotten) {
    return 'Nothing: termination finished and its worker was forgotten (`podctl sync-known`); this is how the pod ended, kept while the runtime lists it. `podctl kill` does not act on it again.';
  }
  if (view.finished) return 'Nothing: termination finished; the worker is kept until the next `podctl sync-known` forgets it.';
  if (view.terminatedAt !== undefined) {
    return `syncTerminatedPod to complete: clean-up after every container stopped${view.evicted ? ' (evicted: containers and sandboxes are removed)' : ''}; retried until it succeeds.${retryText}`;
  }
  if (view.terminatingAt !== undefined) {
    if (!view.startedTerminating) {
      return `The worker to pick up the termination request (pending update: ${view.pendingUpdate?.updateType ?? 'kill'}).${retryText}`;
    }
    const left = pod.graceDeadline !== undefined ? formatDuration(Math.max(0, pod.graceDeadline - now)) : 'unknown';
    const running = pod.containersRunning;
    const what =
      running > 0
        ? `${running} container(s) still running must stop within the grace period (${left} left of ${pod.gracePeriod ?? view.gracePeriod}s), then the sandbox is stopped`
        : 'containers have stopped; the sandbox stop and the runtime confirming it remain';
    return `syncTerminatingPod: ${what}.${retryText}`;
  }
  return `Nothing: the pod is desired and running; it stays until it is killed, evicted or deleted${view.working ? ' (a sync is in progress)' : ''}.${retryText}`;
}

export function explainPod(pod: PodInfo, now: number, facts: NodeFacts = NO_NODE_FACTS): Explanation {
  const row = statusRow(pod, now, facts);
  return {
    uid: pod.uid,
    namespace: pod.namespace,
    name: pod.name,
    state: pod.state,
    tracked: pod.worker !== undefined,
    predicates: predicatesOf(pod.worker, pod.static),
    waitingFor: waitingFor(pod, now),
    gracePeriodSeconds: row.gracePeriodSeconds,
    graceLeftSeconds: row.graceLeftSeconds,
    graceDeadline: pod.state === 'terminating' && pod.graceDeadline !== undefined ? new Date(pod.graceDeadline).toISOString() : null,
    driven: row.driven,
    stuck: row.stuck,
    finalDelete: null,
    blockedBy: row.blockedBy,
    evictionHeld: row.evictionHeld,
    lastError: row.lastError,
    lastErrorAt: row.lastErrorAt,
    nextRetryAt: row.nextRetryAt,
    owner: pod.owner ? { pid: pod.owner.pid, alive: pod.owner.alive, heartbeatAt: new Date(pod.owner.heartbeatAt).toISOString() } : null,
    timeline: [...pod.history].sort((a, b) => a.at - b.at).map((h) => ({ at: new Date(h.at).toISOString(), type: h.type, detail: h.detail, pid: h.pid })),
  };
}

/** The JSON form of a status result (`-o json|yaml`, `--json`): `explain` (without --explain) and `kubelet` are null, not absent. */
export function statusJson(result: StatusResult): Omit<StatusResult, 'explain' | 'kubelet'> & { explain: Explanation[] | null; kubelet: KubeletStatus | null } {
  return { ...result, explain: result.explain ?? null, kubelet: result.kubelet ?? null };
}

export function statusExitCode(result: Pick<StatusResult, 'missing'>): ExitCodeValue {
  return result.missing.length > 0 ? ExitCode.NotFound : ExitCode.Done;
}

export async function podStatus(options: StatusOptions): Promise<StatusResult> {
  const now = (options.now ?? Date.now)();
  const { session } = options;
  const { targets, missing } = resolveSelection(await session.listPods(options.signal ? { signal: options.signal } : undefined), options.selection);
  const kubelet = options.kubelet ? await options.kubelet : undefined;
  const apiPods = new Map(((options.apiPods ? await options.apiPods : undefined) ?? []).flatMap((p) => (p.metadata?.uid ? [[p.metadata.uid, p] as const] : [])));
  const base =
    options.nodeFacts === false ? { ...NO_NODE_FACTS, kubeletRunning: kubelet?.state === 'running' } : await gatherNodeFacts(session, targets, kubelet, apiPods, options.signal, options.kubeletRoot);
  const facts: NodeFacts = { ...base, api: apiPods, apiWaits: await openWaits(session.stateDir) };
  const result: StatusResult = {
    endpoint: session.endpoint,
    simulated: session.simulated,
    stateDir: session.stateDir,
    generatedAt: new Date(now).toISOString(),
    pods: targets.map((p) => statusRow(p, now, facts)),
    missing,
    ...(kubelet ? { kubelet } : {}),
  };
  if (options.explain) {
    result.explain = targets.map((p) => explainPod(p, now, facts));
    // the kubelet's last check before a final delete: a volume of the pod still mounted
    for (const e of result.explain) {
      const reason = volumeWithheldReason(await checkPodVolumes(e.uid, options.kubeletRoot));
      if (reason !== undefined) e.finalDelete = reason;
    }
  }
  return result;
}

/** Whether a pod is on its way out and not finished, so its node facts matter. */
export function notFinishing(pod: PodInfo, api: ReadonlyMap<string, V1Pod>): boolean {
  const deleting = (api.get(pod.uid) ?? pod.pod)?.metadata?.deletionTimestamp;
  return pod.state === 'terminating' || pod.state === 'terminated' || (deleting !== undefined && deleting !== null);
}

/** Process facts for running containers and held mounts of the pods that are not finishing (bounded, best effort). */
export async function gatherNodeFacts(
  session: NodeSession,
  pods: PodInfo[],
  kubelet: KubeletStatus | undefined,
  api: ReadonlyMap<string, V1Pod>,
  signal: AbortSignal | undefined,
  kubeletRoot?: string,
): Promise<NodeFacts> {
  const leaving = pods.filter((p) => notFinishing(p, api));
  const { gatherProcessFacts, mountPointsOf, mountsUnder, podDirOf: defaultPodDir, readMountinfo } = await import('./stuck-facts.js');
  const podDirOf = kubeletRoot ? (uid: string) => `${kubeletRoot.replace(/\/+$/, '')}/pods/${uid}` : defaultPodDir;
  const facts: NodeFacts = { kubeletRunning: kubelet?.state === 'running', processes: new Map(), mounts: new Map(), podDir: podDirOf, api };
  if (leaving.length === 0) return facts;
  const running = leaving.flatMap((p) => (p.runtime?.containerStatuses ?? []).filter((c) => c.state === 'running').map((c) => ({ uid: p.uid, id: c.id, name: c.name })));
  const [processes, mountinfo] = await Promise.all([
    gatherProcessFacts(session.endpoint, running, { simulated: session.simulated, ...(signal ? { signal } : {}) }).catch(() => new Map<string, ProcessFact[]>()),
    readMountinfo(),
  ]);
  const mounts = new Map<string, string[]>();
  const points = mountPointsOf(mountinfo);
  for (const p of leaving) {
    const held = mountsUnder(points, podDirOf(p.uid));
    if (held.length > 0) mounts.set(p.uid, held);
  }
  return { ...facts, processes, mounts };
}

export const STATUS_SORT_KEYS = ['name', 'namespace', 'state', 'age', 'in-state', 'grace'] as const;
export type StatusSortKey = (typeof STATUS_SORT_KEYS)[number];

const STATE_ORDER: Record<PodState, number> = { terminating: 0, terminated: 1, sync: 2, runtime: 3, finished: 4 };

/**
 * Rows in the order `--sort-by` asks: name (then namespace), namespace (then name), state (what
 * needs attention first), age (oldest pod first; unknown ages last), in-state (longest in its state
 * first), grace (least grace left first).
 */
export function sortStatusRows(rows: readonly StatusRow[], by: StatusSortKey): StatusRow[] {
  const ref = (r: StatusRow) => `${r.namespace}/${r.name}`;
  const byRef = (a: StatusRow, b: StatusRow) => ref(a).localeCompare(ref(b));
  const sorted = [...rows];
  switch (by) {
    case 'name':
      return sorted.sort((a, b) => a.name.localeCompare(b.name) || byRef(a, b));
    case 'namespace':
      return sorted.sort(byRef);
    case 'state':
      return sorted.sort((a, b) => (STATE_ORDER[a.state] ?? 9) - (STATE_ORDER[b.state] ?? 9) || byRef(a, b));
    case 'age':
      return sorted.sort((a, b) => (b.ageSeconds ?? -1) - (a.ageSeconds ?? -1) || byRef(a, b));
    case 'in-state':
      return sorted.sort((a, b) => b.inStateSeconds - a.inStateSeconds || byRef(a, b));
    case 'grace':
      return sorted.sort((a, b) => (a.graceLeftSeconds ?? Number.POSITIVE_INFINITY) - (b.graceLeftSeconds ?? Number.POSITIVE_INFINITY) || byRef(a, b));
  }
}

/** The API waits open now (a drain held by a budget): loaded only when a drain through the API ever wrote one, so `status` stays off that code otherwise. */
async function openWaits(stateDir: string): Promise<Map<string, ApiWaitRecord>> {
  if (!existsSync(join(stateDir, 'api-waits'))) return new Map();
  const { openApiWaits } = await import('../../store/api-waits.js');
  return openApiWaits(stateDir);
}
