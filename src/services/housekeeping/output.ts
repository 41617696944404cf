/**
 * How `podctl sync-known` draws its result: the known-workers table and the summary lines. The
 * service (sync-known.ts) returns a SyncKnownResult; the command renders it through this module.
 *
 * Invariants: pure (no session, no I/O).
 */
import type { Styler, TableSpec } from '../../lib/output.js';
import type { ApiSyncReport } from './api-sync.js';
import type { PodName, SyncKnownResult } from './sync-known.js';

/** The known-workers map as a table. */
export function syncKnownTable(result: SyncKnownResult, styler: Styler): TableSpec {
  const yes = (b: boolean): string => (b ? 'yes' : 'no');
  return {
    head: ['NAMESPACE/NAME', 'UID', 'STATE', 'ORPHAN', 'HAS CONFIG', 'STATIC'],
    rows: result.workers.map((w) => [
      w.namespace ? `${w.namespace}/${w.name}` : '(unknown)',
      w.uid.slice(0, 8),
      w.state === 'sync' ? styler.green('running') : w.state === 'terminating' ? styler.yellow(w.state) : styler.cyan(w.state),
      w.orphan ? styler.yellow('yes') : 'no',
      yes(w.hasConfig),
      yes(w.static),
    ]),
  };
}

export function syncKnownSummary(result: SyncKnownResult): string {
  const names = (list: PodName[]): string => (list.length === 0 ? '' : `: ${list.map((p) => (p.namespace ? `${p.namespace}/${p.name}` : p.uid)).join(', ')}`);
  const would = result.dryRun ? 'would be ' : '';
  return [
    `sync-known${result.dryRun ? ' --dry-run (nothing was changed)' : ''} (desired from ${result.source}): ${result.workers.length} known worker(s), ${result.workers.filter((w) => w.orphan).length} orphan(s)`,
    `  orphaned runtime pods ${would}terminated: ${result.orphanedRuntimePods.length}${names(result.orphanedRuntimePods)}`,
    `  ${would}resumed from a dead owner: ${result.resumed.length}${names(result.resumed)}`,
    `  finished workers ${would}forgotten: ${result.forgotten.length}${names(result.forgotten)}`,
    `  static pods kept (never orphans without --include-static): ${result.keptStatic.length}${names(result.keptStatic)}`,
    ...(result.unfinished.length > 0 ? [`  still terminating: ${result.unfinished.length}: ${result.unfinished.map((p) => `${p.namespace}/${p.name} (${p.error})`).join(', ')}`] : []),
    ...(result.waitingForKubelet.length > 0
      ? [
          `  kept for the kubelet (${result.kubelet?.state ?? 'running'}): ${result.waitingForKubelet.length}: ${result.waitingForKubelet.map((o) => `${o.namespace}/${o.name} (${o.reason})`).join(', ')}`,
        ]
      : []),
    ...(result.api ? apiSummaryLines(result.api, names) : []),
  ].join('\n');
}

function apiSummaryLines(api: ApiSyncReport, names: (list: PodName[]) => string): string[] {
  return [
    `  deleted in the API server, terminated with its grace: ${api.deleting.length}${names(api.deleting)}`,
    ...(api.terminalStopped.length > 0 ? [`  terminal in the API server (Succeeded/Failed), terminated with its grace: ${api.terminalStopped.length}${names(api.terminalStopped)}`] : []),
    `  final deletes (left Terminating): ${api.finallyDeleted.length}${names(api.finallyDeleted)}`,
    ...(api.stillRunning.length > 0 ? [`  deleted in the API server, still running here: ${api.stillRunning.length}${names(api.stillRunning)}`] : []),
    ...(api.mirrors.length > 0 ? [`  mirror pods (their static pods kept): ${api.mirrors.length}`] : []),
    ...(api.pendingRecorded + api.pendingLeft > 0 ? [`  API writes pending for a later run: ${api.pendingRecorded + api.pendingLeft}`] : []),
    ...(api.leftToKubelet.length > 0 ? [`  deleted in the API server, left to the running kubelet: ${api.leftToKubelet.length}${names(api.leftToKubelet)}`] : []),
    ...api.withheld.map((w) => `  final delete of ${w.namespace}/${w.name} ${w.reason}`),
    ...api.finalizers.map((f) => `  ${f.namespace}/${f.name}: ${f.explanation}`),
  ];
}
