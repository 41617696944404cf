/**
 * How `podctl status` and the watch screen draw the diagnose feature's data: the status table's
 * columns and cells, the `--explain` text, the kubelet header line. The service (status.ts) returns
 * rows and explanations; the commands and the TUI render them through this module.
 *
 * Invariants: pure (no session, no I/O); `now` is given, so the same data renders the same text.
 */
import { formatDuration } from '../../lib/duration.js';
import { truncate, type Styler, type TableSpec } from '../../lib/output.js';
import type { PodInfo } from '../../domain/session-api.js';
import { DEFAULT_STUCK_AFTER_MS } from './stuck.js';
import { formatAge, readyCell, sandboxCell } from './pod-ready.js';
import type { EvictionHeld, Explanation, StatusResult, StatusRow } from './status.js';

type PodState = PodInfo['state'];

function stateCell(state: PodState, styler: Styler): string {
  switch (state) {
    case 'sync':
      return styler.green('running');
    case 'terminating':
      return styler.yellow('terminating');
    case 'terminated':
      return styler.cyan('terminated');
    case 'finished':
      return styler.dim('finished');
    case 'runtime':
      return 'runtime';
  }
}

function ownerCell(row: StatusRow): string {
  if (row.driven === false) return row.ownerPid === null ? 'none (undriven)' : `${row.ownerPid} (dead, undriven)`;
  if (row.ownerPid === null) return '-';
  return row.ownerAlive === false ? `${row.ownerPid} (dead)` : String(row.ownerPid);
}

export interface StatusTableOptions {
  /** A LABELS column (kubectl's --show-labels). */
  showLabels?: boolean;
  /** One column per label key (kubectl's -L key). */
  labelColumns?: readonly string[];
}

export function statusTable(result: StatusResult, wide: boolean, styler: Styler, options: StatusTableOptions = {}): TableSpec {
  const head = STATUS_HEAD.slice();
  if (wide) head.push(...STATUS_WIDE_HEAD);
  const labelColumns = options.labelColumns ?? [];
  head.push(...labelColumns.map((k) => k.toUpperCase()));
  if (options.showLabels) head.push('LABELS');
  const rows = result.pods.map((r) => statusCells(r, wide, styler, options));
  return { head, rows };
}

/** The table's columns: READY is kubectl's; IN STATE is the time in the current state, AGE the pod's age. */
export const STATUS_HEAD: readonly string[] = ['NAMESPACE/NAME', 'UID', 'STATE', 'READY', 'GRACE', 'IN STATE', 'AGE', 'OWNER', 'LAST ERROR'];
/** What -o wide adds: containers running/total (every attempt the runtime lists), the sandbox, … */
export const STATUS_WIDE_HEAD: readonly string[] = ['CONTAINERS', 'SANDBOX', 'PRIORITY', 'STATIC', 'EVICTED', 'NEXT RETRY', 'BLOCKED BY'];

/** One row's cells, in the order of STATUS_HEAD (then STATUS_WIDE_HEAD, label columns, LABELS). */
export function statusCells(r: StatusRow, wide: boolean, styler: Styler, options: StatusTableOptions = {}): string[] {
  const grace = r.gracePeriodSeconds === null ? '-' : r.graceLeftSeconds === null ? `-/${r.gracePeriodSeconds}s` : `${r.graceLeftSeconds}s/${r.gracePeriodSeconds}s`;
  const cells = [
    `${r.namespace}/${r.name}`,
    wide ? r.uid : r.uid.slice(0, 8),
    r.stuck ? `${stateCell(r.state, styler)} ${styler.red('(stuck)')}` : stateCell(r.state, styler),
    readyCell(r.ready),
    grace,
    formatDuration(r.inStateSeconds * 1000),
    r.ageSeconds === null ? '-' : formatAge(r.ageSeconds),
    ownerCell(r),
    r.lastError !== null ? styler.red(truncate(r.lastError, wide ? 80 : 40)) : r.evictionHeld !== null ? styler.yellow(truncate(heldText(r.evictionHeld), wide ? 80 : 40)) : '',
  ];
  if (wide) {
    cells.push(
      `${r.containersRunning}/${r.containersTotal}`,
      sandboxCell(r.ready),
      r.priority === null ? '-' : String(r.priority),
      r.static ? 'yes' : 'no',
      r.evicted ? 'yes' : 'no',
      r.nextRetryAt ?? '-',
      r.blockedBy?.kind ?? '-',
    );
  }
  for (const key of options.labelColumns ?? []) cells.push(r.labels?.[key] ?? '');
  if (options.showLabels)
    cells.push(
      r.labels === null || Object.keys(r.labels).length === 0
        ? '<none>'
        : Object.entries(r.labels)
            .map(([k, v]) => `${k}=${v}`)
            .join(','),
    );
  return cells;
}

/** "eviction held by PodDisruptionBudget web/pdb since 2026-…Z": a pod's PodDisruptionBudget block in a line. */
function heldText(held: EvictionHeld): string {
  return `eviction held by ${held.budget} since ${held.since}`;
}

/** The grace line of `--explain`: what is left of it, or when its deadline passed; never a negative figure. */
function graceText(e: Pick<Explanation, 'gracePeriodSeconds' | 'graceLeftSeconds' | 'graceDeadline' | 'driven'>, now: number): string {
  if (e.graceLeftSeconds !== null) return `${e.graceLeftSeconds}s left of ${e.gracePeriodSeconds}s`;
  const deadline = e.graceDeadline === null ? undefined : Date.parse(e.graceDeadline);
  const undriven = e.driven === false ? ', and nobody drives the pod' : '';
  if (deadline === undefined) return `${e.gracePeriodSeconds}s${undriven ? ` (not counting down: nobody drives the pod)` : ''}`;
  if (deadline <= now) return `${e.gracePeriodSeconds}s; its deadline passed ${formatDuration(now - deadline)} ago${undriven}`;
  return `${e.gracePeriodSeconds}s; not counting down (nobody drives the pod): its deadline is in ${formatDuration(deadline - now)}`;
}

/** The `--explain` text for one pod. */
export function explainText(e: Explanation, styler: Styler, now: number): string {
  const lines: string[] = [];
  lines.push(styler.bold(`${e.namespace}/${e.name}`) + `  uid ${e.uid}`);
  lines.push(`  state:        ${e.state}${e.tracked ? '' : ' (no worker)'}`);
  lines.push(`  waiting for:  ${e.waitingFor}`);
  if (e.finalDelete) lines.push(`  final delete: ${e.finalDelete}`);
  if (e.stuck) lines.push(`  stuck:        ${styler.red(`terminating more than ${formatDuration(DEFAULT_STUCK_AFTER_MS)} past its grace period`)} (the agent counts it in podctl_stuck_pods)`);
  if (e.blockedBy) {
    lines.push(`  blocked by:   ${styler.yellow(e.blockedBy.kind)}: ${e.blockedBy.detail}`);
    lines.push(`  next step:    ${e.blockedBy.next}`);
  }
  if (e.evictionHeld) {
    const since = formatDuration(now - Date.parse(e.evictionHeld.since));
    lines.push(`  eviction:     ${styler.yellow(heldText(e.evictionHeld))} (${since}; podctl pid ${e.evictionHeld.pid} retries it): ${e.evictionHeld.detail}`);
  }
  if (e.gracePeriodSeconds !== null) lines.push(`  grace:        ${graceText(e, now)}`);
  if (e.owner) lines.push(`  owner:        pid ${e.owner.pid}${e.owner.alive ? '' : ' (gone)'}, heartbeat ${e.owner.heartbeatAt}`);
  else if (e.driven === false) lines.push('  owner:        none: nobody drives this pod (no grace counts down); `podctl sync-known` resumes it');
  if (e.lastError) {
    const retry = e.nextRetryAt ? `; next retry ${e.nextRetryAt} (in ${formatDuration(Date.parse(e.nextRetryAt) - now)})` : '';
    lines.push(`  last error:   ${styler.red(e.lastError)} at ${e.lastErrorAt}${retry}`);
  }
  lines.push('  engine predicates:');
  const width = Math.max(...e.predicates.map((p) => p.name.length));
  for (const p of e.predicates) {
    lines.push(`    ${p.name.padEnd(width)}  ${p.value ? styler.green('true ') : styler.dim('false')}  ${styler.dim(p.meaning)}`);
  }
  lines.push(`  timeline${e.timeline.length === 0 ? ': (empty)' : ':'}`);
  for (const t of e.timeline) lines.push(`    ${t.at}  ${t.type.padEnd(22)} ${t.detail}${t.pid ? styler.dim(`  [pid ${t.pid}]`) : ''}`);
  return lines.join('\n');
}

/** The header line of `status`: whether a kubelet runs beside podctl, and how that was decided. */
export function kubeletHeader(k: NonNullable<StatusResult['kubelet']>): string {
  return `kubelet: ${k.state} (${k.detail})`;
}
