/**
 * The drain report's data: where a drain's time went, pod by pod, built from the pods' timelines
 * (the steps the syncer records: preStop hooks, container and sandbox stops, removal; the engine's
 * transitions; the API waits of pods stopped through the API server) and the drain's own result
 * (groups, budgets, outcomes, the named cause of every pod that did not finish).
 *
 * This is the `-o json` of `podctl report` and what the state dir keeps of each drain
 * (store/reports.ts); the HTML page (html.ts) draws exactly this.
 *
 * Invariants: pure functions, no I/O; times are ISO 8601 (the JSON vocabulary), durations ms;
 * every pod appears once, in one group; a timeline record older than the drain's start is not
 * the drain's and is left out; a segment never ends before it starts.
 */
import type { TransitionRecord } from '../../../domain/session-api.js';

const REPORT_FORMAT = 'podctl/drain-report';
const REPORT_VERSION = 1;

/** What a segment of a pod's lane shows. */
type SegmentKind = 'prestop' | 'container' | 'sidecar' | 'sandbox-stop' | 'removal' | 'eviction-wait' | 'kubelet-wait';

export interface ReportSegment {
  kind: SegmentKind;
  /** The container, sandbox or PodDisruptionBudget it was about. */
  label: string;
  start: string;
  end: string;
  durationMs: number;
  /** succeeded, failed, not-run (hooks); exited, killed-at-deadline, killed, stopped (containers); refused, waited, timeout (API waits). */
  outcome: string;
  detail: string;
}

/** A pod as the drain saw it: who it is, its group, its grace, how it ended and how it was stopped. */
interface DrainedPod {
  uid: string;
  namespace: string;
  name: string;
  priority: number | null;
  /** Index into `groups`. */
  group: number;
  /** The grace the pod was killed with (seconds). */
  gracePeriodSeconds: number | null;
  /** The drain's outcome for it (terminated, gone, timeout, interrupted, failed, not-started; blocked-by-pdb through the API). */
  outcome: string;
  /** How it was stopped: over CRI by podctl, or by the kubelet asked through the API server. */
  via: 'cri' | 'api';
}

export interface ReportPod extends DrainedPod {
  requestedAt: string | null;
  /** When its grace ran out (requested + grace). */
  graceDeadline: string | null;
  terminatedAt: string | null;
  /** Requested → terminated (or → the report's end when it did not terminate). */
  durationMs: number | null;
  /** Containers SIGKILLed at their grace deadline (they did not exit on SIGTERM). */
  killedAtDeadline: string[];
  segments: ReportSegment[];
  /** Runtime errors and failed steps, oldest first. */
  failures: string[];
  /** Why it did not finish (the named stuck cause), null when it did. */
  stuck: string | null;
}

export interface ReportGroup {
  priority: number;
  /** The group's budget (seconds); null for a report of pods not drained together. */
  budgetSeconds: number | null;
  critical: boolean;
  startedAt: string | null;
  endedAt: string | null;
  /** The pod whose end ended the group (its slowest), by UID; null when none ended. */
  heldBy: string | null;
}

interface ReportSummary {
  pods: number;
  terminated: number;
  killedAtDeadline: number;
  failed: number;
  notFinished: number;
  /** UIDs, slowest first (at most 10). */
  slowest: string[];
}

export interface DrainReport {
  format: typeof REPORT_FORMAT;
  version: typeof REPORT_VERSION;
  /** podctl drain, the agent's maintenance drain, or pods picked from the state dir. */
  source: 'drain' | 'agent' | 'state-dir';
  node: string | null;
  /** The drain's status (done, partial, timed-out, interrupted); null for picked pods. */
  status: string | null;
  /** The runtime was podctl's simulator (its times may be scaled). */
  simulated: boolean;
  startedAt: string;
  endedAt: string;
  wallMs: number;
  /** The sum of the group budgets (seconds); null when the groups had none. */
  budgetSumSeconds: number | null;
  groups: ReportGroup[];
  pods: ReportPod[];
  summary: ReportSummary;
}

/** One pod as the report's builder takes it: the drain's view of it and its timeline. */
export interface PodInput extends DrainedPod {
  /** The drain's reason when it did not finish (or failed). */
  error?: string;
  history: readonly TransitionRecord[];
  /** Waits in the API server (pods stopped through it). */
  apiWaits?: readonly ApiWait[];
  /** When the drain asked for it (epoch ms), when the timeline does not say. */
  requestedAt?: number;
  /** When the drain saw it terminated (epoch ms), when the timeline does not say. */
  terminatedAt?: number;
}

/** A wait in the API server: an eviction a PodDisruptionBudget refused (429), or the kubelet finishing the pod. */
export interface ApiWait {
  kind: 'eviction-wait' | 'kubelet-wait';
  /** The PodDisruptionBudget, or the kubelet. */
  label: string;
  from: number;
  to: number;
  outcome: string;
  detail: string;
}

export interface GroupInput {
  priority: number;
  budgetSeconds: number | null;
  critical: boolean;
  /** Epoch ms. */
  startedAt?: number;
  endedAt?: number;
}

export interface ReportInput {
  source: DrainReport['source'];
  node: string | null;
  status: string | null;
  simulated: boolean;
  /** Epoch ms. */
  startedAt: number;
  endedAt: number;
  groups: readonly GroupInput[];
  pods: readonly PodInput[];
}

const iso = (ms: number): string => new Date(ms).toISOString();
const TERMINATED = /→ terminated$/;
/** Timeline records this much before the drain's start still belong to it (clocks of two processes). */
const SLACK_MS = 1_000;

const STEP_KINDS: Record<string, SegmentKind | undefined> = {
  prestop: 'prestop',
  'sandbox-stopped': 'sandbox-stop',
  removed: 'removal',
};

function segmentOf(record: TransitionRecord): ReportSegment | undefined {
  if (record.from === undefined) return undefined;
  const kind: SegmentKind | undefined = record.type === 'container-stopped' ? (record.kind === 'sidecar' ? 'sidecar' : 'container') : STEP_KINDS[record.type];
  if (!kind) return undefined;
  const start = Math.min(record.from, record.at);
  const label = kind === 'prestop' ? `${record.subject ?? '?'} (${record.kind ?? 'hook'})` : kind === 'removal' ? 'containers and sandbox' : (record.subject ?? '?');
  return { kind, label, start: iso(start), end: iso(record.at), durationMs: record.at - start, outcome: record.outcome ?? 'succeeded', detail: record.detail };
}

function podOf(input: PodInput, startedAt: number, endedAt: number): ReportPod {
  const records = input.history.filter((r) => r.at >= startedAt - SLACK_MS).sort((a, b) => a.at - b.at);
  const requested = records.find((r) => r.type === 'termination-requested' || r.type === 'kill-requested')?.at ?? input.requestedAt;
  const terminated = records.find((r) => r.type === 'state-changed' && TERMINATED.test(r.detail))?.at ?? input.terminatedAt;
  const segments: ReportSegment[] = [];
  const failures: string[] = [];
  for (const record of records) {
    const segment = segmentOf(record);
    if (segment) segments.push(segment);
    if (segment?.outcome === 'failed') failures.push(record.detail);
    if (record.type === 'sync-failed' && !record.detail.includes('cancelled')) failures.push(record.detail);
  }
  for (const wait of input.apiWaits ?? []) {
    const from = Math.min(wait.from, wait.to);
    segments.push({ kind: wait.kind, label: wait.label, start: iso(from), end: iso(wait.to), durationMs: wait.to - from, outcome: wait.outcome, detail: wait.detail });
  }
  segments.sort((a, b) => a.start.localeCompare(b.start));
  const finished = input.outcome === 'terminated' || input.outcome === 'gone';
  if (input.outcome === 'failed' && input.error && !failures.includes(input.error)) failures.push(input.error);
  const end = terminated ?? (finished ? undefined : endedAt);
  return {
    uid: input.uid,
    namespace: input.namespace,
    name: input.name,
    priority: input.priority,
    group: input.group,
    gracePeriodSeconds: input.gracePeriodSeconds,
    outcome: input.outcome,
    via: input.via,
    requestedAt: requested === undefined ? null : iso(requested),
    graceDeadline: requested === undefined || input.gracePeriodSeconds === null ? null : iso(requested + input.gracePeriodSeconds * 1000),
    terminatedAt: terminated === undefined ? null : iso(terminated),
    durationMs: requested === undefined || end === undefined ? null : Math.max(0, end - requested),
    killedAtDeadline: segments.filter((s) => s.outcome === 'killed-at-deadline').map((s) => s.label),
    segments,
    failures,
    stuck: finished || input.outcome === 'failed' ? null : (input.error ?? null),
  };
}

/** The report of one drain (or of pods picked from the state dir). */
export function buildReport(input: ReportInput): DrainReport {
  const pods = input.pods.map((p) => podOf(p, input.startedAt, input.endedAt));
  // the report's end: the drain's, or the last thing a lane shows when it came later (a pod handed on)
  const lastEnd = Math.max(input.endedAt, ...pods.flatMap((p) => p.segments.map((s) => Date.parse(s.end))));
  const groups: ReportGroup[] = input.groups.map((g, index) => {
    const members = pods.filter((p) => p.group === index);
    const ends = members.map((p) => ({ uid: p.uid, end: p.terminatedAt === null ? Number.POSITIVE_INFINITY : Date.parse(p.terminatedAt) }));
    const held = ends.reduce<{ uid: string; end: number } | undefined>((a, b) => (a === undefined || b.end > a.end ? b : a), undefined);
    const starts = members.flatMap((p) => (p.requestedAt === null ? [] : [Date.parse(p.requestedAt)]));
    const startedAt = g.startedAt ?? (starts.length > 0 ? Math.min(...starts) : undefined);
    const endedAt = g.endedAt ?? (held && Number.isFinite(held.end) ? held.end : undefined);
    return {
      priority: g.priority,
      budgetSeconds: g.budgetSeconds,
      critical: g.critical,
      startedAt: startedAt === undefined ? null : iso(startedAt),
      endedAt: endedAt === undefined ? null : iso(endedAt),
      heldBy: held?.uid ?? null,
    };
  });
  const budgets = input.groups.map((g) => g.budgetSeconds);
  const slowest = pods
    .filter((p) => p.durationMs !== null)
    .sort((a, b) => (b.durationMs ?? 0) - (a.durationMs ?? 0))
    .slice(0, 10)
    .map((p) => p.uid);
  return {
    format: REPORT_FORMAT,
    version: REPORT_VERSION,
    source: input.source,
    node: input.node,
    status: input.status,
    simulated: input.simulated,
    startedAt: iso(input.startedAt),
    endedAt: iso(lastEnd),
    wallMs: input.endedAt - input.startedAt,
    budgetSumSeconds: budgets.length > 0 && budgets.every((b) => b !== null) ? budgets.reduce<number>((sum, b) => sum + (b ?? 0), 0) : null,
    groups,
    pods,
    summary: {
      pods: pods.length,
      terminated: pods.filter((p) => p.outcome === 'terminated' || p.outcome === 'gone').length,
      killedAtDeadline: pods.filter((p) => p.killedAtDeadline.length > 0).length,
      failed: pods.filter((p) => p.failures.length > 0 || p.outcome === 'failed').length,
      notFinished: pods.filter((p) => p.stuck !== null).length,
      slowest,
    },
  };
}

/** Whether a value read back from the state dir is a report this version draws (the rest is trusted as written). */
export function isDrainReport(value: unknown): value is DrainReport {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<DrainReport>;
  return v.format === REPORT_FORMAT && v.version === REPORT_VERSION && Array.isArray(v.pods) && Array.isArray(v.groups) && typeof v.startedAt === 'string' && typeof v.endedAt === 'string';
}
