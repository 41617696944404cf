/**
 * `podctl agent`: the node's long-running housekeeper. Every `intervalMs` it runs the kubelet's
 * housekeeping step (the `sync-known` service, safety rules included) from the configured desired
 * source, so pods whose owner died or timed out are taken over, orphans are driven to termination and
 * finished workers are forgotten; between steps its session serves the store's inbox (kills other
 * podctl processes hand to it). It detects stuck pods and serves `/metrics` and `/healthz`.
 *
 * Invariants:
 * - One housekeeping step at a time; a step that fails is logged and counted, never ends the loop.
 * - A runtime that cannot be reached (a step's check or listing: no socket, UNAVAILABLE, a deadline)
 *   is said once, and so is its answering again; a step that could not reach it counts as failed.
 * - A full step runs whenever its inputs may have changed (`ChangeGate`): any runtime, store or
 *   engine event since the last one, a lease holder that died (its PID is gone), a changed desired
 *   file, a change of the API server's pods of this node (its watch, api-informers.ts), pods still
 *   terminating, or `FULL_STEP_EVERY_MS` passed. Otherwise the step only asks the runtime for its
 *   version (the health check): an idle node costs almost nothing, and asks the API server nothing.
 * - With an API server the agent lists its node's pods and its Node once and then watches them
 *   (api-informers.ts): housekeeping and the maintenance check read those copies. A pod deleted in
 *   the API, or a change of the Node's drain annotation, wakes the loop at once (not at the next
 *   interval); its kill starts then, beside any step in flight (one at a time per pod, from the last
 *   runtime listing, never behind a relist; what that listing does not show running is left to the
 *   step). A maintenance drain runs beside the loop (agent-maintenance.ts), never inside a step:
 *   housekeeping keeps its cadence while a drain waits on a PodDisruptionBudget. While the API
 *   server does not answer, housekeeping goes on with the last known pods
 *   (takeovers, deletions, stuck pods) but terminates no orphan and sends no final delete.
 * - A step refused by a safety rule (an empty desired list while pods run) changes nothing; the
 *   refusal is logged once until the step is allowed again. The agent never passes `--yes`.
 * - A stuck pod (terminating past its grace + `stuckAfterMs`, `isStuck`) is logged once per
 *   termination; `podctl_stuck_pods` counts those stuck now.
 * - With an API server, no API write goes out before the node restriction is confirmed in force
 *   (api-writes.ts, checked before the first step, then every `writeCheckEveryMs` while enabled and
 *   more often while withheld): until then writes
 *   are withheld, maintenance requests wait, housekeeping on the node goes on.
 * - The HTTP server serves exactly `/metrics`, `/healthz` and `/readyz` (GET/HEAD); anything else
 *   is 404/405. `/healthz` is liveness (the loop's own progress), `/readyz` readiness (failed steps
 *   in a row, a runtime silent past `healthWindowMs`, credentials refused); both list every
 *   dependency with its state and since when (agent-health.ts).
 * - A step that fails is logged once until a step succeeds again; the state dir is checked with a
 *   write at most every `STATE_DIR_CHECK_MS` and a step waits while it cannot be written.
 * - On abort the loop stops at once (an in-flight step is cancelled through the signal), an in-flight
 *   drain hands on (an Event says so, the Node stays `draining` for the next agent), the server
 *   closes its connections, and the call returns; the caller closes the session (state saved).
 * - The agent's own pod is never a target: known by its UID (POD_UID), else by its container.
 */
import { BLOCKED_KINDS } from '../diagnose/blocked-by.js';
import { gatherNodeFacts } from '../diagnose/status.js';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import type { V1Pod } from '../../engine/types.js';
import type { ApiNode } from '../api/api-node.js';
import { syncKnown, type DesiredSource, type SyncKnownResult } from './sync-known.js';
import { noteStuck, noteWithheld, stuckReasons } from './agent-notes.js';
import { isRuntimeAway } from '../terminate/drive.js';
import { UsageError, isAbort } from '../../lib/errors.js';
import { formatDuration } from '../../lib/duration.js';
import { sleep } from '../../lib/abortable.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';
import { connectCri, observeRuntimeOperations, type CriClient } from '../../cri/client/client.js';
import { attachMetrics, type PodctlMetrics } from '../../metrics/registry.js';
import type { KubeletStatus } from '../../kube/kubelet.js';
import { ApiInformers } from '../api/api-informers.js';
import { terminatedOnNode } from '../api/api-node.js';
import { podOwnGracePeriod } from '../../engine/grace.js';
import { EventReason, killingMessage } from '../../kube/status.js';
import { AgentHealth, writableStateDir, type StepCause } from './agent-health.js';
import { startApiWrites, type ApiWrites } from './api-writes.js';
import { MaintenanceRunner, type DrainLockSettings } from './agent-maintenance.js';
import type http from 'node:http';
import { addressOf, closeServer, serve, type MetricsAddress } from './agent-http.js';
import { ChangeGate } from './agent-change-gate.js';
import { isSelfPod } from './agent-self.js';

export { parseMetricsAddr, type MetricsAddress } from './agent-http.js';

/** How long the first step waits for the API server's first lists (then it fails, naming why). */
const API_SYNC_WAIT_MS = 10_000;
/** How often the agent checks that its state dir can be written. */
const STATE_DIR_CHECK_MS = 10_000;
/** How often the agent asks whether a kubelet runs (podctl_kubelet_up). */
const KUBELET_CHECK_MS = 10_000;

export interface AgentOptions {
  session: NodeSession;
  source: DesiredSource;
  api?: ApiNode;
  intervalMs: number;
  stuckAfterMs: number;
  /** Where /metrics and /healthz are served; undefined: no HTTP server. */
  listen?: MetricsAddress;
  metrics: PodctlMetrics;
  /** The kubelet's state (podctl_kubelet_up, and the orphan rule beside it), asked at most every KUBELET_CHECK_MS. */
  kubeletState?: () => Promise<KubeletStatus>;
  /** The kubelet's root directory (the final delete's volume check). */
  kubeletRoot?: string;
  /** This node's name (the agent follows its Node object for maintenance requests). */
  node?: string;
  /** `--unrestricted-api-writes`; how often the node restriction is checked again (api-writes.ts). */
  unrestrictedApiWrites?: boolean;
  writeCheckEveryMs?: number;
  /** At most N nodes of the cluster drain at once, by Leases (drain/drain-lock.ts); undefined: no lock. */
  drainLock?: DrainLockSettings;
  /** The pod this agent runs in (its pod is never a target): its UID (POD_UID), else its container (agentSelf). */
  selfPodUid?: string;
  selfContainerId?: string;
  reporter?: Reporter;
  signal: AbortSignal;
  /** Called once the HTTP server listens (tests, and the start-up line). */
  onListening?: (address: MetricsAddress) => void;
  /** How long the runtime may stay silent before /readyz says 503 (default `healthWindowMs(intervalMs)`). */
  healthWindowMs?: number;
  /** Called after every step (tests and benchmarks). */
  onStep?: (step: AgentStep) => void;
  now?: () => number;
  /** Backoff of the API watches after a failure, ms (default 500, doubling up to 10 s; tests shorten it). */
  apiBackoffMs?: { base: number; max: number };
}

export interface AgentStep {
  at: number;
  ok: boolean;
  /** false: nothing could have changed since the last full step, only the runtime was asked (ChangeGate). */
  full: boolean;
  ms: number;
  error?: string;
  /** Pods resumed from a dead owner in this step. */
  resumed: string[];
  orphaned: string[];
  stuck: string[];
}

export interface AgentResult {
  steps: number;
  failedSteps: number;
  resumed: number;
  orphanedRuntimePods: number;
  stuckSeen: number;
  listen: MetricsAddress | null;
  stoppedInMs: number;
}

/** How long the runtime may stay silent before /readyz says 503: three steps, at least 10 s. */
export function healthWindowMs(intervalMs: number): number {
  return Math.max(3 * intervalMs, 10_000);
}

/** How long the loop may go without ending a step before /healthz (liveness) says 503: ten steps, at least a minute. */
function livenessWindowMs(intervalMs: number): number {
  return Math.max(10 * intervalMs, 60_000);
}

export async function runAgent(options: AgentOptions): Promise<AgentResult> {
  const agent = await AgentRun.start(options);
  await agent.loop();
  return agent.stop();
}

/**
 * One run of the agent: what `runAgent` set up (health, writes, HTTP server, watches, change gate,
 * the maintenance beside the loop) and the loop's own state between steps.
 */
class AgentRun {
  readonly #options: AgentOptions;
  readonly #reporter: Reporter;
  readonly #now: () => number;
  readonly #state: AgentHealth;
  readonly #totals = { steps: 0, failedSteps: 0, resumed: 0, orphanedRuntimePods: 0 };
  readonly #stuckLogged = new Map<string, number>(); // uid → since of the termination logged
  readonly #withheldLogged = new Map<string, string>(); // uid → why its final delete was withheld, as logged
  readonly #wake = new Wake();
  readonly #following = new Map<string, Promise<void>>(); // uid → the kill of its deletion in flight
  readonly #isSelf: ((pod: PodInfo) => boolean) | undefined;
  #writes: ApiWrites | undefined;
  #server: http.Server | undefined;
  #listen: MetricsAddress | null = null;
  #detach: (() => void)[] = [];
  #informers: ApiInformers | undefined;
  #gate!: ChangeGate;
  #probe!: CriClient;
  #maintenance: MaintenanceRunner | undefined;
  #stoppingAt = 0;
  #refusal: string | undefined; // the last safety refusal, said once
  #failure: string | undefined; // the last failed step's error, said once
  // the kubelet check (healthz, /proc) at most every KUBELET_CHECK_MS: it is not free on a busy node
  #kubelet: { at: number; state: Promise<KubeletStatus> } | undefined;
  // the state dir takes a write at most every STATE_DIR_CHECK_MS (a read-only or full disk is said at once)
  #stateDirChecked: { at: number; failure: string | undefined } | undefined;

  private constructor(options: AgentOptions) {
    this.#options = options;
    this.#reporter = options.reporter ?? silentReporter();
    this.#now = options.now ?? Date.now;
    this.#state = new AgentHealth(this.#now, options.healthWindowMs ?? healthWindowMs(options.intervalMs), livenessWindowMs(options.intervalMs), this.#reporter);
    this.#isSelf = isSelfPod({ ...(options.selfPodUid ? { podUid: options.selfPodUid } : {}), ...(options.selfContainerId ? { containerId: options.selfContainerId } : {}) });
  }

  /** Sets everything up; the first step housekeeps with the API's pods, so it waits (bounded) for the first lists. */
  static async start(options: AgentOptions): Promise<AgentRun> {
    const run = new AgentRun(options);
    const { session, metrics, signal } = options;
    const state = run.#state;
    state.set('state-dir', 'ok', true, session.stateDir);
    if (!options.api) state.set('api', 'not configured', true);
    if (options.api)
      run.#writes = startApiWrites({
        api: options.api,
        unrestricted: options.unrestrictedApiWrites === true,
        everyMs: options.writeCheckEveryMs,
        metrics,
        reporter: run.#reporter,
        now: run.#now,
        health: state,
      });
    run.#server = options.listen ? await serve(options.listen, metrics, state, signal) : undefined;
    run.#detach.push(
      attachMetrics(metrics, session),
      observeRuntimeOperations((op) => {
        metrics.observeRuntimeOperation(op);
        if (!op.error) state.runtimeAnswered();
      }),
    );
    run.#listen = run.#server ? addressOf(run.#server) : null;
    if (run.#listen) options.onListening?.(run.#listen);
    signal.addEventListener('abort', () => (run.#stoppingAt = run.#now()), { once: true });
    run.#informers = run.#informersFor();
    run.#informers?.start();
    await run.#informers?.synced(API_SYNC_WAIT_MS, signal);
    run.#gate = new ChangeGate(session, options.source, run.#now, options.source.kind === 'api' ? run.#informers : undefined);
    run.#probe = await connectCri({ endpoint: session.endpoint, timeoutMs: 5_000 });
    run.#maintenance = run.#maintenanceFor();
    state.running = true;
    return run;
  }

  #informersFor(): ApiInformers | undefined {
    const { api, source, node, apiBackoffMs } = this.#options;
    if (!api || (source.kind !== 'api' && !node)) return undefined;
    return new ApiInformers({
      api,
      followNode: node !== undefined,
      // the kill of a pod deleted in the API starts as its watch event arrives, not in the next step
      onDeleting: (pod) => this.#killDeleted(pod),
      onWake: (why) => {
        this.#reporter.debug(`agent: ${why}: housekeeping now`);
        this.#wake.wake();
      },
      onSourceNote: (what, event) => {
        if (event.kind === 'error' || event.kind === 'open') this.#noteApi();
        else this.#reporter.debug(`agent: API server (${what}): ${event.kind === 'relist' ? `relisting (${event.reason})` : event.kind}`);
      },
      now: this.#now,
      ...(apiBackoffMs ? { baseBackoffMs: apiBackoffMs.base, maxBackoffMs: apiBackoffMs.max } : {}),
    });
  }

  /** Maintenance through the Node's drain annotation, beside the loop (agent-maintenance.ts). */
  #maintenanceFor(): MaintenanceRunner | undefined {
    const { api, node, session, signal } = this.#options;
    if (!api || !node || !this.#informers) return undefined;
    return new MaintenanceRunner({
      session,
      api,
      node,
      kubeletState: () => this.#kubeletState(),
      ...(this.#isSelf ? { isSelf: this.#isSelf } : {}),
      reporter: this.#reporter,
      signal,
      ...(this.#options.drainLock ? { drainLock: this.#options.drainLock } : {}),
      now: this.#now,
      onActed: () => {
        this.#gate.markChanged(); // what the drain did is housekept in a full step, at once
        this.#wake.wake();
      },
    });
  }

  /** A deletion's kill: one at a time per pod, in the events' order, beside (never behind) a step. */
  #killDeleted(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const next = (this.#following.get(uid) ?? Promise.resolve()).then(() => this.#followDeletion(pod, uid));
    this.#following.set(uid, next);
    void next.finally(() => this.#following.get(uid) === next && this.#following.delete(uid));
  }

  async #followDeletion(pod: V1Pod, uid: string): Promise<void> {
    const { session, api, source, signal } = this.#options;
    if (source.kind !== 'api' || !api || !uid || signal.aborted) return;
    // beside a running kubelet (or before the agent knows) the deletion is the kubelet's: the step decides
    if (this.#options.kubeletState && (await this.#kubelet?.state)?.state !== 'down') return;
    // the last runtime listing, not a relist (one in flight may be a step's): a pod it does not show running is the step's
    const last = { runtimeMaxAgeMs: Number.POSITIVE_INFINITY };
    const [known] = await session.listPods({ uids: [uid], ...last }).catch(() => []);
    if (terminatedOnNode(known)) return;
    const grace = podOwnGracePeriod(pod);
    const name = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    void api.event(pod, 'Normal', EventReason.Killing, killingMessage(grace)).catch(() => undefined);
    await session.requestKill({ uid, gracePeriodSeconds: grace, pod, recordedInApi: true, ...last }).then(
      () => this.#reporter.debug(`agent: ${name}: deleted in the API server; terminating with its grace ${grace}s`),
      (error: Error) => this.#reporter.debug(`agent: ${name}: kill on its deletion: ${error.message} (the next step retries)`),
    );
  }

  #noteApi(): void {
    if (!this.#informers) return;
    const reach = this.#informers.reachability();
    this.#state.api(reach.reachable, reach.permanent === true, reach.error);
    this.#options.metrics.setApiReachable(reach.reachable);
  }

  #kubeletState(): Promise<KubeletStatus | undefined> {
    const ask = this.#options.kubeletState;
    if (!ask) return Promise.resolve(undefined);
    if (!this.#kubelet || this.#now() - this.#kubelet.at >= KUBELET_CHECK_MS) {
      this.#kubelet = { at: this.#now(), state: ask().catch((error: Error): KubeletStatus => ({ state: 'unknown', via: 'none', detail: error.message })) };
    }
    return this.#kubelet.state;
  }

  #noteKubelet(kubelet: KubeletStatus | undefined): void {
    if (!kubelet) return;
    this.#options.metrics.setKubeletState(kubelet.state);
    this.#state.set('kubelet', kubelet.state, true, kubelet.detail);
  }

  async #stateDirCheck(): Promise<string | undefined> {
    const { session } = this.#options;
    if (this.#stateDirChecked && this.#now() - this.#stateDirChecked.at < STATE_DIR_CHECK_MS) return this.#stateDirChecked.failure;
    const failure = await writableStateDir(session.stateDir);
    this.#stateDirChecked = { at: this.#now(), failure };
    if (this.#state.set('state-dir', failure === undefined ? 'ok' : 'failing', failure === undefined, failure ?? session.stateDir)) {
      if (failure !== undefined) this.#reporter.warn(`agent: the state dir cannot be written: ${failure}; housekeeping waits for it`);
      else this.#reporter.info(`agent: the state dir can be written again (${session.stateDir})`);
    }
    return failure;
  }

  /** Steps every `intervalMs` (sooner when woken) until the signal aborts; maintenance runs beside, never inside a step. */
  async loop(): Promise<void> {
    const { signal } = this.#options;
    while (!signal.aborted) {
      if (await this.#writes?.checkWhenDue(signal)) this.#gate.markChanged(); // writes enabled: what was withheld is done in a full step
      // the node's podctl.io/drain annotation, as watched; it writes, so it waits while writes are withheld
      this.#maintenance?.consider(this.#informers?.node(), this.#writes?.enabled === true);
      const started = this.#now();
      const step: AgentStep = { at: started, ok: true, full: true, ms: 0, resumed: [], orphaned: [], stuck: [] };
      const outcome = await this.#step(step);
      if (outcome === 'stopped') break;
      this.#account(step, outcome.result, outcome.cause);
      step.ms = this.#now() - started;
      this.#options.onStep?.(step);
      await this.#wake.sleep(Math.max(0, this.#options.intervalMs - step.ms), signal);
    }
  }

  /** One step: nothing while the state dir cannot be written, the runtime's health check while nothing changed, else a full step. */
  async #step(step: AgentStep): Promise<StepOutcome | 'stopped'> {
    const stateDirFailure = await this.#stateDirCheck();
    if (stateDirFailure !== undefined) {
      // nothing can be recorded: housekeeping waits for the state dir
      Object.assign(step, { ok: false, full: false, error: stateDirFailure });
      return { result: 'failed', cause: { dependency: 'state-dir', message: stateDirFailure } };
    }
    if (!(await this.#gate.needsFullStep())) return this.#lightStep(step);
    try {
      return await this.#fullStep(step);
    } catch (error) {
      if (this.#options.signal.aborted && isAbort(error)) return 'stopped';
      return this.#failedStep(step, error);
    }
  }

  /** Nothing could have changed: only the runtime's version is asked (and the kubelet's state, when due). */
  async #lightStep(step: AgentStep): Promise<StepOutcome> {
    step.full = false;
    let outcome: StepOutcome = { result: 'ok' };
    const unanswered = await probeRuntime(this.#probe, this.#options.signal);
    if (unanswered !== undefined && !this.#options.signal.aborted) {
      step.ok = false;
      step.error = unanswered.message;
      outcome = { result: 'failed', cause: { dependency: 'runtime', message: unanswered.message } };
      this.#state.runtimeAway(unanswered.message);
    }
    this.#noteKubelet(await this.#kubeletState());
    step.stuck = [...this.#stuckLogged.keys()].filter((uid) => this.#gate.stillTerminating(uid));
    return outcome;
  }

  /** The kubelet's housekeeping (sync-known), then what it found: takeovers, orphans, stuck pods and their causes. */
  async #fullStep(step: AgentStep): Promise<StepOutcome> {
    const { session, source, api, metrics, signal } = this.#options;
    const started = this.#now();
    const kubelet = await this.#kubeletState();
    const mark = this.#informers?.mark();
    this.#gate.beginFullStep();
    const apiView = source.kind === 'api' && this.#informers ? watchedPods(this.#informers, this.#now) : undefined;
    let pods: PodInfo[] = [];
    const outcome = await syncKnown({
      session,
      source,
      ...(api ? { api } : {}),
      ...(apiView ? { apiView } : {}),
      ...(kubelet ? { kubelet } : {}),
      ...(this.#options.kubeletRoot ? { kubeletRoot: this.#options.kubeletRoot } : {}),
      ...(this.#isSelf ? { isSelf: this.#isSelf } : {}),
      reporter: quiet(this.#reporter),
      signal,
      wait: false,
      listingMaxAgeMs: this.#options.intervalMs,
      onListing: (p) => (pods = p),
    });
    this.#reporter.debug(`agent: step sync done in ${this.#now() - started} ms`);
    this.#noteKubelet(kubelet);
    if (this.#refusal !== undefined) this.#reporter.info('agent: housekeeping resumed');
    this.#refusal = undefined;
    step.resumed = outcome.resumed.map((p) => p.uid);
    step.orphaned = outcome.orphanedRuntimePods.map((p) => p.uid);
    for (const p of outcome.resumed) this.#reporter.info(`agent: took over ${p.namespace}/${p.name} from a dead or timed-out owner`);
    for (const p of outcome.orphanedRuntimePods) this.#reporter.info(`agent: terminating orphaned runtime pod ${p.namespace}/${p.name}`);
    observeStep(metrics, outcome, pods);
    this.#gate.afterFullStep(pods, mark);
    step.stuck = noteStuck(pods, this.#now(), this.#options.stuckAfterMs, this.#stuckLogged, this.#reporter, api);
    if (outcome.api) noteWithheld(outcome.api, pods, this.#withheldLogged, this.#reporter);
    // what holds each stuck pod, with the node's facts (/proc, mounts) for those few pods only
    const stuckPods = pods.filter((p) => step.stuck.includes(p.uid));
    const facts = stuckPods.length > 0 ? await gatherNodeFacts(session, stuckPods, kubelet, new Map(), signal).catch(() => undefined) : undefined;
    metrics.setStuckPods(BLOCKED_KINDS, stuckReasons(stuckPods, this.#now(), facts));
    this.#state.runtimeAnswered();
    this.#totals.resumed += outcome.resumed.length;
    this.#totals.orphanedRuntimePods += outcome.orphanedRuntimePods.length;
    return { result: apiView?.stale ? 'stale' : 'ok' };
  }

  /** A full step that threw: a safety refusal (nothing done, said once) or a failure with its cause. */
  #failedStep(step: AgentStep, error: unknown): StepOutcome {
    this.#gate.markChanged();
    step.ok = false;
    step.error = (error as Error).message;
    if (error instanceof UsageError) {
      if (this.#refusal !== step.error) this.#reporter.warn(`agent: housekeeping step refused, nothing done: ${step.error}`);
      this.#refusal = step.error;
      this.#state.runtimeAnswered();
      return { result: 'refused' };
    }
    const cause = causeOf(error);
    if (cause.dependency === 'runtime') this.#state.runtimeAway(step.error);
    return { result: 'failed', cause };
  }

  /** Counts a step and says a failure once until a step succeeds again, not at every interval. */
  #account(step: AgentStep, result: StepResult, cause: StepCause | undefined): void {
    if (result === 'failed') {
      if (this.#failure !== step.error) this.#reporter.warn(`agent: housekeeping step failed: ${step.error}`);
      this.#failure = step.error;
    } else if (result !== 'refused') {
      if (this.#failure !== undefined) this.#reporter.info('agent: housekeeping steps succeed again');
      this.#failure = undefined;
    }
    if (result === 'failed' || result === 'refused') this.#totals.failedSteps += 1;
    this.#noteApi();
    this.#options.metrics.countHousekeepingStep(result);
    this.#totals.steps += 1;
    this.#state.stepEnded(result !== 'failed', cause);
  }

  /** After the loop: an in-flight drain hands on (bounded), then the watches, the probe and the server close. */
  async stop(): Promise<AgentResult> {
    this.#state.running = false;
    await this.#maintenance?.stop();
    await this.#informers?.stop();
    this.#gate.close();
    this.#probe.close();
    for (const detach of this.#detach) detach();
    if (this.#server) await closeServer(this.#server);
    return { ...this.#totals, stuckSeen: this.#stuckLogged.size, listen: this.#listen, stoppedInMs: this.#stoppingAt ? this.#now() - this.#stoppingAt : 0 };
  }
}

/** How a step ended, and what failed when it did. */
interface StepOutcome {
  result: StepResult;
  cause?: StepCause;
}

/**
 * The API server's pods of this node as the watch last saw them, for a step of source api. Before
 * the first list there is no desired set: the step fails, naming why.
 */
function watchedPods(informers: ApiInformers, now: () => number): { pods: V1Pod[]; stale?: string } {
  const pods = informers.pods();
  const reach = informers.reachability();
  if (!pods) throw new ApiUnlisted(`the API server has not listed this node's pods yet${reach.reachable ? '' : `: ${reach.error}`}`);
  if (reach.reachable) return { pods };
  return { pods, stale: `the API server does not answer (for ${formatDuration(now() - reach.since)}), it cannot confirm the pod is gone` };
}

/** How a step ended (podctl_housekeeping_steps_total{result}): `stale` ran on the last known API pods. */
type StepResult = 'ok' | 'stale' | 'failed' | 'refused';

const FILE_SYSTEM_CODES = new Set(['EROFS', 'EACCES', 'EPERM', 'ENOSPC', 'EDQUOT', 'EIO', 'ENOTDIR']);

/** What a failed step's error points at: the runtime, the state dir, the API server, or housekeeping itself. */
function causeOf(error: unknown): StepCause {
  const message = (error as Error).message;
  if (isRuntimeAway(error)) return { dependency: 'runtime', message };
  if (error instanceof ApiUnlisted) return { dependency: 'api', message };
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const code = (e as NodeJS.ErrnoException).code;
    if (e.name === 'StoreError' || (typeof code === 'string' && FILE_SYSTEM_CODES.has(code))) return { dependency: 'state-dir', message };
    if (e.name === 'KubeError') return { dependency: 'api', message };
  }
  return { dependency: 'housekeeping', message };
}

/** A step of source api before the first list: no desired set to housekeep with. */
class ApiUnlisted extends Error {
  override readonly name = 'ApiUnlisted';
}

/** The loop's pause between steps, cut short by `wake()` (a watch event to act on at once). */
class Wake {
  #controller = new AbortController();

  wake(): void {
    this.#controller.abort();
  }

  /** Sleeps `ms`, or less when woken (a wake during a step cuts the next pause to nothing). */
  async sleep(ms: number, signal: AbortSignal): Promise<void> {
    await sleep(ms, AbortSignal.any([signal, this.#controller.signal]), { onAbort: 'resolve' });
    if (this.#controller.signal.aborted) this.#controller = new AbortController();
  }
}

/**
 * The runtime's Version call: the health check of a step that had nothing else to ask (observed by
 * the operation metrics either way); the error when the runtime could not be reached.
 */
async function probeRuntime(client: CriClient, signal: AbortSignal): Promise<Error | undefined> {
  try {
    await client.version({ signal });
    return undefined;
  } catch (error) {
    return isRuntimeAway(error) ? (error as Error) : undefined;
  }
}

function observeStep(metrics: PodctlMetrics, result: SyncKnownResult, pods: PodInfo[]): void {
  metrics.setWorkingPods(result.workers);
  metrics.observeOrphanedRuntimePods(result.orphanedRuntimePods.map((p) => p.uid));
  // active: pods that run here and are not being terminated (they hold the node's resources)
  const active = pods.filter((p) => p.state === 'sync' || (p.state === 'runtime' && p.containersRunning > 0));
  const activeStatic = active.filter((p) => p.static).length;
  metrics.setNodePods(
    {
      desired: { static: result.desiredStatic, other: result.desiredPods - result.desiredStatic },
      active: { static: activeStatic, other: active.length - activeStatic },
      mirror: result.api?.mirrors.length ?? 0,
    },
    pods.filter((p) => p.static).map((p) => p.uid),
  );
}

/** Step details go to debug: the agent's own lines say what matters. */
function quiet(reporter: Reporter): Reporter {
  const q = Object.create(reporter) as Reporter;
  q.info = (message: string) => reporter.debug(message);
  q.progress = () => undefined;
  return q;
}
