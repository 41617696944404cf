/**
 * `drain` beside a running kubelet, as `kubectl drain` does it: every pod on the node gets a verdict
 * from kubectl's filters (drain-filters.ts: static and DaemonSet pods skipped, terminal pods have
 * nothing to evict, emptyDir data and pods without a controller need consent), the node is cordoned
 * (`spec.unschedulable`) before the first eviction, the pods to evict go through the Eviction API in
 * priority order (lowest first, each priority's pods waited for before the next), honouring
 * PodDisruptionBudgets, and the kubelet stops them.
 *
 * Never a fight with the kubelet: over CRI podctl stops only
 * - a pod this drain evicted that the kubelet has not finished past its deletion (deletionTimestamp,
 *   which already carries the grace) plus a margin, as a fresh GET says just before the stop (same
 *   UID, still deleted); and
 * - a runtime pod the API server does not have, by the orphan rule (orphan-wait.ts: a fresh GET that
 *   says 404, then the kubelet's cleanup time).
 * A pod that appears after the plan (a DaemonSet's replacement under a new UID) is in no plan and is
 * never stopped over CRI.
 *
 * Invariants: nothing is cordoned or evicted in a dry run, nor before every refusal was decided (a
 * refusal happens before the cordon, naming every refused pod); the operator is told how to uncordon.
 */
import type { V1Pod } from '../../engine/types.js';
import type { KubeletStatus } from '../../kube/kubelet.js';
import { formatDuration } from '../../lib/duration.js';
import { UsageError } from '../../lib/errors.js';
import { resolveSelection, type PodSelection } from '../../lib/refs.js';
import { boundSignal, sleep } from '../../lib/abortable.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';
import type { ApiNode } from '../api/api-node.js';
import { consentHint, filterPod, type DrainConsent, type DrainFilter, DRAIN_FILTERS } from './drain-filters.js';
import { podPriority } from '../../engine/pod-kinds.js';
import { guardKill, kubeletFinishingNote, KUBELET_FINISHING, runningInRuntime, stopThroughApi, type GuardInput, type KubeletReport, type PdbBlock } from '../terminate/kubelet-guard.js';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import type { TerminatedPod } from '../terminate/terminate.js';
import { PodSpecs } from '../api/pod-specs.js';

/** How long past its deletionTimestamp the kubelet may take to finish an evicted pod before podctl stops it over CRI. */
const KUBELET_FINISH_MARGIN_MS = 10_000;
/** How long the API server's list of this node's pods may take. */
const API_LIST_BOUND_MS = 10_000;

/**
 * One pod's place in the drain, as the table, the JSON and the Node's Events show it:
 * `evict` through the API server, `cri` stopped over CRI by podctl, `skip` left alone, `refuse`
 * holds the whole drain back until consented.
 */
export interface DrainDecision {
  uid: string;
  namespace: string;
  name: string;
  decision: 'evict' | 'cri' | 'skip' | 'refuse';
  /** The filter or rule that decided: static, terminal, daemonset, emptydir, unmanaged, orphan, excluded, self, kubelet-finishing. */
  reason: string;
  message: string;
}

export interface DrainBesideKubeletOptions {
  session: NodeSession;
  selection: PodSelection;
  isExcluded?: (pod: PodInfo) => boolean;
  /** The drainer's own pod (the agent's). */
  isSelf?: (pod: PodInfo) => boolean;
  kubelet: KubeletStatus;
  api: ApiNode | undefined;
  force: boolean;
  ignorePdb: boolean;
  consent: DrainConsent;
  /** The refusal's next step names the Node's annotations (the agent) instead of flags. */
  agent?: boolean;
  filters?: readonly DrainFilter[];
  dryRun: boolean;
  timeoutMs?: number;
  node: string;
  reporter?: Reporter;
  /** Every PodDisruptionBudget block, once per pod (the agent posts it as a Node Event). */
  onPdbBlock?: (block: PdbBlock) => void;
  signal?: AbortSignal;
  now?: () => number;
}

export interface DrainBesideKubelet {
  kubelet: KubeletReport;
  /** 'api': the kubelet runs and the API server decides (filters, evictions); 'cri': podctl drains over CRI (kubelet down, or --force). */
  mode: 'api' | 'cri';
  /** The node was cordoned by this drain (null: not needed, or a dry run). */
  cordoned: { node: string; uncordon: string } | null;
  /** Pods the kubelet stopped, asked through the API server. */
  viaApi: TerminatedPod[];
  /** Every pod's verdict (mode 'api'). */
  decisions: DrainDecision[];
  /** mode 'api': the only pods podctl may stop over CRI (evicted and unfinished past the margin, confirmed orphans). */
  criUids: Set<string>;
  /** This node's pods as the API server held them at the plan: what the CRI drain hands to the syncer. */
  specs: PodSpecs;
}

const refOf = (p: { namespace: string; name: string }): string => `${p.namespace}/${p.name}`;

/**
 * The kubelet down, no API server to decide, or --force: the CRI drain's report, with the kubelet
 * rule's verdict on the candidates (nothing stopped here: the CRI drain stops them).
 */
async function overCri(options: DrainBesideKubeletOptions, live: PodInfo[], reporter: Reporter): Promise<DrainBesideKubelet> {
  const { session, kubelet } = options;
  const candidates = live.filter((p) => !(options.isExcluded?.(p) ?? false) && !(options.isSelf?.(p) ?? false));
  const guard = { kubelet, api: options.force ? undefined : options.api, force: options.force, viaApi: false, ignorePdb: options.ignorePdb };
  const plan = await guardKill({ session, targets: candidates, mode: 'evict', action: 'drain', dryRun: true, reporter, guard });
  return { kubelet: plan.report, mode: 'cri', cordoned: null, viaApi: [], decisions: [], criUids: new Set(), specs: plan.specs };
}

/** This node's pods as the API server holds them (bounded); a failure is a UsageError: nothing is drained blind. */
async function listApiPods(api: ApiNode, options: DrainBesideKubeletOptions): Promise<V1Pod[]> {
  try {
    return await api.kube.listNodePods(boundSignal(API_LIST_BOUND_MS, options.signal));
  } catch (error) {
    throw new UsageError(
      `the kubelet is ${options.kubelet.state} and the API server's list of this node's pods failed (${(error as Error).message}): nothing can be drained without knowing what the kubelet runs`,
      'retry when the API server answers, or pass --force to stop over CRI anyway',
    );
  }
}

/** Throws one UsageError naming every refused pod and the consent each needs (nothing cordoned yet). */
function refuseUnconsented(decisions: DrainDecision[], options: DrainBesideKubeletOptions): void {
  const refused = decisions.filter((d) => d.decision === 'refuse');
  if (refused.length === 0) return;
  const reasons = [...new Set(refused.map((d) => d.reason as 'emptydir' | 'unmanaged'))];
  throw new UsageError(`drain refused: ${refused.map((d) => `${refOf(d)} (${d.message})`).join(', ')}`, reasons.map((r) => consentHint(r, options.agent === true)).join('; ') + ' to drain anyway');
}

/** What each eviction is given: the kubelet guard through the API server, the drain's bounds and PDB hook. */
function guardInput(options: DrainBesideKubeletOptions, api: ApiNode, reporter: Reporter): GuardInput {
  return {
    session: options.session,
    mode: 'evict',
    action: 'drain',
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    reporter,
    ...(options.signal ? { signal: options.signal } : {}),
    guard: { kubelet: options.kubelet, api, force: false, viaApi: true, ignorePdb: options.ignorePdb },
    // a drain waits on a PodDisruptionBudget up to its own bound, and without one for as long as it takes (kubectl's)
    pdbBoundMs: options.timeoutMs ?? Number.POSITIVE_INFINITY,
    ...(options.onPdbBlock ? { onPdbBlock: options.onPdbBlock } : {}),
  };
}

/**
 * Evicts (or with --ignore-pdb deletes) the pods through the API server, lowest priority first,
 * each priority's pods waited for before the next; stops at an abort. Sorted by namespace/name.
 */
async function evictByPriority(api: ApiNode, pods: PodInfo[], apiPods: Map<string, V1Pod>, input: GuardInput, reporter: Reporter, now: () => number): Promise<TerminatedPod[]> {
  const byPriority = new Map<number, PodInfo[]>();
  for (const pod of pods) {
    const priority = podPriority(apiPods.get(pod.uid) ?? pod.pod);
    byPriority.set(priority, [...(byPriority.get(priority) ?? []), pod]);
  }
  const stopped: TerminatedPod[] = [];
  const mode = input.guard.ignorePdb ? 'delete' : 'evict';
  for (const priority of [...byPriority.keys()].sort((a, b) => a - b)) {
    if (input.signal?.aborted) break;
    const done = await Promise.all(byPriority.get(priority)!.map((pod) => stopThroughApi(api, pod, graceOf(apiPods.get(pod.uid)), mode, input, reporter, now())));
    stopped.push(...done);
  }
  return stopped.sort((a, b) => refOf(a).localeCompare(refOf(b)));
}

/**
 * The kubelet's to finish: of the evicted pods it did not finish in the wait, the ones it left past
 * the margin join `criUids` (verdict `cri`); the others say why they are still finishing.
 */
async function settleLeftovers(api: ApiNode, result: DrainBesideKubelet, options: DrainBesideKubeletOptions, started: number, reporter: Reporter): Promise<void> {
  const rowOf = (uid: string): DrainDecision | undefined => result.decisions.find((d) => d.uid === uid);
  for (const pod of result.viaApi.filter((p) => p.outcome === 'timeout')) {
    const decision = await kubeletLeftIt(api, pod, options, started);
    const row = rowOf(pod.uid);
    if (decision.stop) {
      result.criUids.add(pod.uid);
      if (row) Object.assign(row, { decision: 'cri', reason: 'kubelet-unfinished', message: decision.message });
      reporter.warn(`drain: ${refOf(pod)}: ${decision.message}; podctl stops it over CRI`);
    } else if (pod.outcome !== 'terminated') {
      pod.error = decision.message;
      if (row) Object.assign(row, { reason: 'kubelet-finishing', message: decision.message });
    }
  }
  // gone from the API while the runtime still runs it: said in the verdicts too (table, JSON, Events)
  for (const pod of result.viaApi.filter((p) => p.outcome === 'kubelet-finishing')) {
    const row = rowOf(pod.uid);
    if (row && pod.error !== undefined) Object.assign(row, { reason: 'kubelet-finishing', message: pod.error });
  }
}

/** Runtime pods the API server does not have, by the orphan rule: the confirmed join `criUids`, the others are skipped. */
async function settleOrphans(api: ApiNode, result: DrainBesideKubelet, candidates: PodInfo[], options: DrainBesideKubeletOptions): Promise<void> {
  const { decideOrphans } = await import('../api/orphan-wait.js');
  const verdict = await decideOrphans({
    candidates,
    kubelet: options.kubelet.state,
    api,
    stateDir: options.session.stateDir,
    force: false,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  for (const uid of verdict.released) result.criUids.add(uid);
  for (const kept of verdict.kept) {
    const row = result.decisions.find((d) => d.uid === kept.uid);
    if (row) Object.assign(row, { decision: 'skip', reason: 'orphan', message: kept.reason });
  }
}

export async function drainBesideKubelet(options: DrainBesideKubeletOptions): Promise<DrainBesideKubelet> {
  const reporter = options.reporter ?? silentReporter();
  const now = options.now ?? Date.now;
  const started = now();
  const { session, kubelet } = options;
  const listed = await session.listPods({ runtimeMaxAgeMs: 1_000, ...(options.signal ? { signal: options.signal } : {}) });
  const { targets } = resolveSelection(listed, options.selection);
  const live = targets.filter((p) => p.state !== 'finished');
  // the kubelet down: over CRI; no API server to decide: the kubelet rule refuses (or --force goes over CRI)
  if (kubelet.state === 'down' || !options.api || options.force) return overCri(options, live, reporter);
  const api = options.api;
  const apiPods = await listApiPods(api, options);
  const decisions = decide(live, apiPods, options);
  if (!options.dryRun) refuseUnconsented(decisions, options);
  const toEvict = decisions.filter((d) => d.decision === 'evict');
  const orphans = decisions.filter((d) => d.decision === 'cri');
  const evictable = new Map(live.map((p) => [p.uid, p]));
  const byUid = new Map(apiPods.map((p) => [p.metadata?.uid ?? '', p]));
  const result: DrainBesideKubelet = {
    kubelet: { state: kubelet.state, detail: kubelet.detail, action: 'via-api', desired: toEvict.map(refOf) },
    mode: 'api',
    cordoned: null,
    viaApi: [],
    decisions,
    criUids: new Set(),
    specs: new PodSpecs(apiPods),
  };
  if (options.dryRun) {
    result.viaApi = toEvict.map((d) => ({ uid: d.uid, namespace: d.namespace, name: d.name, gracePeriodSeconds: graceOf(byUid.get(d.uid)), outcome: 'planned', handledBy: 'api' }));
    return result;
  }
  await api.kube.setUnschedulable(true, options.signal);
  const uncordon = `kubectl uncordon ${options.node}`;
  result.cordoned = { node: options.node, uncordon };
  reporter.info(`drain: node ${options.node} cordoned (no new pods are scheduled here); after maintenance: ${uncordon}`);
  const pods = toEvict.map((d) => evictable.get(d.uid) ?? apiOnlyPod(byUid.get(d.uid)!));
  result.viaApi = await evictByPriority(api, pods, byUid, guardInput(options, api, reporter), reporter, now);
  await settleLeftovers(api, result, options, started, reporter);
  if (orphans.length > 0 && !options.signal?.aborted) {
    await settleOrphans(api, result, orphans.map((d) => evictable.get(d.uid)!).filter(Boolean), options);
  }
  return result;
}

/** Every runtime pod and every API pod of the node with its verdict, sorted by namespace/name. */
function decide(live: PodInfo[], apiPods: V1Pod[], options: DrainBesideKubeletOptions): DrainDecision[] {
  const filters = options.filters ?? DRAIN_FILTERS;
  const byUid = new Map(apiPods.map((p) => [p.metadata?.uid ?? '', p]));
  const decisions: DrainDecision[] = [];
  const seen = new Set<string>();
  const row = (p: { uid: string; namespace: string; name: string }, decision: DrainDecision['decision'], reason: string, message: string): void => {
    seen.add(p.uid);
    decisions.push({ uid: p.uid, namespace: p.namespace, name: p.name, decision, reason, message });
  };
  const staticNames = new Set<string>();
  for (const pod of live) {
    if (options.isSelf?.(pod)) row(pod, 'skip', 'self', "the drainer's own pod");
    else if (options.isExcluded?.(pod)) row(pod, 'skip', 'excluded', '--exclude');
    else if (pod.static) {
      staticNames.add(refOf(pod));
      row(pod, 'skip', 'static', "static pod: the kubelet runs it from its manifests and stops it at the node's shutdown");
    } else {
      const apiPod = byUid.get(pod.uid);
      if (apiPod) {
        const verdict = filterPod(apiPod, options.consent, filters);
        row(pod, verdict.action, verdict.action === 'evict' ? 'evict' : verdict.reason, verdict.message);
      } else row(pod, 'cri', 'orphan', 'in the runtime, not in the API server: stopped over CRI once a fresh GET says it is gone and the kubelet had its cleanup time');
    }
  }
  // API pods of the node the runtime does not show (not started yet, or already gone there)
  const apiOnly = apiPods.filter((p) => !seen.has(p.metadata?.uid ?? '')).map(apiOnlyPod);
  for (const pod of resolveSelection(apiOnly, options.selection).targets) {
    if (staticNames.has(refOf(pod))) continue; // the mirror of a static pod already listed
    if (options.isExcluded?.(pod)) {
      row(pod, 'skip', 'excluded', '--exclude');
      continue;
    }
    const verdict = filterPod(pod.pod!, options.consent, filters);
    row(pod, verdict.action, verdict.action === 'evict' ? 'evict' : verdict.reason, verdict.message);
  }
  return decisions.sort((a, b) => refOf(a).localeCompare(refOf(b)));
}

/** An API pod the runtime does not show, as the planners read pods. */
function apiOnlyPod(pod: V1Pod): PodInfo {
  return {
    uid: pod.metadata?.uid ?? '',
    namespace: pod.metadata?.namespace ?? 'default',
    name: pod.metadata?.name ?? '',
    pod,
    static: false,
    state: 'runtime',
    containersRunning: 0,
    containersTotal: 0,
    since: 0,
    history: [],
  };
}

function graceOf(pod: V1Pod | undefined): number {
  return Math.max(1, pod?.spec?.terminationGracePeriodSeconds ?? 30);
}

/**
 * An evicted pod the kubelet did not finish within the drain's wait: stopped over CRI only when a
 * fresh GET still shows it (same UID) deleted and past its deletionTimestamp plus the margin; until
 * then (within the drain's bound) podctl waits and asks again.
 */
async function kubeletLeftIt(api: ApiNode, pod: TerminatedPod, options: DrainBesideKubeletOptions, started: number): Promise<{ stop: boolean; message: string }> {
  const now = options.now ?? Date.now;
  const deadline = options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : started + options.timeoutMs;
  for (;;) {
    let current: V1Pod | undefined;
    try {
      current = await api.kube.getPod(pod.namespace, pod.name, options.signal);
    } catch (error) {
      return { stop: false, message: `${KUBELET_FINISHING} (the API server did not answer: ${(error as Error).message})` };
    }
    if (current === undefined || current.metadata?.uid !== pod.uid) {
      // gone from the API: terminated only on the runtime's word
      const running = await runningInRuntime(options.session, pod.uid, options.signal);
      if (running === 0) {
        pod.outcome = 'terminated';
        delete pod.error;
        return { stop: false, message: 'the kubelet finished it' };
      }
      pod.outcome = 'kubelet-finishing';
      return { stop: false, message: kubeletFinishingNote(running) };
    }
    const deletedAt = current.metadata?.deletionTimestamp;
    if (deletedAt === undefined || deletedAt === null) return { stop: false, message: 'not deleted in the API: left to the kubelet' };
    const due = new Date(deletedAt).getTime() + KUBELET_FINISH_MARGIN_MS;
    if (now() >= due) return { stop: true, message: `the kubelet left it ${formatDuration(now() - due + KUBELET_FINISH_MARGIN_MS)} past its deletion` };
    if (due > deadline || options.signal?.aborted) return { stop: false, message: `${KUBELET_FINISHING} (podctl steps in ${formatDuration(due - now())} after its deletion, past the drain's bound)` };
    await sleep(Math.min(due - now(), 1_000), options.signal).catch(() => undefined);
  }
}
