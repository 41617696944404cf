/**
 * `podctl drain`: terminate every pod on the node in priority groups, as the kubelet's graceful node
 * shutdown does, and report what happened to each pod.
 *
 * Order of work, per group in ascending priority: request every pod's kill (grace from the plan),
 * then wait until the group's pods are terminated or its budget runs out, then go on to the next
 * group. After the last group, pods still terminating get until their killPodNow bound. The whole
 * drain is bounded by --timeout (default: the plan's `defaultTimeoutSeconds`).
 *
 * Invariants:
 * - Each planned pod has exactly one outcome; groups never overlap in time except for stragglers
 *   (a group's budget ran out), which keep terminating while later groups start, as on the kubelet.
 * - `status` is 'done' when every pod terminated, 'timed-out' when the drain's own bound cut it short,
 *   else 'partial'; each maps to one exit code (`drainExitCode`).
 */
import pLimit from 'p-limit';
import { formatDuration } from '../../lib/duration.js';
import { ExitCode, type ExitCodeValue } from '../../lib/exit-codes.js';
import { resolveSelection, type PodSelection } from '../../lib/refs.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';
import { killTimeoutMs } from '../../engine/kill-now.js';
import { planDrain, type DrainPlan, type PlannedPod, type PriorityGroup, type SkippedPod } from './drain-plan.js';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import { isFinal, KILL_REQUEST_CONCURRENCY, passDrainGate, type ConsentGate } from '../terminate/terminate.js';
import { summarizeAfterWait } from '../terminate/after-wait.js';
import { PodSpecs, type StopOrdering } from '../api/pod-specs.js';

type DrainPodOutcome = 'terminated' | 'gone' | 'timeout' | 'interrupted' | 'failed' | 'not-started';

interface DrainedPod extends PlannedPod {
  outcome: DrainPodOutcome;
  elapsedMs?: number;
  error?: string;
  /** How its containers were stopped: with the API server's spec, or without one (pod-specs.ts). */
  ordering?: StopOrdering;
}

interface DrainedGroup {
  priority: number;
  budgetSeconds: number;
  critical: boolean;
  /** Every pod of the group terminated within its budget. */
  completedInBudget: boolean;
  /** ms since the drain started; absent when the group never started. */
  startedAtMs?: number;
  elapsedMs?: number;
  pods: DrainedPod[];
}

interface DrainSummary {
  planned: number;
  terminated: number;
  timedOut: number;
  failed: number;
  notStarted: number;
  skipped: number;
}

export interface DrainResult {
  dryRun: boolean;
  status: 'done' | 'partial' | 'timed-out' | 'interrupted' | 'planned';
  timeoutSeconds: number;
  timeoutSource: 'flag' | 'plan';
  elapsedMs: number;
  groups: DrainedGroup[];
  skipped: SkippedPod[];
  summary: DrainSummary;
  /** Pods still terminating at the end, handed to this background podctl process (null: none could be started). */
  handedOffTo?: { pid: number; log: string; uids: string[] } | null;
}

export interface DrainOptions {
  session: NodeSession;
  /** Which pods (default: every pod on the node). */
  selection: PodSelection;
  groups: PriorityGroup[];
  isExcluded?: (pod: PodInfo) => boolean;
  /** The drainer's own pod (the agent's): skipped as `self`. */
  isSelf?: (pod: PodInfo) => boolean;
  /** Only these pods are planned (beside a running kubelet: what the API path left to CRI); the others are not listed. */
  only?: ReadonlySet<string>;
  dryRun: boolean;
  /** Bound of the whole drain (ms); default: the plan's. */
  timeoutMs?: number;
  reporter?: Reporter;
  signal?: AbortSignal;
  now?: () => number;
  /** This node's pods as the API server holds them: each kill hands its pod's to the syncer. */
  specs?: PodSpecs;
  /** Static and system-critical pods in the plan need this yes before the first kill (`podctl drain`; absent: consented). */
  gate?: ConsentGate;
}

export function drainExitCode(result: Pick<DrainResult, 'status'>): ExitCodeValue {
  switch (result.status) {
    case 'timed-out':
      return ExitCode.TimedOut;
    case 'partial':
      return ExitCode.Partial;
    case 'interrupted':
      return ExitCode.Interrupted;
    default:
      return ExitCode.Done;
  }
}

/** The plan, and the pods it was made of (what the drain's consent gate looks at). */
async function buildDrainPlan(options: Pick<DrainOptions, 'session' | 'selection' | 'groups' | 'isExcluded' | 'isSelf' | 'only'>): Promise<DrainPlan & { pods: PodInfo[] }> {
  const { targets } = resolveSelection(await options.session.listPods(), options.selection);
  const only = options.only;
  const pods = only ? targets.filter((p) => only.has(p.uid)) : targets;
  const plan = planDrain({
    pods,
    groups: options.groups,
    isTerminated: (p) => isFinal(p) || p.state === 'terminated',
    ...(options.isExcluded ? { isExcluded: options.isExcluded } : {}),
    ...(options.isSelf ? { isSelf: options.isSelf } : {}),
  });
  return { ...plan, pods };
}

function summarize(groups: DrainedGroup[], skipped: SkippedPod[]): DrainSummary {
  const pods = groups.flatMap((g) => g.pods);
  const count = (...outcomes: DrainPodOutcome[]): number => pods.filter((p) => outcomes.includes(p.outcome)).length;
  return {
    planned: pods.length,
    terminated: count('terminated', 'gone'),
    timedOut: count('timeout', 'interrupted'),
    failed: count('failed'),
    notStarted: count('not-started'),
    skipped: skipped.length,
  };
}

export async function drainNode(options: DrainOptions): Promise<DrainResult> {
  const reporter = options.reporter ?? silentReporter();
  const now = options.now ?? Date.now;
  const plan = await buildDrainPlan(options);
  const specs = options.specs ?? PodSpecs.none();
  const timeoutMs = options.timeoutMs ?? plan.defaultTimeoutSeconds * 1000;
  const timeoutSource = options.timeoutMs === undefined ? 'plan' : 'flag';
  const groups: DrainedGroup[] = plan.groups.map((g) => ({
    priority: g.priority,
    budgetSeconds: g.budgetSeconds,
    critical: g.critical,
    completedInBudget: false,
    pods: g.pods.map((p) => ({ ...p, outcome: 'not-started' })),
  }));

  if (!options.dryRun && options.gate) {
    const planned = new Set(groups.flatMap((g) => g.pods.map((p) => p.uid)));
    await passDrainGate(
      options.gate,
      plan.pods.filter((p) => planned.has(p.uid)),
    );
  }
  if (options.dryRun) {
    return { dryRun: true, status: 'planned', timeoutSeconds: timeoutMs / 1000, timeoutSource, elapsedMs: 0, groups, skipped: plan.skipped, summary: summarize(groups, plan.skipped) };
  }

  const start = now();
  const deadline = start + timeoutMs;
  const total = groups.reduce((n, g) => n + g.pods.length, 0);
  reporter.info(
    `drain: ${total} pod(s) in ${groups.length} group(s), ${plan.skipped.length} skipped; bound ${formatDuration(timeoutMs)}` +
      (timeoutSource === 'plan' ? ' (group budgets + longest killPodNow bound; --timeout to change)' : ''),
  );
  const byUid = new Map<string, DrainedPod>(groups.flatMap((g) => g.pods.map((p) => [p.uid, p] as const)));
  const requestedAt = new Map<string, number>();
  let cutShort = false;
  let finished = 0;

  const markDone = (uid: string, outcome: 'terminated' | 'gone'): void => {
    const pod = byUid.get(uid);
    if (!pod || pod.outcome === 'terminated' || pod.outcome === 'gone') return;
    pod.outcome = outcome;
    pod.elapsedMs = now() - (requestedAt.get(uid) ?? start);
    finished += 1;
    reporter.info(`  ✓ ${pod.namespace}/${pod.name} ${outcome} (${formatDuration(pod.elapsedMs)})`);
  };

  const waitFor = async (uids: string[], boundMs: number, stage: string): Promise<void> => {
    const waiting = uids.filter((uid) => byUid.get(uid)?.outcome === 'timeout');
    if (waiting.length === 0 || boundMs <= 0) return;
    const began = now();
    const status = (): void => {
      if (reporter.interactive) reporter.progress(`drain ${stage}: ${finished}/${total} terminated · ${formatDuration(Math.max(0, boundMs - (now() - began)))} left`);
    };
    // on a terminal the status line keeps counting down between events
    const ticker = reporter.interactive ? setInterval(status, 1000) : undefined;
    ticker?.unref();
    const outcomes = await options.session
      .waitTerminated(waiting, {
        timeoutMs: boundMs,
        ...(options.signal ? { signal: options.signal } : {}),
        onProgress: (pod) => {
          if (pod.state === 'terminated' || pod.state === 'finished') markDone(pod.uid, 'terminated');
          status();
        },
      })
      .finally(() => clearInterval(ticker));
    for (const [uid, outcome] of outcomes) if (outcome !== 'timeout') markDone(uid, outcome);
    reporter.done();
  };

  for (const [index, group] of groups.entries()) {
    if (options.signal?.aborted) break;
    if (now() >= deadline) {
      cutShort = true;
      break;
    }
    group.startedAtMs = now() - start;
    const label = `group ${index + 1}/${groups.length} (priority ≥ ${group.priority}${group.critical ? ', critical' : ''}, budget ${group.budgetSeconds}s)`;
    reporter.info(`drain: ${label}: ${group.pods.length} pod(s)`);
    // a group's pods start terminating together, as in the kubelet's node shutdown
    await pLimit(KILL_REQUEST_CONCURRENCY).map(group.pods, async (pod) => {
      const spec = specs.of(pod.uid);
      pod.ordering = specs.orderingOf(pod.uid);
      try {
        // the pod as the API server holds it: its spec orders the stop and names the hooks' ports
        await options.session.requestKill({ uid: pod.uid, gracePeriodSeconds: pod.gracePeriodSeconds, ...(spec ? { pod: spec } : {}) });
        requestedAt.set(pod.uid, now());
        pod.outcome = 'timeout';
      } catch (error) {
        pod.outcome = 'failed';
        pod.error = (error as Error)?.message?.split('\n')[0] ?? String(error);
        reporter.warn(`  ✗ ${pod.namespace}/${pod.name}: ${pod.error}`);
      }
    });
    const budgetMs = Math.min(group.budgetSeconds * 1000, deadline - now());
    await waitFor(
      group.pods.map((p) => p.uid),
      budgetMs,
      `group ${index + 1}/${groups.length}`,
    );
    group.elapsedMs = now() - start - group.startedAtMs;
    group.completedInBudget = group.pods.every((p) => p.outcome === 'terminated' || p.outcome === 'gone');
    if (!group.completedInBudget && !options.signal?.aborted) {
      const left = group.pods.filter((p) => p.outcome === 'timeout').length;
      // say why the group ended: its own budget, or the drain's bound (which may come first)
      const why = group.elapsedMs >= group.budgetSeconds * 1000 ? 'budget spent' : `drain bound ${formatDuration(timeoutMs)} reached`;
      if (left > 0) reporter.info(`drain: ${label}: ${why}, ${left} pod(s) still terminating; moving on`);
    }
  }

  const stragglers = [...byUid.values()].filter((p) => p.outcome === 'timeout');
  if (stragglers.length > 0 && !options.signal?.aborted) {
    const boundEnd = Math.max(...stragglers.map((p) => (requestedAt.get(p.uid) ?? start) + killTimeoutMs(p.gracePeriodSeconds)));
    if (deadline < boundEnd) cutShort = true;
    await waitFor(
      stragglers.map((p) => p.uid),
      Math.min(boundEnd, deadline) - now(),
      'stragglers',
    );
  }
  const interrupted = options.signal?.aborted === true;
  const done = [...byUid.values()].filter((p) => p.outcome === 'terminated').map((p) => p.uid);
  await summarizeAfterWait(byUid, { session: options.session, interrupted, check: done, now, reporter, warnPrefix: '  ✗ ' });

  for (const group of groups) if (group.pods.some((p) => p.outcome === 'not-started')) cutShort = true;
  const summary = summarize(groups, plan.skipped);
  const allDone = summary.terminated === summary.planned;
  const remaining = summary.timedOut + summary.notStarted;
  const status = allDone ? 'done' : interrupted ? 'interrupted' : cutShort && remaining > 0 ? 'timed-out' : 'partial';
  return { dryRun: false, status, timeoutSeconds: timeoutMs / 1000, timeoutSource, elapsedMs: now() - start, groups, skipped: plan.skipped, summary };
}

/** Pods a drain requested that are still terminating: what must be handed on when the drain ends. */
export function drainPodsToHandOff(result: DrainResult): string[] {
  return result.groups
    .flatMap((g) => g.pods)
    .filter((p) => p.outcome === 'timeout' || p.outcome === 'interrupted')
    .map((p) => p.uid);
}
