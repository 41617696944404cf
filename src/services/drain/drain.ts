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

/**
 * How old the runtime listing the plan is made on may be, ms: as kill's selection and requestKill
 * (the session starts one as it opens), so the first stop does not wait for a relist of its own.
 */
const PLAN_LISTING_MAX_AGE_MS = 1_000;

/** The plan, and the pods it was made of (what the drain's consent gate looks at). */
async function buildDrainPlan(options: Pick<DrainOptions, 'session' | 'selection' | 'groups' | 'isExcluded' | 'isSelf' | 'only'>): Promise<DrainPlan & { pods: PodInfo[] }> {
  const { targets } = resolveSelection(await options.session.listPods({ runtimeMaxAgeMs: PLAN_LISTING_MAX_AGE_MS }), options.selection);
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

/** The drain's groups as planned, every pod not started yet. */
function drainedGroups(plan: DrainPlan): DrainedGroup[] {
  return plan.groups.map((g) => ({
    priority: g.priority,
    budgetSeconds: g.budgetSeconds,
    critical: g.critical,
    completedInBudget: false,
    pods: g.pods.map((p) => ({ ...p, outcome: 'not-started' })),
  }));
}

/**
 * One drain under way: its pods by uid (each outcome set here, once terminated never changed), when
 * each kill was requested, and the whole drain's deadline; `cutShort` once that bound stopped it.
 */
class DrainRun {
  readonly byUid: Map<string, DrainedPod>;
  readonly start: number;
  readonly deadline: number;
  cutShort = false;
  readonly #requestedAt = new Map<string, number>();
  /** When the engine first reported each pod terminated (its state's `since`), for the check after the wait. */
  readonly #terminatedSince = new Map<string, number>();
  readonly total: number;
  readonly #specs: PodSpecs;
  #finished = 0;

  constructor(
    readonly options: DrainOptions,
    readonly groups: DrainedGroup[],
    readonly timeoutMs: number,
    readonly reporter: Reporter,
    readonly now: () => number,
  ) {
    this.byUid = new Map<string, DrainedPod>(groups.flatMap((g) => g.pods.map((p) => [p.uid, p] as const)));
    this.total = groups.reduce((n, g) => n + g.pods.length, 0);
    this.start = now();
    this.deadline = this.start + timeoutMs;
    this.#specs = options.specs ?? PodSpecs.none();
  }

  /** Runs the groups in order until one is aborted or the drain's deadline comes. */
  async runGroups(): Promise<void> {
    for (const [index, group] of this.groups.entries()) {
      if (this.options.signal?.aborted) break;
      if (this.now() >= this.deadline) {
        this.cutShort = true;
        break;
      }
      await this.#runGroup(group, index);
    }
  }

  /** After the last group: the pods still terminating get until their killPodNow bound (within the deadline). */
  async waitStragglers(): Promise<void> {
    const stragglers = [...this.byUid.values()].filter((p) => p.outcome === 'timeout');
    if (stragglers.length === 0 || this.options.signal?.aborted) return;
    const boundEnd = Math.max(...stragglers.map((p) => this.#requestedAtOf(p.uid) + killTimeoutMs(p.gracePeriodSeconds)));
    if (this.deadline < boundEnd) this.cutShort = true;
    await this.#waitFor(
      stragglers.map((p) => p.uid),
      Math.min(boundEnd, this.deadline) - this.now(),
      'stragglers',
    );
  }

  /** One group: its kills requested together, then waited for within its budget (and the deadline). */
  async #runGroup(group: DrainedGroup, index: number): Promise<void> {
    const { reporter, groups } = this;
    const startedAtMs = this.now() - this.start;
    group.startedAtMs = startedAtMs;
    const label = `group ${index + 1}/${groups.length} (priority ≥ ${group.priority}${group.critical ? ', critical' : ''}, budget ${group.budgetSeconds}s)`;
    reporter.info(`drain: ${label}: ${group.pods.length} pod(s)`);
    await this.#requestKills(group.pods);
    const budgetMs = Math.min(group.budgetSeconds * 1000, this.deadline - this.now());
    await this.#waitFor(
      group.pods.map((p) => p.uid),
      budgetMs,
      `group ${index + 1}/${groups.length}`,
    );
    group.elapsedMs = this.now() - this.start - startedAtMs;
    group.completedInBudget = group.pods.every((p) => p.outcome === 'terminated' || p.outcome === 'gone');
    if (!group.completedInBudget && !this.options.signal?.aborted) {
      const left = group.pods.filter((p) => p.outcome === 'timeout').length;
      // say why the group ended: its own budget, or the drain's bound (which may come first)
      const why = group.elapsedMs >= group.budgetSeconds * 1000 ? 'budget spent' : `drain bound ${formatDuration(this.timeoutMs)} reached`;
      if (left > 0) reporter.info(`drain: ${label}: ${why}, ${left} pod(s) still terminating; moving on`);
    }
  }

  /** Requests the pods' kills together (a group's pods start terminating at once, as in the kubelet's node shutdown). */
  async #requestKills(pods: DrainedPod[]): Promise<void> {
    const specs = this.#specs;
    await pLimit(KILL_REQUEST_CONCURRENCY).map(pods, async (pod) => {
      const spec = specs.of(pod.uid);
      pod.ordering = specs.orderingOf(pod.uid);
      try {
        // the pod as the API server holds it: its spec orders the stop and names the hooks' ports
        await this.options.session.requestKill({ uid: pod.uid, gracePeriodSeconds: pod.gracePeriodSeconds, ...(spec ? { pod: spec } : {}) });
        this.#requestedAt.set(pod.uid, this.now());
        pod.outcome = 'timeout';
      } catch (error) {
        pod.outcome = 'failed';
        pod.error = (error as Error)?.message?.split('\n')[0] ?? String(error);
        this.reporter.warn(`  ✗ ${pod.namespace}/${pod.name}: ${pod.error}`);
      }
    });
  }

  /** Waits up to `boundMs` for the requested pods among `uids`; a status line counts down on a terminal. */
  async #waitFor(uids: string[], boundMs: number, stage: string): Promise<void> {
    const { reporter, now } = this;
    const waiting = uids.filter((uid) => this.byUid.get(uid)?.outcome === 'timeout');
    if (waiting.length === 0 || boundMs <= 0) return;
    const began = now();
    const status = (): void => {
      if (reporter.interactive) reporter.progress(`drain ${stage}: ${this.#finished}/${this.total} terminated · ${formatDuration(Math.max(0, boundMs - (now() - began)))} left`);
    };
    // on a terminal the status line keeps counting down between events
    const ticker = reporter.interactive ? setInterval(status, 1000) : undefined;
    ticker?.unref();
    const outcomes = await this.options.session
      .waitTerminated(waiting, {
        timeoutMs: boundMs,
        ...(this.options.signal ? { signal: this.options.signal } : {}),
        onProgress: (pod) => {
          if (pod.state === 'terminated' || pod.state === 'finished') {
            if (!this.#terminatedSince.has(pod.uid)) this.#terminatedSince.set(pod.uid, pod.since);
            this.#markDone(pod.uid, 'terminated');
          }
          status();
        },
      })
      .finally(() => clearInterval(ticker));
    for (const [uid, outcome] of outcomes) if (outcome !== 'timeout') this.#markDone(uid, outcome);
    reporter.done();
  }

  /** Records a pod's end once (the first report wins), with its time since its kill was requested. */
  #markDone(uid: string, outcome: 'terminated' | 'gone'): void {
    const pod = this.byUid.get(uid);
    if (!pod || pod.outcome === 'terminated' || pod.outcome === 'gone') return;
    pod.outcome = outcome;
    pod.elapsedMs = this.now() - this.#requestedAtOf(uid);
    this.#finished += 1;
    this.reporter.info(`  ✓ ${pod.namespace}/${pod.name} ${outcome} (${formatDuration(pod.elapsedMs)})`);
  }

  /** The earliest moment the engine reported any of `uids` terminated, when it reported every one of them; else undefined. */
  terminatedSince(uids: readonly string[]): number | undefined {
    const sinces = uids.map((uid) => this.#terminatedSince.get(uid));
    return uids.length > 0 && sinces.every((t): t is number => t !== undefined) ? Math.min(...sinces) : undefined;
  }

  #requestedAtOf(uid: string): number {
    return this.#requestedAt.get(uid) ?? this.start;
  }
}

/** The drain's result once its waits are over: outcomes checked after the wait, then its status. */
async function finishDrain(run: DrainRun, plan: DrainPlan, timeoutSource: DrainResult['timeoutSource']): Promise<DrainResult> {
  const { options, groups, byUid, now } = run;
  const interrupted = options.signal?.aborted === true;
  const done = [...byUid.values()].filter((p) => p.outcome === 'terminated').map((p) => p.uid);
  // the check may be any relist that started after the pods were seen terminated (as kill's)
  const since = run.terminatedSince(done);
  await summarizeAfterWait(byUid, { session: options.session, interrupted, check: done, ...(since !== undefined ? { since } : {}), now, reporter: run.reporter, warnPrefix: '  ✗ ' });
  const cutShort = run.cutShort || groups.some((group) => group.pods.some((p) => p.outcome === 'not-started'));
  const summary = summarize(groups, plan.skipped);
  const allDone = summary.terminated === summary.planned;
  const remaining = summary.timedOut + summary.notStarted;
  const status = allDone ? 'done' : interrupted ? 'interrupted' : cutShort && remaining > 0 ? 'timed-out' : 'partial';
  return { dryRun: false, status, timeoutSeconds: run.timeoutMs / 1000, timeoutSource, elapsedMs: now() - run.start, groups, skipped: plan.skipped, summary };
}

export async function drainNode(options: DrainOptions): Promise<DrainResult> {
  const reporter = options.reporter ?? silentReporter();
  const now = options.now ?? Date.now;
  const plan = await buildDrainPlan(options);
  const timeoutMs = options.timeoutMs ?? plan.defaultTimeoutSeconds * 1000;
  const timeoutSource = options.timeoutMs === undefined ? 'plan' : 'flag';
  const groups = drainedGroups(plan);

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

  const run = new DrainRun(options, groups, timeoutMs, reporter, now);
  reporter.info(
    `drain: ${run.total} pod(s) in ${groups.length} group(s), ${plan.skipped.length} skipped; bound ${formatDuration(timeoutMs)}` +
      (timeoutSource === 'plan' ? ' (group budgets + longest killPodNow bound; --timeout to change)' : ''),
  );
  await run.runGroups();
  await run.waitStragglers();
  return finishDrain(run, plan, timeoutSource);
}

/** Pods a drain requested that are still terminating: what must be handed on when the drain ends. */
export function drainPodsToHandOff(result: DrainResult): string[] {
  return result.groups
    .flatMap((g) => g.pods)
    .filter((p) => p.outcome === 'timeout' || p.outcome === 'interrupted')
    .map((p) => p.uid);
}
