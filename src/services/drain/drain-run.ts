/**
 * The one drain composition, used by `podctl drain` and by the agent's maintenance drain: first the
 * part beside the kubelet (drain-kubelet.ts: kubectl drain's filters, the cordon, the Eviction API),
 * then the CRI drain (drain.ts) over exactly what that part leaves to CRI — everything when the
 * kubelet is down (the kubelet's graceful node shutdown), only the pods it names beside a running
 * kubelet.
 *
 * Invariants: beside a running kubelet with an API server, no pod outside `criUids` is planned over
 * CRI (a pod that appears after the plan never is).
 */
import type { KubeletStatus } from '../../kube/kubelet.js';
import type { PodSelection } from '../../lib/refs.js';
import type { Reporter } from '../../lib/reporter.js';
import type { ApiNode } from '../api/api-node.js';
import { drainBesideKubelet, type DrainDecision } from './drain-kubelet.js';
import type { DrainConsent } from './drain-filters.js';
import type { PriorityGroup } from './drain-plan.js';
import { drainNode, type DrainResult } from './drain.js';
import type { KubeletReport, PdbBlock } from '../terminate/kubelet-guard.js';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import type { ConsentGate, TerminatedPod } from '../terminate/terminate.js';

export interface RunDrainOptions {
  session: NodeSession;
  selection: PodSelection;
  groups: PriorityGroup[];
  isExcluded?: (pod: PodInfo) => boolean;
  isSelf?: (pod: PodInfo) => boolean;
  kubelet: KubeletStatus;
  api: ApiNode | undefined;
  force: boolean;
  ignorePdb: boolean;
  consent: DrainConsent;
  /** The agent's drain: refusals name the Node's annotations. */
  agent?: boolean;
  dryRun: boolean;
  timeoutMs?: number;
  node: string;
  reporter?: Reporter;
  onPdbBlock?: (block: PdbBlock) => void;
  /** A drain over CRI (the kubelet down, no API server, or --force): static and system-critical pods need this yes first. */
  gate?: ConsentGate;
  signal?: AbortSignal;
}

export interface FullDrainResult extends DrainResult {
  kubelet: KubeletReport;
  cordoned: { node: string; uncordon: string } | null;
  /** Pods evicted (or planned) through the API server, with their outcome. */
  viaApi: TerminatedPod[];
  /** Every pod's verdict beside a running kubelet (kubectl drain's filters); empty for a CRI drain. */
  decisions: DrainDecision[];
}

export async function runDrain(options: RunDrainOptions): Promise<FullDrainResult> {
  const beside = await drainBesideKubelet({
    session: options.session,
    selection: options.selection,
    ...(options.isExcluded ? { isExcluded: options.isExcluded } : {}),
    ...(options.isSelf ? { isSelf: options.isSelf } : {}),
    kubelet: options.kubelet,
    api: options.api,
    force: options.force,
    ignorePdb: options.ignorePdb,
    consent: options.consent,
    ...(options.agent ? { agent: true } : {}),
    dryRun: options.dryRun,
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    node: options.node,
    ...(options.reporter ? { reporter: options.reporter } : {}),
    ...(options.onPdbBlock ? { onPdbBlock: options.onPdbBlock } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const drained = await drainNode({
    session: options.session,
    selection: options.selection,
    groups: options.groups,
    ...(options.isExcluded ? { isExcluded: options.isExcluded } : {}),
    ...(options.isSelf ? { isSelf: options.isSelf } : {}),
    ...(beside.mode === 'api' ? { only: beside.criUids } : {}),
    ...(beside.mode === 'cri' && options.gate ? { gate: options.gate } : {}),
    specs: beside.specs,
    dryRun: options.dryRun,
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    ...(options.reporter ? { reporter: options.reporter } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  // an evicted pod the kubelet left, stopped over CRI: its outcome is the CRI drain's
  const overCri = new Map(drained.groups.flatMap((g) => g.pods).map((p) => [p.uid, p]));
  for (const pod of beside.viaApi) {
    const stopped = overCri.get(pod.uid);
    if (!stopped || pod.outcome !== 'timeout') continue;
    pod.handledBy = 'local';
    pod.outcome = stopped.outcome === 'terminated' ? 'terminated' : pod.outcome;
    if (stopped.elapsedMs !== undefined) pod.elapsedMs = (pod.elapsedMs ?? 0) + stopped.elapsedMs;
    if (stopped.error !== undefined) pod.error = stopped.error;
  }
  const unfinishedViaApi = beside.viaApi.some((p) => !['terminated', 'gone', 'planned'].includes(p.outcome));
  return {
    ...drained,
    ...(unfinishedViaApi && drained.status === 'done' ? { status: 'partial' as const } : {}),
    kubelet: beside.kubelet,
    cordoned: beside.cordoned,
    viaApi: beside.viaApi,
    decisions: beside.decisions,
  };
}
