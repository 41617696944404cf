/**
 * Housekeeping with the API server as the source of desired pods, as the kubelet does it:
 * mirror pods stand for the runtime's static pods, pods deleted in the API are terminated with the
 * API's grace, and once such a pod has nothing running on this node podctl finishes what the API
 * asked with the kubelet's final delete (gracePeriodSeconds 0, preconditions.uid).
 *
 * Used by `sync-known` (desired from the API); the same steps serve a long-running owner.
 *
 * Invariants:
 * - The final delete is never issued for a pod that still runs here (`terminatedOnNode`).
 * - A pod terminal in the API (Succeeded/Failed) whose containers run here is stopped with its
 *   grace (a Killing Event) and never deleted by podctl, deletionTimestamp or not.
 * - A deletion's grace only shortens a kill (the engine's rule); the Killing Event carries it.
 * - API writes never block: what the server cannot take is recorded and replayed later.
 */
import type { V1Pod } from '../../engine/types.js';
import { planDesired, type Deletion, type DesiredPlan, type RuntimePodRef, type TerminalStop } from '../../kube/desired.js';
import { EXCEEDED_GRACE_MESSAGE, EventReason, failedKillMessage, killingMessage } from '../../kube/status.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';
import { terminatedOnNode, type ApiNode } from '../api/api-node.js';
import { checkPodVolumes, volumeWithheldReason } from '../diagnose/volumes.js';
import type { NodeSession, PodInfo, SessionEvent } from '../../domain/session-api.js';

export interface ApiPodName {
  uid: string;
  namespace: string;
  name: string;
}

export interface ApiSyncReport {
  /** Pods bound to this node in the API (mirror pods included). */
  apiPods: number;
  /** Mirror pods and the runtime static pod each stands for (null: none in the runtime). */
  mirrors: { namespace: string; name: string; staticUid: string | null }[];
  /** Pods deleted in the API and terminated here with the API's grace. */
  deleting: (ApiPodName & { gracePeriodSeconds: number })[];
  /** Pods terminal in the API (Succeeded/Failed) whose containers ran here: terminated with their grace, not deleted. */
  terminalStopped: (ApiPodName & { phase: string; gracePeriodSeconds: number })[];
  /** Final deletes issued (the pod left Terminating in the API). */
  finallyDeleted: ApiPodName[];
  /** Final deletes answered 404/409 (already gone or replaced): forgotten. */
  alreadyGone: ApiPodName[];
  /** Deleted pods still running here: no final delete yet. */
  stillRunning: ApiPodName[];
  /** API writes recorded for a later run (the server could not be reached). */
  pendingRecorded: number;
  /** Pending writes of earlier runs sent now / still left. */
  pendingSent: number;
  pendingLeft: number;
  /** Deletions left to a running kubelet (podctl neither kills them nor issues their final delete). */
  leftToKubelet: ApiPodName[];
  /** Final deletes withheld: a volume of the pod is still mounted under the kubelet's pods directory. */
  withheld: (ApiPodName & { reason: string })[];
  /** Pods held in the API by finalizers, which podctl never edits. */
  finalizers: (ApiPodName & { finalizers: string[]; explanation: string })[];
}

export interface ApiSyncRun {
  desired: V1Pod[];
  plan: DesiredPlan;
  /** After housekeeping drove the kills: final deletes, and the report. */
  finish(): Promise<ApiSyncReport>;
}

export interface ApiSyncOptions {
  session: NodeSession;
  api: ApiNode;
  /** The session's pods before the sync (the runtime's, with static flags). */
  before: PodInfo[];
  /** A kubelet runs: deletions are its to finish (no kill, no final delete here). */
  leaveToKubelet?: boolean;
  /** Where the kubelet keeps pod volumes (the final delete's mount check); default /var/lib/kubelet. */
  kubeletRoot?: string;
  reporter?: Reporter;
  signal?: AbortSignal;
  /**
   * The pods come from a cache the API server may not have refreshed (it does not answer): pending
   * writes are not replayed and no final delete is sent this time (each would wait for it).
   */
  stale?: boolean;
}

const nameOf = (d: { uid: string; namespace: string; name: string }): ApiPodName => ({ uid: d.uid, namespace: d.namespace, name: d.name });

export function runtimeRefs(pods: PodInfo[]): RuntimePodRef[] {
  return pods.filter((p) => p.runtime !== undefined || p.state !== 'finished').map((p) => ({ uid: p.uid, namespace: p.namespace, name: p.name, static: p.static, ...(p.pod ? { pod: p.pod } : {}) }));
}

/** What the API server asks of this node, read only (a dry run stops here). */
export interface ApiSyncPlan {
  apiPods: V1Pod[];
  plan: DesiredPlan;
}

/** Lists the API (or takes `apiPods`, the agent's watched copy) and plans the desired set; writes nothing. */
export async function planApiSync(options: Pick<ApiSyncOptions, 'api' | 'before' | 'signal'> & { apiPods?: V1Pod[] }): Promise<ApiSyncPlan> {
  const apiPods = options.apiPods ?? (await options.api.kube.listNodePods(options.signal));
  return { apiPods, plan: planDesired(apiPods, runtimeRefs(options.before)) };
}

/** What the steps of one sync share: its options, where it reports, and the API writes it awaits and counts. */
interface SyncSteps {
  options: ApiSyncOptions;
  reporter: Reporter;
  /** Events in flight beside the kills; `finish` awaits them all. */
  inFlight: Promise<void>[];
  /** API writes the server could not take, recorded for a later run. */
  pendingRecorded: number;
  /** Counts an API write's outcome ('pending' is one more recorded write). */
  readonly count: (outcome: string) => void;
}

/** Sends earlier runs' pending writes and starts the kills the API asked for (listing first unless `planned`). */
export async function startApiSync(options: ApiSyncOptions, planned?: ApiSyncPlan): Promise<ApiSyncRun> {
  const { session, api } = options;
  const { apiPods, plan } = planned ?? (await planApiSync(options));
  const replay = options.stale ? { done: 0, left: 0 } : await api.replayPending(async (uid) => !terminatedOnNode(await session.getPod(uid)));
  const steps: SyncSteps = {
    options,
    reporter: options.reporter ?? silentReporter(),
    inFlight: [],
    pendingRecorded: 0,
    count: (outcome) => {
      if (outcome === 'pending') steps.pendingRecorded += 1;
    },
  };
  const unsubscribe = reportKillFailures(steps, plan.deletions);
  const local = new Map(options.before.map((p) => [p.uid, p]));
  const driven = await killDeletions(steps, options.leaveToKubelet ? [] : plan.deletions, local);
  const stopped = await stopTerminal(steps, options.leaveToKubelet ? [] : plan.terminal, local);
  return {
    desired: plan.desired,
    plan,
    async finish() {
      unsubscribe();
      await Promise.all(steps.inFlight);
      const report: ApiSyncReport = {
        apiPods: apiPods.length,
        mirrors: plan.mirrors.map((m) => ({ namespace: m.mirror.namespace, name: m.mirror.name, staticUid: m.staticUid ?? null })),
        deleting: driven.map((d) => ({ ...nameOf(d), gracePeriodSeconds: d.gracePeriodSeconds })),
        terminalStopped: stopped.map((t) => ({ ...nameOf(t), phase: t.phase, gracePeriodSeconds: t.gracePeriodSeconds })),
        finallyDeleted: [],
        alreadyGone: [],
        stillRunning: [],
        pendingRecorded: 0,
        pendingSent: replay.done,
        pendingLeft: replay.left,
        leftToKubelet: options.leaveToKubelet ? plan.deletions.map(nameOf) : [],
        withheld: [],
        finalizers: heldByFinalizers(plan.deletions),
      };
      for (const d of options.leaveToKubelet ? [] : plan.deletions) await finishDeletion(steps, d, report);
      report.pendingRecorded = steps.pendingRecorded;
      return report;
    },
  };
}

/** Sends a FailedKillPod Event when the engine's work on a deleted pod fails, once per pod and reason; returns the unsubscribe. */
function reportKillFailures(steps: SyncSteps, deletions: readonly Deletion[]): () => void {
  const { session, api } = steps.options;
  const deletionsByUid = new Map(deletions.map((d) => [d.uid, d]));
  return session.subscribe((event: SessionEvent) => {
    if (event.source !== 'engine' || event.event.type !== 'sync-failed' || event.event.aborted) return;
    const d = deletionsByUid.get(event.event.uid);
    if (!d || (event.event.phase !== 'terminating' && event.event.phase !== 'terminating-runtime')) return;
    steps.inFlight.push(api.event(d.pod, 'Warning', EventReason.FailedKillPod, failedKillMessage(event.event.error)).then(steps.count, () => {}));
  });
}

/** Kills each pod deleted in the API that still runs here, with the API's grace and a Killing Event; returns those it drives. */
async function killDeletions(steps: SyncSteps, deletions: readonly Deletion[], local: ReadonlyMap<string, PodInfo>): Promise<Deletion[]> {
  const { session, api } = steps.options;
  const { reporter } = steps;
  const driven: Deletion[] = [];
  for (const d of deletions) {
    if (terminatedOnNode(local.get(d.uid))) continue; // nothing runs here: straight to the final delete
    // the Event goes out beside the kill, as the kubelet's recorder sends it: the kill waits for no API write
    steps.inFlight.push(api.event(d.pod, 'Normal', EventReason.Killing, killingMessage(d.gracePeriodSeconds)).then(steps.count, (e: Error) => reporter.warn(e.message)));
    try {
      // the API records the deletion and its grace: the checkpoint is written beside the stop (recordedInApi)
      await session.requestKill({ uid: d.uid, gracePeriodSeconds: d.gracePeriodSeconds, pod: d.pod, recordedInApi: true });
      driven.push(d);
      reporter.info(`${d.namespace}/${d.name}: deleted in the API server; terminating with its grace ${d.gracePeriodSeconds}s`);
    } catch (error) {
      reporter.warn(`${d.namespace}/${d.name}: deleted in the API server, but the kill failed: ${(error as Error).message}`);
    }
  }
  return driven;
}

/** Stops the containers of each pod terminal in the API that still runs here, as the kubelet does (no delete); returns those stopped. */
async function stopTerminal(steps: SyncSteps, terminal: readonly TerminalStop[], local: ReadonlyMap<string, PodInfo>): Promise<TerminalStop[]> {
  const { session, api } = steps.options;
  const { reporter } = steps;
  const stopped: TerminalStop[] = [];
  for (const t of terminal) {
    const pod = local.get(t.uid);
    if (!pod || (pod.state !== 'sync' && pod.state !== 'runtime') || pod.containersRunning === 0) continue;
    steps.inFlight.push(api.event(t.pod, 'Normal', EventReason.Killing, killingMessage(t.gracePeriodSeconds)).then(steps.count, (e: Error) => reporter.warn(e.message)));
    try {
      await session.requestKill({ uid: t.uid, gracePeriodSeconds: t.gracePeriodSeconds, pod: t.pod, reason: t.reason });
      stopped.push(t);
      reporter.info(`${t.namespace}/${t.name}: ${t.reason}; terminating with its grace ${t.gracePeriodSeconds}s`);
    } catch (error) {
      reporter.warn(`${t.namespace}/${t.name}: ${t.phase} in the API server, but the kill failed: ${(error as Error).message}`);
    }
  }
  return stopped;
}

/** The deleted pods that finalizers hold in the API (podctl never edits them). */
function heldByFinalizers(deletions: readonly Deletion[]): ApiSyncReport['finalizers'] {
  return deletions.flatMap((d) => {
    const finalizers = d.pod.metadata?.finalizers ?? [];
    return finalizers.length > 0 ? [{ ...nameOf(d), finalizers, explanation: `waiting on finalizer ${finalizers.join(', ')}, which podctl does not own` }] : [];
  });
}

/**
 * The final delete of one deleted pod, recorded in `report`: only once nothing runs here and no volume
 * of it is still mounted, and not from a stale cache; a pod still running past its grace gets its
 * ExceededGracePeriod Event instead.
 */
async function finishDeletion(steps: SyncSteps, d: Deletion, report: ApiSyncReport): Promise<void> {
  const { options, reporter } = steps;
  const { api } = options;
  const pod = await options.session.getPod(d.uid);
  // nothing runs, but the final delete waits until the API server answers again
  if (options.stale && terminatedOnNode(pod)) return;
  if (!terminatedOnNode(pod)) {
    report.stillRunning.push(nameOf(d));
    if (pod?.state === 'terminating' && pod.graceDeadline !== undefined && Date.now() > pod.graceDeadline) {
      steps.count(await api.event(d.pod, 'Warning', EventReason.ExceededGracePeriod, EXCEEDED_GRACE_MESSAGE).catch(() => 'failed'));
    }
    return;
  }
  // the kubelet's own last check: no volume of the pod still mounted
  const reason = volumeWithheldReason(await checkPodVolumes(d.uid, options.kubeletRoot));
  if (reason !== undefined) {
    report.withheld.push({ ...nameOf(d), reason });
    reporter.info(`${d.namespace}/${d.name}: final delete ${reason}`);
    return;
  }
  let outcome: string;
  try {
    outcome = await api.finalDelete(d);
  } catch (error) {
    reporter.warn(`${d.namespace}/${d.name}: final delete failed: ${(error as Error).message}`);
    return;
  }
  steps.count(outcome);
  if (outcome === 'done') report.finallyDeleted.push(nameOf(d));
  else if (outcome === 'forgotten') report.alreadyGone.push(nameOf(d));
  else if (outcome === 'withheld') report.withheld.push({ ...nameOf(d), reason: `withheld: API writes are withheld (${api.kube.writes.reason ?? 'the write gate is shut'})` });
}
