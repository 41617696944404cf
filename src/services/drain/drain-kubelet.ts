/**
 * `drain` beside a running kubelet, as `kubectl drain` does it: the node is cordoned
 * (`spec.unschedulable`) before the first pod, then the pods the kubelet desires are evicted through
 * the API server in priority order (lowest first, each priority's pods waited for before the next),
 * honouring PodDisruptionBudgets, and the kubelet stops them; podctl drains over CRI only what the
 * kubelet does not desire (orphans, pods it no longer knows). The rule is kubelet-guard.ts's.
 *
 * Invariants: nothing is cordoned or evicted in a dry run, nor before the kubelet rule allowed it (a
 * refusal happens before the cordon); the operator is told how to uncordon.
 */
import type { KubeletStatus } from '../../kube/kubelet.js';
import { resolveSelection, type PodSelection } from '../../lib/refs.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';
import type { ApiNode } from '../api/api-node.js';
import { podPriority } from '../../engine/pod-kinds.js';
import { guardKill, type KubeletReport } from '../terminate/kubelet-guard.js';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import type { TerminatedPod } from '../terminate/terminate.js';
import type { PodSpecs } from '../api/pod-specs.js';

export interface DrainBesideKubeletOptions {
  session: NodeSession;
  selection: PodSelection;
  isExcluded?: (pod: PodInfo) => boolean;
  kubelet: KubeletStatus;
  api: ApiNode | undefined;
  force: boolean;
  ignorePdb: boolean;
  dryRun: boolean;
  timeoutMs?: number;
  node: string;
  reporter?: Reporter;
  signal?: AbortSignal;
}

export interface DrainBesideKubelet {
  kubelet: KubeletReport;
  /** The node was cordoned by this drain (null: not needed, or a dry run). */
  cordoned: { node: string; uncordon: string } | null;
  /** Pods the kubelet stopped, asked through the API server. */
  viaApi: TerminatedPod[];
  /** UIDs the API path took: the CRI drain leaves them alone. */
  handled: Set<string>;
  /** This node's pods as the API server held them at the plan: what the CRI drain hands to the syncer. */
  specs: PodSpecs;
}

export async function drainBesideKubelet(options: DrainBesideKubeletOptions): Promise<DrainBesideKubelet> {
  const reporter = options.reporter ?? silentReporter();
  const { session, kubelet } = options;
  const listed = await session.listPods({ runtimeMaxAgeMs: 1_000, ...(options.signal ? { signal: options.signal } : {}) });
  const { targets } = resolveSelection(listed, options.selection);
  const candidates = targets.filter((p) => p.state !== 'finished' && !(options.isExcluded?.(p) ?? false));
  const guard = { kubelet, api: options.api, force: options.force, viaApi: false, ignorePdb: options.ignorePdb };
  const common = {
    session,
    mode: 'evict' as const,
    action: 'drain',
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    reporter,
    ...(options.signal ? { signal: options.signal } : {}),
    guard,
  };
  // the decision first (a refusal changes nothing), as a plan
  const plan = await guardKill({ ...common, targets: candidates, dryRun: true, reporter: silentReporter() });
  if (plan.report.action !== 'via-api' || options.dryRun) {
    return {
      kubelet: plan.report,
      cordoned: null,
      viaApi: plan.report.action === 'via-api' ? plan.viaApi : [],
      handled: new Set(plan.report.action === 'via-api' ? plan.viaApi.map((p) => p.uid) : []),
      specs: plan.specs,
    };
  }
  await options.api!.kube.setUnschedulable(true, options.signal);
  const uncordon = `kubectl uncordon ${options.node}`;
  reporter.info(`drain: node ${options.node} cordoned (no new pods are scheduled here); after maintenance: ${uncordon}`);
  const viaApi: TerminatedPod[] = [];
  const through = new Set(plan.viaApi.map((p) => p.uid));
  const byPriority = new Map<number, PodInfo[]>();
  for (const pod of candidates.filter((p) => through.has(p.uid))) {
    const priority = podPriority(plan.specs.of(pod.uid) ?? pod.pod);
    byPriority.set(priority, [...(byPriority.get(priority) ?? []), pod]);
  }
  for (const priority of [...byPriority.keys()].sort((a, b) => a - b)) {
    if (options.signal?.aborted) break;
    const outcome = await guardKill({ ...common, targets: byPriority.get(priority)! });
    viaApi.push(...outcome.viaApi);
  }
  return { kubelet: plan.report, cordoned: { node: options.node, uncordon }, viaApi, handled: through, specs: plan.specs };
}
