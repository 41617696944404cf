/**
 * Terminating chosen pods and waiting for them: the shared core of `kill` and `evict`.
 *
 * Invariants:
 * - Every wait has a bound: --timeout, else the kubelet's killPodNow bound max(10 s, 1.5 × grace)
 *   of the longest grace among the pods; the bound is reported before waiting starts.
 * - A grace given here only ever shortens a pod's grace (the engine enforces it; the planned value
 *   shown is the same computation).
 * - Each chosen pod appears exactly once in the result with one outcome; explicit refs that match
 *   nothing are listed under `missing`.
 * - The outcome maps to exactly one exit code (`terminateExitCode`).
 * - Safety (docs/operator-guide.md#safety-rules): nothing is requested before the destructive-scope
 *   gate passed — `--all -A`, static or system-critical pods need a yes (asked on a terminal, else
 *   `--yes`); `evict` refuses static and critical pods unless `force`, as the kubelet's eviction
 *   manager does. `dryRun` resolves and plans exactly as a real run, then returns without acting.
 * - A wait that ends early (timeout, signal) returns the partial result; pods still terminating that
 *   this process drives are handed to a background driver by the caller (`podsToHandOff`).
 */
import type { KubeClient as FullKubeClient } from '../../kube/index.js';
import pLimit from 'p-limit';
import { EventReason } from '../../kube/status.js';
import { PodNotFoundError, UsageError } from '../../lib/errors.js';
import { criticalReasonOf, type CriticalReason } from '../../engine/pod-kinds.js';
import { killTimeoutMs } from '../../engine/kill-now.js';
import { plannedGraceSeconds } from './grace-plan.js';
import { ExitCode, type ExitCodeValue } from '../../lib/exit-codes.js';
import { formatDuration } from '../../lib/duration.js';
import { describeSelection, resolveSelection, type PodSelection } from '../../lib/refs.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';
import type { NodeSession, PodInfo, WaitOutcome } from '../../domain/session-api.js';
import { PodSpecs, type StopOrdering } from '../api/pod-specs.js';
import { summarizeAfterWait } from './after-wait.js';

/** What kill and evict report through: the eviction Event and status. */
export type KubeClient = Pick<FullKubeClient, 'node' | 'postEvent' | 'markEvicted'>;

/**
 * Kill requests in flight at once (each takes a lease and writes a checkpoint). High enough for a
 * node's worth of pods to go out together (the kubelet's default maxPods is 110; 250 is a common
 * setting): their write-aheads then share one durable batch (the session's group commit), and no
 * pod's StopContainer waits for a free lane behind other pods' writes.
 */
export const KILL_REQUEST_CONCURRENCY = 256;

/** How old the runtime listing the selection is resolved on may be, ms. */
const SELECTION_LISTING_MAX_AGE_MS = 1_000;

/**
 * `terminated`: the runtime says the pod's containers stopped. `kubelet-finishing`: left to the
 * kubelet, its API object is gone but the runtime still runs its containers at the bound.
 */
export type PodOutcome = 'terminated' | 'gone' | 'timeout' | 'interrupted' | 'requested' | 'planned' | 'already-terminated' | 'failed' | 'blocked-by-pdb' | 'kubelet-finishing';

export interface TerminatedPod {
  uid: string;
  namespace: string;
  name: string;
  /** The grace period the kill runs with (seconds). */
  gracePeriodSeconds: number;
  /** 'local': this process drives it; 'delegated': the owning podctl process was asked to; 'api': the kubelet, asked through the API server. */
  handledBy?: 'local' | 'delegated' | 'api';
  ownerPid?: number;
  outcome: PodOutcome;
  /** Time from the request until the pod was seen terminated (ms). */
  elapsedMs?: number;
  error?: string;
  /** Over CRI: how its containers are stopped — with the API server's spec, or without one (pod-specs.ts). */
  ordering?: StopOrdering;
  /** What podctl left to someone else, and why (a pod the kubelet is already terminating). */
  note?: string;
}

export type TerminateStatus = 'done' | 'requested' | 'planned' | 'timed-out' | 'interrupted' | 'not-found' | 'failed';

interface ApiServerReport {
  statusPatched: number;
  eventsPosted: number;
  errors: string[];
}

export interface TerminateResult {
  action: 'kill' | 'evict';
  /** Nothing was done: `pods` is the plan (outcome 'planned'). */
  dryRun: boolean;
  status: TerminateStatus;
  waited: boolean;
  /** The wait bound in seconds (null with --no-wait). */
  timeoutSeconds: number | null;
  /** Where the bound came from. */
  timeoutSource: 'flag' | 'killPodNow' | null;
  pods: TerminatedPod[];
  missing: string[];
  /** evict with an API server: what was reported there. */
  apiServer?: ApiServerReport;
  /** --no-wait: the background podctl process that drives the pods this process would have driven. */
  handedOffTo?: { pid: number; log: string; uids: string[] } | null;
}

export interface TerminateOptions {
  session: NodeSession;
  selection: PodSelection;
  /** Grace override (seconds); only shortens. */
  gracePeriodSeconds?: number;
  /** Wait bound (ms); default: the killPodNow bound. */
  timeoutMs?: number;
  wait: boolean;
  evict?: { reason: string; message: string };
  /** API server client (evict reports status and an Event through it). */
  kube?: KubeClient;
  reporter?: Reporter;
  signal?: AbortSignal;
  now?: () => number;
  /** Plan only: resolve, compute grace and bound, request nothing. */
  dryRun?: boolean;
  /** The destructive-scope gate is answered yes in advance (--yes). */
  yes?: boolean;
  /** evict: allow static and system-critical pods (--force). */
  force?: boolean;
  /** Asks the operator (on a terminal); absent: no one can be asked, so --yes is needed. */
  confirm?: (question: string) => Promise<boolean>;
  /** The background driver (`kill --drive`): wait without a bound, until every pod is terminated. */
  unbounded?: boolean;
  /** This node's pods as the API server holds them: each kill hands its pod's to the syncer. */
  specs?: PodSpecs;
  /** The selection as the caller resolved it (`resolveTargets`, a listing of the last second): not listed again. */
  resolved?: { targets: PodInfo[]; missing: string[] };
}

function isDoneState(state: PodInfo['state']): boolean {
  return state === 'terminated' || state === 'finished';
}

export function isFinal(pod: Pick<PodInfo, 'state' | 'worker'>): boolean {
  return pod.state === 'finished' || (pod.state === 'terminated' && pod.worker?.finished === true);
}

/** The exit code of a kill/evict outcome: failures (1) before timeouts (3) before missing pods (4). */
export function terminateExitCode(result: Pick<TerminateResult, 'status'>): ExitCodeValue {
  switch (result.status) {
    case 'failed':
      return ExitCode.Failure;
    case 'timed-out':
      return ExitCode.TimedOut;
    case 'interrupted':
      return ExitCode.Interrupted;
    case 'not-found':
      return ExitCode.NotFound;
    default:
      return ExitCode.Done;
  }
}

export function summarizeStatus(pods: TerminatedPod[], missing: string[], waited: boolean): TerminateStatus {
  if (pods.some((p) => p.outcome === 'failed')) return 'failed';
  if (pods.some((p) => p.outcome === 'interrupted')) return 'interrupted';
  if (pods.some((p) => p.outcome === 'timeout' || p.outcome === 'blocked-by-pdb' || p.outcome === 'kubelet-finishing')) return 'timed-out';
  if (missing.length > 0) return 'not-found';
  return waited ? 'done' : 'requested';
}

/**
 * The hint when nothing matched in the selection's namespace: the namespaces where the same names
 * or selector do match (`-n web`, or `-A` when there are several), else how to list the node.
 */
async function elsewhereHint(session: NodeSession, selection: PodSelection): Promise<string | undefined> {
  if (selection.namespace === undefined) return undefined;
  const everywhere = { ...selection, namespace: undefined } as PodSelection;
  const widened = selection.refs.length > 0 ? { ...everywhere, refs: selection.refs.map((r) => (r.kind === 'name' ? { ...r, namespace: '' } : r)) } : everywhere;
  const pods = await session.listPods({ runtimeMaxAgeMs: SELECTION_LISTING_MAX_AGE_MS }).catch(() => []);
  const hits = selection.refs.length > 0 ? pods.filter((p) => selection.refs.some((r) => r.kind === 'name' && r.name === p.name)) : resolveSelection(pods, widened).targets;
  const namespaces = [...new Set(hits.map((p) => p.namespace))].sort();
  if (namespaces.length === 0) return undefined;
  const count = `${hits.length} match${hits.length === 1 ? 'es' : ''} in ${namespaces.length === 1 ? `namespace ${namespaces[0]}` : `namespaces ${namespaces.join(', ')}`}`;
  return namespaces.length === 1 ? `${count}: add -n ${namespaces[0]}` : `${count}: add -A (or -n NAMESPACE)`;
}

/**
 * The selection resolved on a runtime listing from the last second (the session starts one as it
 * opens), as requestKill decides on the pod's spec and existence: first on the pods the runtime
 * shows (and this session drives); only a ref that names none of them is looked up among the pods
 * the store remembers too (finished ones, or ones whose runtime objects are gone). Nothing matched:
 * PodNotFoundError, with where the names do match.
 */
export async function resolveTargets(session: NodeSession, selection: PodSelection): Promise<{ targets: PodInfo[]; missing: string[] }> {
  const listing = { runtimeMaxAgeMs: SELECTION_LISTING_MAX_AGE_MS };
  let { targets, missing } = resolveSelection(await session.listPods({ ...listing, scope: 'runtime' }), selection);
  if (missing.length > 0) ({ targets, missing } = resolveSelection(await session.listPods(listing), selection));
  if (targets.length === 0) {
    throw new PodNotFoundError(missing.length > 0 ? missing : [`no pod matches ${describeSelection(selection)}`], await elsewhereHint(session, selection));
  }
  return { targets, missing };
}

/** --dry-run: the plan, with the bound a real run would wait for; nothing was requested. */
function dryRunResult(options: TerminateOptions, action: 'kill' | 'evict', planned: TerminatedPod[], missing: string[], apiServer: ApiServerReport | undefined): TerminateResult {
  const longest = Math.max(1, ...planned.filter((p) => p.outcome === 'planned').map((p) => p.gracePeriodSeconds));
  const timeoutMs = options.wait ? (options.timeoutMs ?? killTimeoutMs(longest)) : undefined;
  return {
    action,
    dryRun: true,
    status: 'planned',
    waited: false,
    timeoutSeconds: timeoutMs === undefined ? null : timeoutMs / 1000,
    timeoutSource: timeoutMs === undefined ? null : options.timeoutMs === undefined ? 'killPodNow' : 'flag',
    pods: planned,
    missing,
    ...(apiServer ? { apiServer } : {}),
  };
}

export async function terminatePods(options: TerminateOptions): Promise<TerminateResult> {
  const reporter = options.reporter ?? silentReporter();
  const now = options.now ?? Date.now;
  const action = options.evict ? 'evict' : 'kill';
  const { session } = options;

  const { targets, missing } = options.resolved ?? (await resolveTargets(session, options.selection));
  for (const ref of missing) reporter.warn(`pod not found: ${ref}`);
  await passSafetyGate(
    options,
    targets.filter((p) => !isFinal(p)),
    action,
  );

  const results = new Map<string, TerminatedPod>();
  const requestedAt = new Map<string, number>();
  const podsByUid = new Map(targets.map((p) => [p.uid, p]));
  const apiServer: ApiServerReport | undefined = options.evict && options.kube ? { statusPatched: 0, eventsPosted: 0, errors: [] } : undefined;

  const specs = options.specs ?? PodSpecs.none();
  const toRequest: { pod: PodInfo; entry: TerminatedPod }[] = [];
  for (const pod of targets) {
    const spec = specs.of(pod.uid);
    const entry: TerminatedPod = {
      uid: pod.uid,
      namespace: pod.namespace,
      name: pod.name,
      gracePeriodSeconds: plannedGraceSeconds({ ...pod, pod: spec ?? pod.pod }, options.gracePeriodSeconds),
      outcome: 'requested',
    };
    results.set(pod.uid, entry);
    if (!isFinal(pod)) entry.ordering = specs.orderingOf(pod.uid);
    if (isFinal(pod)) entry.outcome = 'already-terminated';
    else if (options.dryRun) entry.outcome = 'planned';
    else toRequest.push({ pod, entry });
  }
  if (options.dryRun) return dryRunResult(options, action, [...results.values()], missing, apiServer);

  // Requests go out concurrently (bounded), as the kubelet's workers start terminations in
  // parallel: a 50-pod kill must not cost 50 sequential lease + checkpoint round trips.
  const requestOne = async ({ pod, entry }: { pod: PodInfo; entry: TerminatedPod }): Promise<void> => {
    const spec = specs.of(pod.uid);
    // the eviction is reported on the pod as the API server holds it, when it answered
    const reported = spec ? { ...pod, pod: spec } : pod;
    if (options.evict && options.kube && apiServer && pod.pod) {
      await reportEvictionEvent(options.kube, reported, options.evict, apiServer, reporter);
    }
    try {
      const handle = await session.requestKill({
        uid: pod.uid,
        // the pod as the API server holds it: its spec orders the stop and names the hooks' ports
        ...(spec ? { pod: spec } : {}),
        // the grace this kill runs with (shown in the result), never longer than the pod's own
        ...(options.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: entry.gracePeriodSeconds } : {}),
        ...(options.evict ? { evict: true, reason: options.evict.reason, message: options.evict.message } : {}),
      });
      entry.handledBy = handle.handledBy;
      entry.ownerPid = handle.ownerPid;
      requestedAt.set(pod.uid, now());
      if (pod.state === 'sync' || pod.state === 'runtime') podsByUid.set(pod.uid, { ...pod, state: 'terminating' });
      reporter.debug(
        `${action} ${pod.namespace}/${pod.name}: grace ${entry.gracePeriodSeconds}s, ${handle.handledBy === 'local' ? 'driven by this process' : `handed to owner pid ${handle.ownerPid}`}`,
      );
    } catch (error) {
      entry.outcome = 'failed';
      entry.error = (error as Error)?.message?.split('\n')[0] ?? String(error);
      reporter.warn(`${action} ${pod.namespace}/${pod.name} failed: ${entry.error}`);
    }
    if (options.evict && options.kube && apiServer && pod.pod && entry.outcome !== 'failed') {
      await reportEvictionStatus(options.kube, reported, options.evict, apiServer, reporter);
    }
  };
  await pLimit(KILL_REQUEST_CONCURRENCY).map(toRequest, requestOne);

  const pending = [...requestedAt.keys()];
  const base: Pick<TerminateResult, 'action' | 'dryRun' | 'pods' | 'missing' | 'apiServer'> = { action, dryRun: false, pods: [...results.values()], missing, ...(apiServer ? { apiServer } : {}) };
  if (!options.wait || pending.length === 0) {
    const waited = options.wait;
    return { ...base, waited, timeoutSeconds: null, timeoutSource: null, status: summarizeStatus([...results.values()], missing, waited || pending.length === 0) };
  }

  return waitForKills({ options, action, reporter, now, pending, results, requestedAt, podsByUid }, base, missing);
}

/** What the wait after a kill's requests works on. */
interface KillWait {
  options: TerminateOptions;
  action: 'kill' | 'evict';
  reporter: Reporter;
  now: () => number;
  /** The pods requested here, waited for. */
  pending: string[];
  results: Map<string, TerminatedPod>;
  requestedAt: Map<string, number>;
  /** The latest view of each pod (its state, grace deadline, since when). */
  podsByUid: Map<string, PodInfo>;
}

/** Waits for the requested pods within the bound (said first), then the summary after the wait. */
async function waitForKills(w: KillWait, base: Pick<TerminateResult, 'action' | 'dryRun' | 'pods' | 'missing' | 'apiServer'>, missing: string[]): Promise<TerminateResult> {
  const { options, action, reporter, now, pending, results, podsByUid } = w;
  const { session } = options;
  const longestGrace = Math.max(...pending.map((uid) => results.get(uid)?.gracePeriodSeconds ?? 1));
  const timeoutMs = options.unbounded ? Number.POSITIVE_INFINITY : (options.timeoutMs ?? killTimeoutMs(longestGrace));
  const timeoutSource = options.timeoutMs === undefined ? 'killPodNow' : 'flag';
  reporter.info(
    options.unbounded
      ? `${action}: driving ${pending.length} pod(s) until terminated`
      : `${action}: waiting up to ${formatDuration(timeoutMs)} for ${pending.length} pod(s)` +
          (timeoutSource === 'killPodNow' ? ` (killPodNow bound: max(10s, 1.5 × grace ${longestGrace}s); --timeout to change)` : ''),
  );

  await followWait(w, timeoutMs);
  // Pods driven here were checked by their own terminating sync, which lists the runtime after its
  // stops and fails (and is retried) while anything still runs; the pods another process drove
  // are checked here.
  const terminatedUids = pending.filter((uid) => results.get(uid)?.outcome === 'terminated' && results.get(uid)?.handledBy !== 'local');
  // When every one of them was seen terminated (with the time it became so), the check may use a
  // runtime listing that started after the earliest of those times.
  const sinces = terminatedUids.map((uid) => podsByUid.get(uid)).map((p) => (p && isDoneState(p.state) ? p.since : undefined));
  const since = sinces.every((t): t is number => t !== undefined) && sinces.length > 0 ? Math.min(...sinces) : undefined;
  await summarizeAfterWait(results, { session, interrupted: options.signal?.aborted === true, check: terminatedUids, ...(since !== undefined ? { since } : {}), now, reporter, warnPrefix: '' });
  const pods = [...results.values()];
  for (const p of pods) {
    if (p.outcome === 'timeout') reporter.warn(`${p.namespace}/${p.name} still terminating after ${formatDuration(timeoutMs)}${p.error ? ` (${p.error})` : ''}`);
  }
  const timeoutSeconds = Number.isFinite(timeoutMs) ? timeoutMs / 1000 : null;
  return { ...base, pods, waited: true, timeoutSeconds, timeoutSource: timeoutSeconds === null ? null : timeoutSource, status: summarizeStatus(pods, missing, true) };
}

/** The wait itself: a status line that keeps counting on a terminal, each pod's outcome and time. */
async function followWait(w: KillWait, timeoutMs: number): Promise<void> {
  const { options, action, reporter, now, pending, results, requestedAt, podsByUid } = w;
  const { session } = options;
  const startedWait = now();
  const terminatedSeen = new Set<string>();
  const render = (): void => {
    const done = terminatedSeen.size;
    const waiting = pending.filter((uid) => !terminatedSeen.has(uid)).map((uid) => podsByUid.get(uid));
    const first = waiting[0];
    const left = first?.graceDeadline !== undefined ? `, grace ${formatDuration(Math.max(0, first.graceDeadline - now()))} left` : '';
    const detail = first ? ` · ${first.namespace}/${first.name} ${first.state}${left}` : '';
    reporter.progress(`${action}: ${done}/${pending.length} terminated${detail} · ${formatDuration(now() - startedWait)}/${formatDuration(timeoutMs)}`);
  };
  render();
  // on a terminal the status line keeps counting between events; elsewhere only changes are printed
  const ticker = reporter.interactive ? setInterval(render, 1000) : undefined;
  ticker?.unref();
  const outcomes = await session
    .waitTerminated(pending, {
      timeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
      onProgress: (pod) => {
        podsByUid.set(pod.uid, pod);
        if ((pod.state === 'terminated' || pod.state === 'finished') && !terminatedSeen.has(pod.uid)) {
          terminatedSeen.add(pod.uid);
          const entry = results.get(pod.uid);
          if (entry) entry.elapsedMs = now() - (requestedAt.get(pod.uid) ?? startedWait);
        }
        render();
      },
    })
    .finally(() => clearInterval(ticker));
  reporter.done();
  for (const uid of pending) {
    const entry = results.get(uid);
    if (!entry) continue;
    const outcome: WaitOutcome = outcomes.get(uid) ?? 'timeout';
    entry.outcome = outcome;
    if (outcome !== 'timeout' && entry.elapsedMs === undefined) entry.elapsedMs = now() - (requestedAt.get(uid) ?? startedWait);
  }
}

/** Why a pod makes a kill's scope destructive (asks for a yes), if it does. */
function destructiveReason(pod: PodInfo): CriticalReason | undefined {
  return criticalReasonOf(pod.pod, pod.static);
}

interface CriticalTarget {
  pod: PodInfo;
  reason: CriticalReason;
}

function criticalOf(targets: readonly PodInfo[]): CriticalTarget[] {
  return targets.map((p) => ({ pod: p, reason: destructiveReason(p) })).filter((c): c is CriticalTarget => c.reason !== undefined);
}

function names(list: readonly CriticalTarget[]): string {
  return (
    list
      .slice(0, 5)
      .map((c) => `${c.pod.namespace}/${c.pod.name} (${c.reason === 'priority' ? 'system-critical' : c.reason})`)
      .join(', ') + (list.length > 5 ? `, and ${list.length - 5} more` : '')
  );
}

/**
 * Why a kill of these pods asks for a yes on account of their kind — "2 static or system-critical
 * pod(s): kube-system/etcd-n1 (static), …" — or undefined when none is static or critical. The one
 * wording of `podctl kill`'s question and of the watch screen's confirmation.
 */
export function criticalScope(targets: readonly PodInfo[]): string | undefined {
  const critical = criticalOf(targets);
  return critical.length === 0 ? undefined : `${critical.length} static or system-critical pod(s): ${names(critical)}`;
}

/**
 * Why an eviction of these pods is refused — static and system-critical pods, which the kubelet's
 * eviction manager never evicts — unless forced; undefined when it may go on. The one rule of
 * `podctl evict` (without --force) and of the watch screen's evict (which has no force).
 */
export function evictRefusal(targets: readonly PodInfo[], force: boolean): { message: string; hint: string } | undefined {
  const critical = criticalOf(targets);
  if (force || critical.length === 0) return undefined;
  return { message: `evict refuses static and system-critical pods, as the kubelet's eviction manager does: ${names(critical)}`, hint: 'use kill, or pass --force to evict them anyway' };
}

/**
 * The destructive-scope gate: `--all -A`, static pods and system-critical pods (priority ≥
 * 2000000000) need a yes — asked on a terminal, else `--yes`; an eviction of static or critical pods
 * is refused unless `force` (the kubelet's eviction manager never evicts them). Throws UsageError
 * (exit 2) before anything was requested.
 */
/** The destructive-scope gate (docs/operator-guide.md#safety-rules); refuses or asks, before anything is requested. */
export async function passSafetyGate(options: TerminateOptions, targets: PodInfo[], action: 'kill' | 'evict'): Promise<void> {
  const refusal = action === 'evict' ? evictRefusal(targets, options.force === true) : undefined;
  if (refusal) throw new UsageError(refusal.message, refusal.hint);
  if (options.dryRun || options.yes) return;
  const wholeNode = options.selection.all && options.selection.namespace === undefined;
  const reasons: string[] = [];
  if (wholeNode) reasons.push(`every pod on the node (${targets.length})`);
  const special = criticalScope(targets);
  if (special !== undefined) reasons.push(special);
  if (reasons.length === 0) return;
  const question = `${action} ${reasons.join(' and ')}?`;
  if (!options.confirm) throw new UsageError(`refusing to ${question.slice(0, -1)} without confirmation`, 'pass --yes (no terminal to ask on)');
  if (!(await options.confirm(question))) throw new UsageError(`${action} not confirmed; nothing was done`);
}

/** A yes given in advance (--yes) or asked on a terminal (absent: no terminal to ask on). */
export interface ConsentGate {
  yes: boolean;
  confirm?: (question: string) => Promise<boolean>;
}

/**
 * The gate of a drain over CRI (the rule `kill` follows): static and system-critical pods among
 * `targets` need a yes — asked on a terminal, else `--yes`. Throws UsageError (exit 2) before
 * anything was requested.
 */
export async function passDrainGate(gate: ConsentGate, targets: readonly PodInfo[]): Promise<void> {
  const special = criticalScope(targets);
  if (gate.yes || special === undefined) return;
  if (!gate.confirm) throw new UsageError(`refusing to drain ${special} over CRI without confirmation`, 'pass --yes (no terminal to ask on)');
  if (!(await gate.confirm(`drain ${special} over CRI?`))) throw new UsageError('drain not confirmed; nothing was done');
}

/** The kubelet's eviction manager records a Warning event (reason Evicted, the why in its message) before it kills the pod. */
async function reportEvictionEvent(kube: KubeClient, pod: PodInfo, evict: { reason: string; message: string }, report: ApiServerReport, reporter: Reporter): Promise<void> {
  if (!pod.pod) return;
  try {
    await kube.postEvent(pod.pod, 'Warning', EventReason.Evicted, evict.message);
    report.eventsPosted += 1;
  } catch (error) {
    report.errors.push((error as Error).message);
    reporter.warn(`event for ${pod.namespace}/${pod.name} not posted: ${(error as Error).message}`);
  }
}

async function reportEvictionStatus(kube: KubeClient, pod: PodInfo, evict: { reason: string; message: string }, report: ApiServerReport, reporter: Reporter): Promise<void> {
  if (!pod.pod) return;
  try {
    await kube.markEvicted(pod.pod, evict.message);
    report.statusPatched += 1;
  } catch (error) {
    report.errors.push((error as Error).message);
    reporter.warn(`status of ${pod.namespace}/${pod.name} not updated: ${(error as Error).message}`);
  }
}

/** With --no-wait: the pods this process drives itself, which must be handed to a background driver. */
export function podsToHandOff(result: TerminateResult): string[] {
  const unfinished: PodOutcome[] = ['requested', 'timeout', 'interrupted'];
  return result.pods.filter((p) => unfinished.includes(p.outcome) && p.handledBy === 'local').map((p) => p.uid);
}
