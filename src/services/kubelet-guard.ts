/**
 * A kill beside a running kubelet. The pods it desires (bound to this node in the API, or static
 * pods from its manifests) are its own: stopping them over CRI is useless, it starts them again.
 * So a kill of such a pod warns in one line and recommends the API delete; `--via-api` issues that
 * delete itself (with the grace) and waits for the pod to leave the API; `--force` proceeds over
 * CRI. The decision is `desiredPodPolicy` (kube/kubelet.ts), one function.
 *
 * Invariants:
 * - With the kubelet down (healthz silent, no process, or a stale node Lease) nothing changes.
 * - `unknown` counts as running.
 * - The wait for an API delete is bounded (--timeout, else the killPodNow bound of the grace).
 */
import type { V1Pod } from '../engine/types.js';
import { desiredInApi, isMirrorPod } from '../kube/desired.js';
import { desiredPodPolicy, type DesiredPodAction, type KubeletStatus } from '../kube/kubelet.js';
import { UsageError } from '../lib/errors.js';
import { formatDuration } from '../lib/duration.js';
import { effectiveGraceSeconds, killPodNowBoundMs } from '../lib/grace.js';
import { resolveSelection, type PodSelection } from '../lib/refs.js';
import { silentReporter, type Reporter } from '../lib/reporter.js';
import { sleep } from '../kube/retry.js';
import type { ApiNode } from './api-node.js';
import type { NodeSession, PodInfo } from './session-api.js';
import type { TerminatedPod } from './terminate.js';

export interface KubeletGuardOptions {
  kubelet: KubeletStatus;
  api?: ApiNode | undefined;
  force: boolean;
  viaApi: boolean;
}

/** What `kill` says about the kubelet in its result. */
export interface KubeletReport {
  state: KubeletStatus['state'];
  detail: string;
  action: DesiredPodAction;
  /** Targets the kubelet desires ("ns/name"). */
  desired: string[];
}

export interface GuardInput {
  session: NodeSession;
  selection: PodSelection;
  gracePeriodSeconds?: number;
  timeoutMs?: number;
  reporter?: Reporter;
  signal?: AbortSignal;
  /** Plan only: nothing is deleted through the API (outcome `planned`). */
  dryRun?: boolean;
  guard: KubeletGuardOptions;
}

export interface GuardOutcome {
  report: KubeletReport;
  /** Pods deleted through the API (--via-api), with their outcome. */
  viaApi: TerminatedPod[];
  /** UIDs left for the CRI path (all targets unless --via-api took some). */
  remaining: string[] | undefined;
}

/** How long a kill waits for the API server's list of this node's pods, ms. */
export const API_LIST_BOUND_MS = 5_000;

const refOf = (p: { namespace: string; name: string }): string => `${p.namespace}/${p.name}`;

export async function guardKill(input: GuardInput): Promise<GuardOutcome> {
  const reporter = input.reporter ?? silentReporter();
  const { guard, session } = input;
  const { targets } = resolveSelection(await session.listPods({ runtimeMaxAgeMs: 1_000 }), input.selection);
  let apiPods: V1Pod[] = [];
  if (guard.api && guard.kubelet.state !== 'down') {
    try {
      // bounded: the kill does not wait long for an API server that does not answer
      const bound = AbortSignal.timeout(API_LIST_BOUND_MS);
      apiPods = await guard.api.kube.listNodePods(input.signal ? AbortSignal.any([bound, input.signal]) : bound);
    } catch (error) {
      reporter.warn(`cannot tell which pods the kubelet desires from the API server: ${(error as Error).message}`);
    }
  }
  const desiredPods = targets.filter((p) => p.state !== 'finished' && (p.static || desiredInApi(apiPods, p.uid) !== undefined));
  const action = desiredPodPolicy({ kubelet: guard.kubelet.state, desired: desiredPods.length > 0, force: guard.force, viaApi: guard.viaApi });
  const report: KubeletReport = { state: guard.kubelet.state, detail: guard.kubelet.detail, action, desired: desiredPods.map(refOf) };
  const names = desiredPods.map(refOf).join(', ');
  switch (action) {
    case 'proceed':
      if (desiredPods.length > 0 && guard.force) reporter.warn(`--force: killing ${names} over CRI while the kubelet is ${guard.kubelet.state}; it may start them again`);
      return { report, viaApi: [], remaining: undefined };
    case 'warn':
      reporter.warn(`the kubelet is ${guard.kubelet.state} (${guard.kubelet.detail}) and still desires ${names}: it will start them again; delete through the API instead (podctl kill --via-api, or kubectl delete pod), or pass --force`);
      return { report, viaApi: [], remaining: undefined };
    case 'refuse':
      throw new UsageError(`the kubelet is ${guard.kubelet.state} and still desires ${names}`, 'delete through the API (--via-api), or pass --force to kill over CRI anyway');
    case 'via-api':
      break;
  }
  if (!guard.api) throw new UsageError('--via-api needs an API server', 'pass --kubeconfig FILE or set KUBECONFIG');
  const viaApi: TerminatedPod[] = [];
  const throughApi = new Set<string>();
  const staticOnly: PodInfo[] = [];
  for (const pod of desiredPods) {
    const apiPod = desiredInApi(apiPods, pod.uid);
    if (!apiPod || isMirrorPod(apiPod)) {
      staticOnly.push(pod); // a static pod: the API cannot delete it
      continue;
    }
    throughApi.add(pod.uid);
    if (input.dryRun) {
      viaApi.push({ uid: pod.uid, namespace: pod.namespace, name: pod.name, gracePeriodSeconds: effectiveGraceSeconds(pod, input.gracePeriodSeconds), outcome: 'planned' });
      continue;
    }
    viaApi.push(await deleteThroughApi(guard.api, pod, input, reporter));
  }
  if (staticOnly.length > 0) {
    reporter.warn(`${staticOnly.map(refOf).join(', ')}: static pods cannot be deleted through the API server; killing them over CRI, and the kubelet may start them again (remove their manifests to stop them for good)`);
  }
  return { report, viaApi, remaining: targets.filter((p) => !throughApi.has(p.uid)).map((p) => p.uid) };
}

async function deleteThroughApi(api: ApiNode, pod: PodInfo, input: GuardInput, reporter: Reporter): Promise<TerminatedPod> {
  const grace = effectiveGraceSeconds(pod, input.gracePeriodSeconds);
  const entry: TerminatedPod = { uid: pod.uid, namespace: pod.namespace, name: pod.name, gracePeriodSeconds: grace, outcome: 'requested' };
  const started = Date.now();
  const ref = { namespace: pod.namespace, name: pod.name, uid: pod.uid };
  try {
    const outcome = await api.kube.deletePod(ref, input.gracePeriodSeconds, input.signal);
    if (outcome !== 'accepted') {
      entry.outcome = 'gone';
      return entry;
    }
  } catch (error) {
    entry.outcome = 'failed';
    entry.error = (error as Error).message;
    reporter.warn(`${refOf(pod)}: delete through the API failed: ${entry.error}`);
    return entry;
  }
  const boundMs = input.timeoutMs ?? killPodNowBoundMs(grace);
  reporter.info(`kill --via-api: ${refOf(pod)} deleted in the API server with grace ${grace}s; waiting up to ${formatDuration(boundMs)} for the kubelet to finish it`);
  for (;;) {
    let current: V1Pod | undefined;
    try {
      current = await api.kube.getPod(pod.namespace, pod.name, input.signal);
    } catch (error) {
      reporter.debug(`${refOf(pod)}: ${(error as Error).message}`);
    }
    if (current === undefined || current.metadata?.uid !== pod.uid) {
      entry.outcome = 'terminated';
      entry.elapsedMs = Date.now() - started;
      return entry;
    }
    if (Date.now() - started >= boundMs || input.signal?.aborted) {
      entry.outcome = 'timeout';
      reporter.warn(`${refOf(pod)} still in the API server after ${formatDuration(boundMs)}; the kubelet goes on with its deletion`);
      return entry;
    }
    await sleep(Math.min(500, boundMs), input.signal).catch(() => {});
  }
}
