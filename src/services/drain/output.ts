/**
 * How `podctl drain` draws its result (or its plan with --dry-run): one row per pod, one summary
 * line. The services (drain.ts, drain-run.ts) return data; the command renders it through this module.
 *
 * Invariants: pure (no session, no I/O); the table lists the same pods as the JSON.
 */
import { formatDuration } from '../../lib/duration.js';
import type { Styler, TableSpec } from '../../lib/output.js';
import { orderingNote } from '../api/pod-specs.js';
import type { DrainResult } from './drain.js';

/** Beside a running kubelet: the pods evicted through the API server and every pod's verdict (drain-run.ts). */
interface ApiDrainRows {
  viaApi?: { uid: string; namespace: string; name: string; gracePeriodSeconds: number; outcome: string; elapsedMs?: number; error?: string }[];
  decisions?: { uid: string; namespace: string; name: string; decision: 'evict' | 'cri' | 'skip' | 'refuse'; reason: string; message: string }[];
}

/**
 * The human view of a drain (or its plan with --dry-run): one row per pod, the same pods as the
 * JSON — API evictions first (beside a running kubelet), then the CRI groups, then what is left
 * alone or refused, with the verdict's reason.
 */
export function drainTable(result: DrainResult & ApiDrainRows, styler: Styler): TableSpec {
  const head = result.dryRun ? ['GROUP', 'NAMESPACE/NAME', 'PRIORITY', 'CRITICAL', 'POD GRACE', 'DRAIN GRACE'] : ['GROUP', 'NAMESPACE/NAME', 'PRIORITY', 'GRACE', 'OUTCOME', 'TIME'];
  const rows: string[][] = [];
  for (const pod of result.viaApi ?? []) {
    const name = `${pod.namespace}/${pod.name}`;
    if (result.dryRun) rows.push(['API eviction', name, '-', '-', `${pod.gracePeriodSeconds}s`, `${pod.gracePeriodSeconds}s`]);
    else {
      const ok = pod.outcome === 'terminated';
      rows.push([
        'API eviction',
        name,
        '-',
        `${pod.gracePeriodSeconds}s`,
        ok ? styler.green(pod.outcome) : styler.red(pod.outcome + (pod.error ? ` ${pod.error}` : '')),
        pod.elapsedMs === undefined ? '-' : formatDuration(pod.elapsedMs),
      ]);
    }
  }
  result.groups.forEach((group, index) => {
    const label = `${index + 1}: ≥${group.priority} (${group.budgetSeconds}s${group.critical ? ', critical' : ''})`;
    for (const pod of group.pods) {
      const name = `${pod.namespace}/${pod.name}`;
      if (result.dryRun) {
        rows.push([label, name, String(pod.priority), pod.criticalReason ?? '-', `${pod.podGraceSeconds}s`, `${pod.gracePeriodSeconds}s`]);
      } else {
        const ok = pod.outcome === 'terminated' || pod.outcome === 'gone';
        const handed = result.handedOffTo?.uids.includes(pod.uid) ? ` (background pid ${result.handedOffTo.pid})` : '';
        rows.push([
          label,
          name,
          String(pod.priority),
          `${pod.gracePeriodSeconds}s`,
          ok ? styler.green(pod.outcome) : styler.red(pod.outcome + (pod.error ? ` ${pod.error}` : '') + handed),
          pod.elapsedMs === undefined ? '-' : formatDuration(pod.elapsedMs),
        ]);
      }
    }
  });
  for (const s of result.skipped) {
    rows.push(result.dryRun ? ['skipped', `${s.namespace}/${s.name}`, '-', '-', '-', s.reason] : ['skipped', `${s.namespace}/${s.name}`, '-', '-', s.reason, '-']);
  }
  const planned = new Set(result.groups.flatMap((g) => g.pods.map((p) => p.uid)));
  for (const d of result.decisions ?? []) {
    if (d.decision === 'evict' || planned.has(d.uid)) continue;
    const label = d.decision === 'refuse' ? 'refused' : d.decision === 'cri' ? 'CRI (orphan rule)' : 'skipped';
    const why = `${d.reason}: ${d.message}`;
    rows.push(result.dryRun ? [label, `${d.namespace}/${d.name}`, '-', '-', '-', why] : [label, `${d.namespace}/${d.name}`, '-', '-', d.decision === 'refuse' ? styler.red(why) : why, '-']);
  }
  return { head, rows };
}

/**
 * What the operator does after a drain beside the kubelet that did not finish, by what held its
 * evictions back (undefined: nothing held, or nothing to say); the agent's DrainFailed Event says
 * the same in the Node annotations' words (maintenance.ts).
 */
export function drainNextStep(result: DrainResult & ApiDrainRows & { cordoned?: { uncordon: string } | null }): string | undefined {
  const outcomes = new Set((result.viaApi ?? []).map((p) => p.outcome));
  const steps: string[] = [];
  if (outcomes.has('blocked-by-pdb')) steps.push('wait for the budget to allow a disruption, or pass --ignore-pdb');
  if (outcomes.has('timeout')) steps.push('give the pods more time (--timeout)');
  if (outcomes.has('kubelet-finishing')) steps.push('check the kubelet, which has not stopped their containers (podctl status shows them)');
  if (outcomes.has('failed')) steps.push('see the warnings above');
  if (steps.length === 0) return undefined;
  const giveUp = result.cordoned ? ` (or ${result.cordoned.uncordon} to give up)` : '';
  return `next: ${steps.join(', or ')}, then run podctl drain again: pods already gone are skipped${giveUp}`;
}

export function drainSummaryLine(result: DrainResult & ApiDrainRows): string {
  const s = result.summary;
  const decisions = result.decisions ?? [];
  const evictions = result.viaApi?.length ?? 0;
  const skipped = s.skipped + decisions.filter((d) => d.decision === 'skip').length;
  const refused = decisions.filter((d) => d.decision === 'refuse').length;
  const api = decisions.length > 0 || evictions > 0 ? `${evictions} API eviction(s), ` : '';
  if (result.dryRun) {
    return `drain plan: ${api}${s.planned} pod(s) over CRI in ${result.groups.length} group(s), ${skipped} skipped${refused > 0 ? `, ${refused} refused (the drain would not start)` : ''}; bound ${formatDuration(result.timeoutSeconds * 1000)} (nothing was changed)`;
  }
  const viaApi = result.viaApi ?? [];
  const apiPart = api === '' ? '' : `${viaApi.filter((p) => p.outcome === 'terminated').length}/${evictions} evicted and stopped by the kubelet, `;
  const ordering = orderingNote(result.groups.flatMap((g) => g.pods).filter((p) => p.ordering !== undefined));
  return `drain ${result.status}: ${apiPart}${s.terminated}/${s.planned} terminated over CRI, ${s.timedOut} still terminating, ${s.failed} failed, ${s.notStarted} not started, ${skipped} skipped in ${formatDuration(result.elapsedMs)}${ordering ? `; ${ordering}` : ''}`;
}
