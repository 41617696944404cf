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
import { drainBesideKubelet, type DrainBesideKubeletOptions, type DrainDecision } from './drain-kubelet.js';
import type { PriorityGroup } from './drain-plan.js';
import { drainNode, type DrainResult } from './drain.js';
import type { KubeletReport } from '../terminate/kubelet-guard.js';
import type { ConsentGate, TerminatedPod } from '../terminate/terminate.js';

/** The drain beside the kubelet's options (without its extra filters and clock), and the CRI drain's. */
export interface RunDrainOptions extends Omit<DrainBesideKubeletOptions, 'filters' | 'now'> {
  groups: PriorityGroup[];
  /** A drain over CRI (the kubelet down, no API server, or --force): static and system-critical pods need this yes first. */
  gate?: ConsentGate;
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
