/**
 * The drain report service: gathers what a drain did to each pod (its result, and each pod's
 * timeline from the node session) into the report's data (model.ts), keeps it in the state dir
 * (store/reports.ts), and finds a kept one again for `podctl report`. It returns data; the
 * commands render it (html.ts, or JSON).
 *
 * Invariants: building or keeping a report never changes a pod; a report that cannot be kept (a
 * full disk) is said by the caller and never fails the drain it describes; `podctl report` with no
 * drain kept, or no pod matching, is one line naming what to do.
 */
import { UsageError } from '../../../lib/errors.js';
import { resolveSelection, type PodSelection } from '../../../lib/refs.js';
import { listDrainReports, readDrainReport, saveDrainReport } from '../../../store/reports.js';
import { readApiWaits } from '../../../store/api-waits.js';
import type { NodeSession, PodInfo } from '../../../domain/session-api.js';
import { podPriority } from '../../../engine/pod-kinds.js';
import { criticalReason, groupIndexFor, SYSTEM_CRITICAL_PRIORITY } from '../drain-plan.js';
import type { DrainResult } from '../drain.js';
import type { TerminatedPod } from '../../terminate/terminate.js';
import { buildReport, isDrainReport, type ApiWait, type DrainReport, type GroupInput, type PodInput } from './model.js';

export interface DrainReportOptions {
  session: NodeSession;
  result: DrainResult;
  /** When the drain ended (epoch ms): its result's elapsedMs (the drain over CRI) counts back from it. */
  endedAt: number;
  /** When the drain began (epoch ms), its evictions through the API server included (default: the CRI drain's start). */
  startedAt?: number;
  source: 'drain' | 'agent';
  node: string | null;
  /** Pods the kubelet stopped, asked through the API server, with their waits there. */
  viaApi?: readonly (TerminatedPod & { waits?: readonly ApiWait[] })[];
}

/** The report of a drain that just ended, from its result and its pods' timelines. */
async function drainReportOf(options: DrainReportOptions): Promise<DrainReport> {
  const { result, endedAt } = options;
  const criStartedAt = endedAt - result.elapsedMs;
  const startedAt = Math.min(options.startedAt ?? criStartedAt, criStartedAt);
  const drained = result.groups.flatMap((g) => g.pods);
  const viaApi = options.viaApi ?? [];
  const uids = [...drained.map((p) => p.uid), ...viaApi.map((p) => p.uid)];
  const infos = new Map((await options.session.listPods({ uids, runtimeMaxAgeMs: 1_000 }).catch(() => [] as PodInfo[])).map((p) => [p.uid, p]));
  const groups: GroupInput[] = result.groups.map((g) => ({
    priority: g.priority,
    budgetSeconds: g.budgetSeconds,
    critical: g.critical,
    ...(g.startedAtMs !== undefined ? { startedAt: criStartedAt + g.startedAtMs } : {}),
    ...(g.startedAtMs !== undefined && g.elapsedMs !== undefined ? { endedAt: criStartedAt + g.startedAtMs + g.elapsedMs } : {}),
  }));
  const pods: PodInput[] = [];
  result.groups.forEach((group, index) => {
    for (const pod of group.pods) {
      pods.push({
        uid: pod.uid,
        namespace: pod.namespace,
        name: pod.name,
        priority: pod.priority,
        group: index,
        gracePeriodSeconds: pod.gracePeriodSeconds,
        outcome: pod.outcome,
        via: 'cri',
        ...(pod.error !== undefined ? { error: pod.error } : {}),
        history: infos.get(pod.uid)?.history ?? [],
      });
    }
  });
  for (const pod of viaApi) {
    const info = infos.get(pod.uid);
    const priority = info ? podPriority(info.pod) : 0;
    const critical = info !== undefined && criticalReason(info) !== undefined;
    const index =
      groups.length === 0
        ? 0
        : groupIndexFor(
            groups.map((g) => ({ priority: g.priority, budgetSeconds: g.budgetSeconds ?? 0 })),
            critical ? Math.max(priority, SYSTEM_CRITICAL_PRIORITY) : priority,
          );
    if (groups.length === 0) groups.push({ priority: 0, budgetSeconds: null, critical: false });
    const waits = pod.waits ?? (await journaledWaits(options.session.stateDir, pod.uid, startedAt, endedAt));
    pods.push({
      uid: pod.uid,
      namespace: pod.namespace,
      name: pod.name,
      priority,
      group: index,
      gracePeriodSeconds: pod.gracePeriodSeconds,
      outcome: pod.outcome,
      via: 'api',
      ...(pod.error !== undefined ? { error: pod.error } : {}),
      history: info?.history ?? [],
      apiWaits: waits,
      ...(waits[0] ? { requestedAt: waits[0].from } : {}),
      ...(pod.outcome === 'terminated' && waits.length > 0 ? { terminatedAt: Math.max(...waits.map((w) => w.to)) } : {}),
    });
  }
  return buildReport({
    source: options.source,
    node: options.node,
    status: result.status,
    simulated: options.session.simulated,
    startedAt,
    endedAt,
    groups,
    pods,
  });
}

/** Slack for the journal's clocks against the drain's start (another process may have written them). */
const JOURNAL_SLACK_MS = 1_000;

/** The pod's API waits journaled during the drain (kubelet-guard.ts), a wait still open ending at the drain's end. */
async function journaledWaits(stateDir: string, uid: string, startedAt: number, endedAt: number): Promise<ApiWait[]> {
  const waits = await readApiWaits(stateDir, uid);
  return waits
    .filter((w) => w.from >= startedAt - JOURNAL_SLACK_MS && w.from <= endedAt)
    .map((w) => ({ kind: w.kind, label: w.label, from: w.from, to: w.to ?? endedAt, outcome: w.outcome ?? 'waiting', detail: w.detail }));
}

/**
 * The report of a drain that just ended, kept in the state dir: its data and the kept file (null
 * when it could not be kept; `onError` is told why, and the drain's own outcome stands).
 */
export async function recordDrainReport(options: DrainReportOptions & { onError: (message: string) => void }): Promise<{ report: DrainReport; file: string | null }> {
  const report = await drainReportOf(options);
  try {
    return { report, file: await keepDrainReport(options.session.stateDir, report) };
  } catch (error) {
    options.onError(`the drain's report could not be kept in the state dir: ${(error as Error).message}`);
    return { report, file: null };
  }
}

/** Keeps a drain's report in the state dir; returns the file. */
async function keepDrainReport(stateDir: string, report: DrainReport): Promise<string> {
  return saveDrainReport(stateDir, report, Date.parse(report.endedAt));
}

/** The newest drain report kept in the state dir (podctl drain's or the agent's), with its file. */
export async function lastDrainReport(stateDir: string): Promise<{ report: DrainReport; file: string }> {
  const files = await listDrainReports(stateDir);
  const file = files.at(-1);
  if (file === undefined) {
    throw new UsageError(`no drain report is kept in ${stateDir}`, 'run podctl drain first, or pick pods: podctl report --since 1h (or name them)');
  }
  return { report: await reportFromFile(file), file };
}

/** A report file written by `podctl report -o json` or kept in the state dir. */
async function reportFromFile(file: string): Promise<DrainReport> {
  const value = await readDrainReport(file);
  if (!isDrainReport(value)) throw new UsageError(`${file} is not a podctl drain report this version can draw`, 'give a file written by podctl report -o json, or a state dir of this podctl');
  return value;
}

export interface PodsReportOptions {
  session: NodeSession;
  selection: PodSelection;
  /** Only pods whose termination was requested at or after this time (epoch ms). */
  since?: number;
  now?: () => number;
}

/**
 * The report of pods still in the state dir, drained together or not: every selected pod whose
 * timeline has a termination request (since `since`), in two groups (critical pods last) without
 * budgets.
 */
export async function reportOfPods(options: PodsReportOptions): Promise<DrainReport> {
  const now = options.now ?? Date.now;
  const { targets } = resolveSelection(await options.session.listPods(), options.selection);
  const since = options.since ?? 0;
  const requestOf = (pod: PodInfo): number | undefined => pod.history.find((r) => (r.type === 'termination-requested' || r.type === 'kill-requested') && r.at >= since)?.at;
  const picked = targets.filter((p) => requestOf(p) !== undefined);
  if (picked.length === 0) {
    throw new UsageError(
      `no pod${options.since !== undefined ? ` terminated since ${new Date(since).toISOString()}` : ' with a termination'} is in the state dir${options.selection.refs.length > 0 || options.selection.selector || options.selection.namespace !== undefined ? ' among the pods named' : ''}`,
      'widen --since, or run podctl report with no pods for the last drain',
    );
  }
  const groups: GroupInput[] = [
    { priority: 0, budgetSeconds: null, critical: false },
    { priority: SYSTEM_CRITICAL_PRIORITY, budgetSeconds: null, critical: true },
  ];
  const pods: PodInput[] = picked.map((pod) => {
    const critical = criticalReason(pod) !== undefined;
    const terminated = pod.state === 'terminated' || pod.state === 'finished';
    return {
      uid: pod.uid,
      namespace: pod.namespace,
      name: pod.name,
      priority: podPriority(pod.pod),
      group: critical ? 1 : 0,
      gracePeriodSeconds: graceOf(pod),
      outcome: terminated ? 'terminated' : pod.state,
      via: 'cri',
      history: pod.history,
      ...(terminated ? {} : { error: pod.lastError?.message ?? `still ${pod.state}` }),
    };
  });
  const used = groups.filter((_, index) => pods.some((p) => p.group === index));
  const renumbered = pods.map((p) => ({ ...p, group: used.indexOf(groups[p.group]!) }));
  const starts = picked.map((p) => requestOf(p)!);
  const ends = picked.flatMap((p) => p.history.map((r) => r.at));
  return buildReport({
    source: 'state-dir',
    node: null,
    status: null,
    simulated: options.session.simulated,
    startedAt: Math.min(...starts),
    endedAt: Math.min(now(), Math.max(...starts, ...ends)),
    groups: used,
    pods: renumbered,
  });
}

/** The grace a pod was killed with, from its timeline's request ("grace 15s"), else its worker's. */
function graceOf(pod: PodInfo): number | null {
  for (const record of [...pod.history].reverse()) {
    const shortened = /grace \d+s → (\d+)s/.exec(record.detail);
    if (shortened) return Number(shortened[1]);
    const requested = record.type === 'termination-requested' ? /grace (\d+)s/.exec(record.detail) : null;
    if (requested) return Number(requested[1]);
  }
  return pod.gracePeriod ?? null;
}
