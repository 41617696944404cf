/**
 * `drain --shutdown-status`: the kubelet's node-shutdown status on every pod the drain stopped —
 * phase Failed, reason Terminated, "Pod was terminated in response to imminent node shutdown.",
 * and the DisruptionTarget condition (True, TerminationByKubelet). Opt-in: after an ordinary
 * maintenance drain, Failed pods left in the API surprise users.
 *
 * Invariants: only pods the drain stopped (terminated, gone, or still terminating at the bound)
 * are patched; a pod gone from the API or replaced (another UID) is skipped; writes the API server
 * cannot take are recorded and sent by a later run (api-node.ts).
 */
import { shutdownStatus } from '../../kube/status.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';
import type { ApiNode } from '../api/api-node.js';
import type { DrainResult } from './drain.js';

export interface ShutdownStatusReport {
  statusPatched: number;
  skipped: number;
  pending: number;
  errors: string[];
}

export async function reportShutdownStatus(api: ApiNode, result: DrainResult, reporter: Reporter = silentReporter()): Promise<ShutdownStatusReport> {
  const report: ShutdownStatusReport = { statusPatched: 0, skipped: 0, pending: 0, errors: [] };
  const stopped = result.groups.flatMap((g) => g.pods).filter((p) => p.outcome === 'terminated' || p.outcome === 'gone' || p.outcome === 'timeout');
  for (const pod of stopped) {
    try {
      const outcome = await api.status({ namespace: pod.namespace, name: pod.name, uid: pod.uid }, shutdownStatus());
      if (outcome === 'done') report.statusPatched += 1;
      else if (outcome === 'pending') report.pending += 1;
      else report.skipped += 1;
    } catch (error) {
      report.errors.push((error as Error).message);
      reporter.warn(`node-shutdown status of ${pod.namespace}/${pod.name} not set: ${(error as Error).message}`);
    }
  }
  return report;
}
