/**
 * Maintenance through Kubernetes: the agent follows its own Node object. Annotating the node
 * `podctl.io/drain=requested` makes that node's agent drain it — beside a running kubelet as
 * `kubectl drain` does (cordon first, then the Eviction API in podctl's priority order, honouring
 * PodDisruptionBudgets unless `podctl.io/drain-ignore-pdb=true`, waiting for the kubelet; CRI only
 * for what the kubelet fails to finish past its grace), with the kubelet down the node-local CRI
 * drain — posting progress as Events on the Node and ending with `podctl.io/drain=done` or
 * `failed`. `podctl.io/drain=uncordon` uncordons the node and removes the annotation.
 *
 * With the cluster's drain lock a request waits for a slot as `podctl.io/drain=queued`
 * (`podctl.io/drain-message` says why).
 * An agent that starts and finds its Node `draining` (its predecessor stopped or died mid-drain)
 * resumes the drain; an agent stopped mid-drain hands it on (an Event; the Node stays `draining`).
 *
 * Invariants: a request is taken once (the annotation goes to `draining` before the first pod); the
 * agent's own pod is never drained (`skipped: self`); a drain that throws ends as `failed` with a
 * Warning Event naming the cause, never as a silent stop. The Event that says how a drain ended is
 * posted before the annotation says `done` or `failed`, so whoever waits for the annotation finds
 * the explanation already on the Node. The drain's report is kept in the state dir (report/report.ts)
 * and that final Event names its file.
 */
import type { KubeletStatus } from '../../kube/kubelet.js';
import { parseSelection } from '../../lib/refs.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';
import type { ApiNode } from '../api/api-node.js';
import { parseDuration } from '../../lib/duration.js';
import { UsageError } from '../../lib/errors.js';
import { defaultGroups, DEFAULT_CRITICAL_GRACE_SECONDS, DEFAULT_DRAIN_GRACE_SECONDS } from './drain-plan.js';
import { runDrain, type FullDrainResult } from './drain-run.js';
import type { PdbBlock } from '../terminate/kubelet-guard.js';
import type { DrainLock } from './drain-lock.js';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import { boundSignal } from '../../lib/abortable.js';

const DRAIN_ANNOTATION = 'podctl.io/drain';
/** Why a request waits (`queued`): which drain lock slots are held, and by whom. */
const MESSAGE_ANNOTATION = 'podctl.io/drain-message';
const IGNORE_PDB_ANNOTATION = 'podctl.io/drain-ignore-pdb';
/** Consent to evict pods with emptyDir volumes (kubectl drain --delete-emptydir-data). */
const EMPTYDIR_ANNOTATION = 'podctl.io/drain-delete-emptydir-data';
/** Consent to evict pods no controller recreates (kubectl drain --force). */
const UNMANAGED_ANNOTATION = 'podctl.io/drain-delete-unmanaged';
/** The drain's bound (a duration, e.g. 10m); PodDisruptionBudgets are waited on without one by default. */
const TIMEOUT_ANNOTATION = 'podctl.io/drain-timeout';

type MaintenanceAction = 'none' | 'drained' | 'failed' | 'uncordoned' | 'handed-on' | 'queued';

/** How long the Event of a drain handed on may take (the agent is stopping: its own signal has aborted). */
const HAND_ON_EVENT_MS = 3_000;

export interface MaintenanceOptions {
  session: NodeSession;
  api: ApiNode;
  kubelet: KubeletStatus;
  node: string;
  isSelf?: (pod: PodInfo) => boolean;
  reporter?: Reporter;
  signal?: AbortSignal;
  /** The Node as the agent's watch last saw it (null: no such Node); without it, one GET. */
  current?: { annotations: Record<string, string> } | null;
  /** The agent's first look since it started: a drain left `draining` by the agent before it is resumed. */
  resume?: boolean;
  /** The cluster's drain lock (at most N nodes drain at once); without it the drain starts at once. */
  lock?: DrainLock;
}

export interface MaintenanceOutcome {
  action: MaintenanceAction;
  detail?: string;
}

/** Looks at the node's annotations once and does what they ask. */
export async function checkMaintenance(options: MaintenanceOptions): Promise<MaintenanceOutcome> {
  const { kube } = options.api;
  const node = options.current !== undefined ? options.current : await kube.getNode(options.signal);
  const want = node?.annotations[DRAIN_ANNOTATION];
  if (want === 'requested' || want === 'queued' || (want === 'draining' && options.resume === true)) return lockedDrain(options, node?.annotations ?? {});
  if (want === 'uncordon') {
    await kube.setUnschedulable(false, options.signal);
    await event(options, 'Normal', 'Uncordoned', `podctl agent uncordoned node ${options.node}`);
    await kube.annotateNode({ [DRAIN_ANNOTATION]: null }, options.signal);
    options.reporter?.info(`agent: node ${options.node} uncordoned (${DRAIN_ANNOTATION}=uncordon)`);
    return { action: 'uncordoned' };
  }
  return { action: 'none' };
}

/**
 * With the drain lock (drain-lock.ts), the drain waits for a slot: the Node says `queued` and why
 * (annotation podctl.io/drain-message, a DrainQueued Event once), and the agent asks again later. The
 * slot is released when the drain ends, kept (not renewed) when it is handed on.
 */
async function lockedDrain(options: MaintenanceOptions, annotations: Record<string, string>): Promise<MaintenanceOutcome> {
  if (!options.lock) return drainForMaintenance(options, annotations);
  const got = await options.lock.acquire(options.signal);
  if (!got.held) return queue(options, annotations, got.why);
  const lock = options.lock;
  // a throw here is an abort mid-write (the agent stops) or a failure already said: the slot is kept
  // for the next agent on this node when stopping, released otherwise
  const outcome = await drainForMaintenance(options, annotations).catch(async (error: unknown) => {
    if (options.signal?.aborted) lock.abandon();
    else await lock.release();
    throw error;
  });
  if (outcome.action === 'handed-on') lock.abandon();
  else await lock.release(); // already released before the final annotation: a no-op
  return outcome;
}

async function queue(options: MaintenanceOptions, annotations: Record<string, string>, why: string): Promise<MaintenanceOutcome> {
  const message = `waiting for the drain lock: ${why}`;
  if (annotations[DRAIN_ANNOTATION] === 'queued' && annotations[MESSAGE_ANNOTATION] === message) return { action: 'queued', detail: why };
  await options.api.kube.annotateNode({ [DRAIN_ANNOTATION]: 'queued', [MESSAGE_ANNOTATION]: message }, options.signal);
  if (annotations[DRAIN_ANNOTATION] !== 'queued') await event(options, 'Normal', 'DrainQueued', `podctl agent: the drain of node ${options.node} waits: ${why}`);
  options.reporter?.info(`agent: drain of node ${options.node} queued: ${why}`);
  return { action: 'queued', detail: why };
}

/**
 * The drain the annotation asks for, or the one a previous agent left `draining` (resumed: pods it
 * already stopped or evicted are simply not there to drain again). Ends `done` or `failed`, or hands
 * on when the agent stops.
 */
async function drainForMaintenance(options: MaintenanceOptions, annotations: Record<string, string>): Promise<MaintenanceOutcome> {
  const reporter = options.reporter ?? silentReporter();
  const resumed = annotations[DRAIN_ANNOTATION] === 'draining';
  const ignorePdb = annotations[IGNORE_PDB_ANNOTATION] === 'true';
  const queued = annotations[MESSAGE_ANNOTATION] !== undefined; // the why of a queued request goes as the drain starts
  if (!resumed || queued) await options.api.kube.annotateNode({ [DRAIN_ANNOTATION]: 'draining', ...(queued ? { [MESSAGE_ANNOTATION]: null } : {}) }, options.signal);
  const how =
    options.kubelet.state === 'down' ? 'the kubelet is down: over CRI' : `the kubelet is ${options.kubelet.state}: cordon, then the Eviction API${ignorePdb ? ' (PodDisruptionBudgets ignored)' : ''}`;
  if (resumed) await event(options, 'Normal', 'DrainResumed', `podctl agent resumes the drain of node ${options.node}, left ${DRAIN_ANNOTATION}=draining by the agent before it (${how})`);
  else await event(options, 'Normal', 'DrainStarted', `podctl agent drains node ${options.node} (${how})`);
  reporter.info(`agent: ${resumed ? 'resuming the drain of' : 'draining'} node ${options.node} (${DRAIN_ANNOTATION}=${resumed ? 'draining' : 'requested'}; ${how})`);
  try {
    const timeout = annotations[TIMEOUT_ANNOTATION];
    const timeoutMs = timeout === undefined ? undefined : parseDuration(timeout, TIMEOUT_ANNOTATION);
    const blocks: Promise<void>[] = [];
    const startedAt = Date.now();
    const drained = await runDrain({
      session: options.session,
      selection: parseSelection({ args: [], allNamespaces: true, allowEmpty: true }),
      groups: defaultGroups(DEFAULT_DRAIN_GRACE_SECONDS, DEFAULT_CRITICAL_GRACE_SECONDS),
      ...(options.isSelf ? { isSelf: options.isSelf } : {}),
      kubelet: options.kubelet,
      api: options.api,
      force: false,
      ignorePdb,
      consent: { deleteEmptyDirData: annotations[EMPTYDIR_ANNOTATION] === 'true', deleteUnmanaged: annotations[UNMANAGED_ANNOTATION] === 'true' },
      agent: true,
      dryRun: false,
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      node: options.node,
      reporter,
      onPdbBlock: (block) => blocks.push(event(options, 'Warning', 'DrainBlockedByPDB', pdbBlockMessage(block))),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const endedAt = Date.now();
    await Promise.all(blocks);
    if (options.signal?.aborted) return await handOn(options, reporter);
    return await endDrain(options, drained, { startedAt, endedAt }, reporter);
  } catch (error) {
    if (options.signal?.aborted) return handOn(options, reporter);
    const detail = (error as Error).message;
    const hint = error instanceof UsageError && error.hint ? `; ${error.hint}` : '';
    await event(options, 'Warning', 'DrainFailed', `podctl agent: ${detail}${hint}; then annotate ${DRAIN_ANNOTATION}=requested again`);
    await options.lock?.release();
    await options.api.kube.annotateNode({ [DRAIN_ANNOTATION]: 'failed' }, options.signal).catch(() => undefined);
    reporter.warn(`agent: drain of node ${options.node} failed: ${detail}`);
    return { action: 'failed', detail };
  }
}

function pdbBlockMessage(block: PdbBlock): string {
  const retry = Number.isFinite(block.givesUpAt) ? `retrying every 5s until ${new Date(block.givesUpAt).toISOString()}` : `retrying every 5s, no bound (${TIMEOUT_ANNOTATION} bounds it)`;
  return `podctl agent: eviction of ${block.namespace}/${block.name} held by PodDisruptionBudget ${block.budget ?? '(unnamed)'} (${block.disruptionsAllowed} disruption(s) allowed); ${retry}`;
}

/** A drain that ran to its end: its skips, its report, the final Event, then `done` or `failed`. */
async function endDrain(options: MaintenanceOptions, drained: FullDrainResult, times: { startedAt: number; endedAt: number }, reporter: Reporter): Promise<MaintenanceOutcome> {
  const skipped = drained.decisions.filter((d) => d.decision === 'skip');
  if (skipped.length > 0) {
    await event(options, 'Normal', 'DrainSkipped', `podctl agent leaves ${skipped.length} pod(s) alone: ${skipped.map((d) => `${d.namespace}/${d.name} (${d.reason})`).join(', ')}`);
  }
  const held = drained.viaApi.filter((p) => ['blocked-by-pdb', 'failed', 'timeout', 'kubelet-finishing'].includes(p.outcome));
  const ok = held.length === 0 && drained.status === 'done';
  const stopped = drained.viaApi.filter((p) => p.outcome === 'terminated' || p.outcome === 'gone').length + drained.summary.terminated;
  // the drain's report, kept in the state dir: the final Event names it (`podctl report --last-drain` draws it)
  const { recordDrainReport } = await import('./report/report.js');
  const { file } = await recordDrainReport({
    session: options.session,
    result: drained,
    ...times,
    source: 'agent',
    node: options.node,
    viaApi: drained.viaApi,
    onError: (message) => reporter.warn(`agent: ${message}`),
  });
  const report = file === null ? '' : `; report ${file} (podctl report --last-drain)`;
  const detail = `${stopped} pod(s) stopped${held.length > 0 ? `; held back: ${held.map((p) => `${p.namespace}/${p.name} (${p.outcome}${p.error ? `: ${p.error}` : ''})`).join(', ')}` : ''}; drain ${drained.status}${report}`;
  const next = ok ? '' : `; ${nextStep(held.map((p) => p.outcome))}`;
  await event(options, ok ? 'Normal' : 'Warning', ok ? 'DrainCompleted' : 'DrainFailed', `podctl agent: ${detail}${next}`);
  await options.lock?.release(); // whoever waits for done or failed finds the slot free
  await options.api.kube.annotateNode({ [DRAIN_ANNOTATION]: ok ? 'done' : 'failed' }, options.signal);
  reporter.info(`agent: drain of node ${options.node} ${ok ? 'done' : 'failed'}: ${detail}`);
  return { action: ok ? 'drained' : 'failed', detail };
}

/**
 * The agent stops mid-drain (SIGTERM, a rollout): the drain is not failed, it is handed on. The Node
 * stays `draining` (the next agent on it resumes) and an Event says so, sent with a signal of its own
 * (the agent's has aborted) bounded by HAND_ON_EVENT_MS.
 */
async function handOn(options: MaintenanceOptions, reporter: Reporter): Promise<MaintenanceOutcome> {
  const detail = `podctl agent stopped mid-drain of node ${options.node}: the node stays ${DRAIN_ANNOTATION}=draining and the agent that starts next on it resumes the drain`;
  await event({ ...options, signal: boundSignal(HAND_ON_EVENT_MS) }, 'Normal', 'DrainHandedOn', detail);
  reporter.info(`agent: ${detail}`);
  return { action: 'handed-on', detail };
}

/** What the operator does after a failed drain, by what held it back. */
function nextStep(outcomes: string[]): string {
  const steps: string[] = [];
  if (outcomes.includes('blocked-by-pdb')) steps.push(`wait for the budget to allow a disruption or set ${IGNORE_PDB_ANNOTATION}=true`);
  if (outcomes.includes('timeout')) steps.push(`give the pods more time (${TIMEOUT_ANNOTATION})`);
  if (outcomes.includes('kubelet-finishing')) steps.push('check the kubelet, which has not stopped their containers (podctl status on the node shows them)');
  if (outcomes.includes('failed') || steps.length === 0) steps.push("see the agent's log and the pods' Events");
  return `next: ${steps.join(', or ')}, then annotate ${DRAIN_ANNOTATION}=requested again (or ${DRAIN_ANNOTATION}=uncordon to give up)`;
}

async function event(options: MaintenanceOptions, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
  await options.api.kube.postNodeEvent(type, reason, message, options.signal).catch((error: Error) => options.reporter?.debug(`node event ${reason}: ${error.message}`));
}
