/**
 * What the shutdown guard leaves for readers: the last guarded shutdown as `podctl status
 * --last-shutdown` shows it (text and JSON) and as the agent's `podctl_shutdown_*` metrics export it
 * on start (the running guard's budget for the `podctl status` header: guard-state.ts).
 *
 * Invariants: nothing here writes a record (record.ts does); the metrics are set from one record,
 * read once.
 */
import { Gauge } from 'prom-client';
import { formatDuration } from '../../lib/duration.js';
import type { PodctlMetrics } from '../../metrics/registry.js';
import type { BudgetCheck } from './budget.js';
import { POD_OUTCOMES, readLastShutdown, type ShutdownRecord } from './record.js';

const OUTCOME_WORDS: Record<ShutdownRecord['pods'][number]['outcome'], string> = {
  stopped: 'stopped in time',
  killed: 'killed at the deadline',
  running: 'still running at power-off',
  kubelet: 'stopped by the kubelet',
  'handed-on': "left to the kubelet's graceful shutdown (the guard was stopped first)",
  pending: 'unknown: the guard ended mid-drain',
};

/** How a record that is not `draining` ended, as its first line says it. */
const STATE_WORDS: Record<Exclude<ShutdownRecord['state'], 'draining'>, string> = {
  done: 'drained',
  cancelled: 'cancelled',
  'handed-on': "stopped by SIGTERM while it deferred to the kubelet: handed on to the kubelet's graceful shutdown",
};

/** `podctl status --last-shutdown --json`: the record, its outcome counts, and whether its guard saw it through. */
export interface LastShutdownJson {
  record: ShutdownRecord | null;
  counts: Record<string, number> | null;
  /** The guard finished its record (drained, cancelled, or handed on to the kubelet) before the power went (false: the guard ended first, or the record is still being written). */
  completed: boolean | null;
  skipped: string[];
}

export async function lastShutdown(stateDir: string): Promise<LastShutdownJson> {
  const { record, skipped } = await readLastShutdown(stateDir);
  if (!record) return { record: null, counts: null, completed: null, skipped };
  const counts = Object.fromEntries(POD_OUTCOMES.map((o) => [o, record.pods.filter((p) => p.outcome === o).length]));
  return { record, counts, completed: record.state !== 'draining', skipped };
}

export function lastShutdownText(last: LastShutdownJson): string {
  const r = last.record;
  if (!r) return 'no guarded shutdown recorded';
  const lines = [
    `last guarded shutdown: ${new Date(r.startedAt).toISOString()} (${r.trigger === 'logind' ? "logind's PrepareForShutdown" : 'SIGTERM while systemd shut down'}), ` +
      (r.state === 'draining' ? `the guard (pid ${r.guardPid}) ended before its drain did` : `${STATE_WORDS[r.state]} in ${formatDuration((r.endedAt ?? r.startedAt) - r.startedAt)}`),
    `window ${formatDuration(r.windowMs)}, the groups asked for ${formatDuration(r.groupsTotalMs)}${r.windowMs - 1000 < r.groupsTotalMs ? ' (short: budgets were shrunk to fit)' : ''}` +
      (r.kubelet.inhibitor ? `; deferred ${formatDuration(r.kubelet.deferredMs)} to the kubelet's graceful shutdown` : '') +
      (r.kubelet.owned > 0 ? `; ${r.kubelet.owned} pod(s) left to the running kubelet` : ''),
    `groups: ${r.groups.map((g) => `≥${g.priority}${g.critical ? ' (critical)' : ''} ${g.givenSeconds}s of ${g.budgetSeconds}s`).join(', ')}`,
  ];
  for (const pod of r.pods) {
    lines.push(
      `  ${pod.namespace}/${pod.name}  group ≥${pod.group}  grace ${pod.graceSeconds}s  ${OUTCOME_WORDS[pod.outcome]}${pod.elapsedMs !== undefined ? ` (${formatDuration(pod.elapsedMs)})` : ''}`,
    );
  }
  const c = last.counts ?? {};
  lines.push(
    `${c.stopped ?? 0} stopped in time, ${c.killed ?? 0} killed at the deadline, ${c.kubelet ?? 0} stopped by the kubelet, ` +
      `${c['handed-on'] ? `${c['handed-on']} left to the kubelet's graceful shutdown, ` : ''}${c.running ?? 0} still running at power-off, ${c.pending ?? 0} unknown`,
  );
  return lines.join('\n');
}

/**
 * The `podctl_shutdown_*` series: the last guarded shutdown (from its record, read when the agent
 * starts) and, with the guard, logind's delay against the groups.
 */
export async function exportShutdownMetrics(metrics: PodctlMetrics, stateDir: string, budget?: BudgetCheck): Promise<void> {
  const registers = [metrics.registry];
  if (budget) {
    new Gauge({ name: 'podctl_shutdown_delay_seconds', help: "logind's InhibitDelayMaxSec as the shutdown guard read it at start.", registers }).set(budget.delayMs / 1000);
    new Gauge({ name: 'podctl_shutdown_groups_seconds', help: 'What the shutdown priority groups ask for in all.', registers }).set(budget.groupsTotalSeconds);
    new Gauge({ name: 'podctl_shutdown_budget_short', help: "1 when logind's delay is shorter than the shutdown groups ask for (their budgets are shrunk to fit).", registers }).set(
      budget.short ? 1 : 0,
    );
  }
  const last = await lastShutdown(stateDir);
  if (!last.record) return;
  new Gauge({ name: 'podctl_shutdown_last_timestamp_seconds', help: 'When the last guarded shutdown began (Unix time).', registers }).set(last.record.startedAt / 1000);
  new Gauge({
    name: 'podctl_shutdown_last_completed',
    help: "1 when the last guarded shutdown's record was finished (drained, cancelled, or handed on to the kubelet) before the power went, 0 when the guard ended first.",
    registers,
  }).set(last.completed ? 1 : 0);
  const pods = new Gauge({ name: 'podctl_shutdown_last_pods', help: 'Pods of the last guarded shutdown by what became of them.', labelNames: ['outcome'], registers });
  for (const outcome of POD_OUTCOMES) pods.set({ outcome }, last.counts?.[outcome] ?? 0);
}
