/**
 * Stopping pods beside a running kubelet (kill, evict, drain). The pods it desires (bound to this
 * node in the API, or static pods from its manifests) are its own: stopped over CRI, it starts them
 * again. The rule is `desiredPodPolicy` (kube/kubelet.ts), one function: through the API server when
 * one is configured — a delete with the grace (kill) or the Eviction API (evict, drain; a
 * PodDisruptionBudget's 429 is waited out within the bound, then reported `blocked-by-pdb`;
 * `ignorePdb` deletes instead) — and the kubelet finishes the pod while podctl waits (bounded); no
 * API server: refused (exit 2, naming --force); `--force`: over CRI, with a warning.
 *
 * Invariants:
 * - With the kubelet down nothing changes: podctl acts over CRI.
 * - `unknown` counts as running.
 * - A dry run plans (outcome `planned`) and writes nothing to the API.
 * - Every wait is bounded (--timeout, else the killPodNow bound of the grace).
 * - Static pods cannot be deleted through the API (their mirror pod is not them): with the API path
 *   they are refused like any desired pod without an API server, unless --force.
 * - What cannot be told counts as desired: a pod the kubelet took from the API server
 *   (`kubernetes.io/config.source: api`) while the kubelet runs and no API server answered (none
 *   configured, or its list failed) is the kubelet's until the API says otherwise, as an orphan is
 *   kept until the API confirms it gone.
 */
import type { V1Pod } from '../../engine/types.js';
import { desiredInApi, isBeingDeleted } from '../../kube/desired.js';
import { isApiSourcedPod, isMirrorPod, isTerminalPhase } from '../../engine/pod-kinds.js';
import { podOwnGracePeriod } from '../../engine/grace.js';
import { API_LIST_BOUND_MS, listPodSpecs, SPEC_ONLY_LIST_BOUND_MS, type PodSpecs } from '../api/pod-specs.js';
import { desiredPodPolicy, type DesiredPodAction, type KubeletStatus } from '../../kube/kubelet.js';
import { UsageError } from '../../lib/errors.js';
import { formatDuration } from '../../lib/duration.js';
import { resolveSelection, type PodSelection } from '../../lib/refs.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';
import { sleep } from '../../lib/abortable.js';
import type { ApiNode } from '../api/api-node.js';
import { killTimeoutMs } from '../../engine/kill-now.js';
import { plannedGraceSeconds } from './grace-plan.js';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import type { TerminatedPod } from './terminate.js';
import { ApiWaitJournal } from './api-wait-journal.js';
import { pdbWaitBoard } from './pdb-waits.js';

export interface KubeletGuardOptions {
  kubelet: KubeletStatus;
  api?: ApiNode | undefined;
  /** Stop desired pods over CRI anyway (the kubelet may start them again). */
  force: boolean;
  /** Go through the API server (kill --via-api); the default whenever one is configured. */
  viaApi: boolean;
  /** evict/drain: delete instead of the Eviction API (PodDisruptionBudgets not honoured). */
  ignorePdb?: boolean;
}

/** What kill, evict, drain and sync-known say about the kubelet in their result. */
export interface KubeletReport {
  state: KubeletStatus['state'];
  detail: string;
  action: DesiredPodAction;
  /** Targets the kubelet desires ("ns/name"). */
  desired: string[];
}

export interface GuardInput {
  session: NodeSession;
  /** The pods to stop, as selected (kill, evict), or given (drain). */
  selection?: PodSelection;
  targets?: PodInfo[];
  /** kill: a graceful delete; evict, drain: the Eviction API. */
  mode: 'delete' | 'evict';
  /** The command, for messages. */
  action: string;
  gracePeriodSeconds?: number;
  timeoutMs?: number;
  reporter?: Reporter;
  signal?: AbortSignal;
  dryRun?: boolean;
  guard: KubeletGuardOptions;
  /** This node's pods as the API server holds them, when the caller listed them already. */
  specs?: PodSpecs;
  /** How long a PodDisruptionBudget's block is retried (ms; default the wait's bound; Infinity: no bound). */
  pdbBoundMs?: number;
  /** Told once per pod and budget when a PodDisruptionBudget holds its eviction back. */
  onPdbBlock?: (block: PdbBlock) => void;
}

export interface GuardOutcome {
  report: KubeletReport;
  /** Pods stopped through the API server (the kubelet does it), with their outcome. */
  viaApi: TerminatedPod[];
  /** UIDs left for the CRI path (all targets unless the API path took some). */
  remaining: string[] | undefined;
  /** This node's pods as the API server holds them (what the CRI path hands to the syncer). */
  specs: PodSpecs;
}

/** Between two eviction attempts the API server throttled (429 without a budget), unless its Retry-After says when. */
const EVICTION_RETRY_MS = 1_000;
/** Between two eviction attempts a PodDisruptionBudget refused: kubectl drain's 5 s. */
const PDB_RETRY_MS = 5_000;

const refOf = (p: { namespace: string; name: string }): string => `${p.namespace}/${p.name}`;

export async function guardKill(input: GuardInput): Promise<GuardOutcome> {
  const reporter = input.reporter ?? silentReporter();
  const { guard, session } = input;
  const targets = input.targets ?? resolveSelection(await session.listPods({ runtimeMaxAgeMs: 1_000 }), input.selection!).targets;
  // bounded: the command does not wait long for an API server that does not answer
  const boundMs = guard.kubelet.state === 'down' ? SPEC_ONLY_LIST_BOUND_MS : API_LIST_BOUND_MS;
  const specs = input.specs ?? (await listPodSpecs(guard.api, { ...(input.signal ? { signal: input.signal } : {}), reporter, boundMs }));
  const apiPods = specs.all();
  /** Why the API server could not say which pods the kubelet desires (none configured, or its list failed). */
  const apiSilent = guard.api ? specs.missingBecause : 'no API server is configured to ask';
  const live = targets.filter((p) => p.state !== 'finished');
  const desiredPods = live.filter((p) => p.static || desiredInApi(apiPods, p.uid) !== undefined);
  // from the API server, which did not answer: the kubelet's until it says otherwise
  const untold = guard.kubelet.state === 'down' || apiSilent === undefined ? [] : live.filter((p) => !p.static && desiredInApi(apiPods, p.uid) === undefined && isApiSourcedPod(p.pod));
  // being deleted in the API: the running kubelet is terminating them already (its grace, its hooks)
  const terminating = guard.kubelet.state === 'down' ? [] : live.filter((p) => terminatingInApi(specs.of(p.uid)));
  const mayBeDesired = [...desiredPods, ...untold];
  const kubelets = [...mayBeDesired, ...terminating];
  const action = desiredPodPolicy({ kubelet: guard.kubelet.state, desired: kubelets.length > 0, force: guard.force, viaApi: guard.viaApi, api: guard.api !== undefined });
  const report: KubeletReport = { state: guard.kubelet.state, detail: guard.kubelet.detail, action, desired: kubelets.map(refOf) };
  const names = kubelets.map(refOf).join(', ');
  switch (action) {
    case 'proceed':
      if (kubelets.length > 0 && guard.force) reporter.warn(`--force: stopping ${names} over CRI while the kubelet is ${guard.kubelet.state}; it may start them again`);
      return { report, viaApi: [], remaining: undefined, specs };
    case 'refuse':
      throw new UsageError(
        `the kubelet is ${guard.kubelet.state} (${guard.kubelet.detail}) and ${desiredPhrase(desiredPods, untold)}: it would start ${mayBeDesired.length === 1 ? 'it' : 'them'} again`,
        'configure the API server (--kubeconfig) so podctl goes through it, or pass --force to stop over CRI anyway',
      );
    case 'via-api':
      break;
  }
  if (!guard.api) throw new UsageError(`--via-api needs an API server`, 'pass --kubeconfig FILE or set KUBECONFIG');
  if (untold.length > 0) {
    throw new UsageError(
      `the kubelet is ${guard.kubelet.state} and may desire ${untold.map(refOf).join(', ')}, which came from the API server, but ${apiSilent}: it would start ${untold.length === 1 ? 'it' : 'them'} again`,
      'retry when the API server answers, or pass --force to stop over CRI anyway',
    );
  }
  const viaApi: TerminatedPod[] = [];
  const throughApi = new Set<string>();
  const staticOnly: PodInfo[] = [];
  for (const pod of desiredPods) {
    const apiPod = desiredInApi(apiPods, pod.uid);
    if (!apiPod || isMirrorPod(apiPod)) {
      staticOnly.push(pod); // a static pod: the API cannot stop it
      continue;
    }
    throughApi.add(pod.uid);
  }
  if (staticOnly.length > 0) {
    throw new UsageError(
      `the kubelet is ${guard.kubelet.state} and runs static pod(s) ${staticOnly.map(refOf).join(', ')} from its manifests: the API server cannot stop them and the kubelet would start them again`,
      "move the manifest out of the kubelet's manifest directory, or pass --force to stop over CRI anyway",
    );
  }
  const mode = input.mode === 'evict' && guard.ignorePdb ? 'delete' : input.mode;
  const deadline = Date.now();
  const left = await Promise.all(terminating.map((pod) => leaveToKubelet(guard.api!, pod, specs.of(pod.uid)!, input, reporter, deadline)));
  viaApi.push(...left);
  for (const pod of terminating) throughApi.add(pod.uid);
  if (desiredPods.length > 0) {
    reporter.info(
      `${input.action}: the kubelet is ${guard.kubelet.state}; ${desiredPods.map(refOf).join(', ')} ${input.dryRun ? 'would go' : 'go'} through the API server (${mode === 'evict' ? 'the Eviction API' : 'a graceful delete'}), and the kubelet stops ${desiredPods.length === 1 ? 'it' : 'them'}`,
    );
  }
  await Promise.all(
    desiredPods
      .filter((p) => throughApi.has(p.uid))
      .map(async (pod) => {
        const grace = plannedGraceSeconds({ ...pod, pod: specs.of(pod.uid) ?? pod.pod }, input.gracePeriodSeconds);
        if (input.dryRun) {
          viaApi.push({ uid: pod.uid, namespace: pod.namespace, name: pod.name, gracePeriodSeconds: grace, outcome: 'planned', handledBy: 'api' });
          return;
        }
        viaApi.push(await stopThroughApi(guard.api!, pod, grace, mode, input, reporter, deadline));
      }),
  );
  viaApi.sort((a, b) => refOf(a).localeCompare(refOf(b)));
  return { report, viaApi, remaining: targets.filter((p) => !throughApi.has(p.uid)).map((p) => p.uid), specs };
}

/** Deleted in the API and not terminal there: a running kubelet is terminating it. */
function terminatingInApi(apiPod: V1Pod | undefined): apiPod is V1Pod {
  return apiPod !== undefined && isBeingDeleted(apiPod) && !isTerminalPhase(apiPod);
}

/**
 * A pod the API server is deleting while the kubelet runs is the kubelet's to finish: podctl never
 * stops it over CRI (the kubelet runs its hooks and its grace). A shorter grace than the deletion's
 * is asked for as the API allows it, by a DELETE with that grace; then podctl waits (bounded) as for
 * any pod stopped through the API. The result says it was left to the kubelet.
 */
async function leaveToKubelet(api: ApiNode, pod: PodInfo, apiPod: V1Pod, input: GuardInput, reporter: Reporter, started: number): Promise<TerminatedPod> {
  const current = podOwnGracePeriod(apiPod);
  const shorter = input.gracePeriodSeconds !== undefined && input.gracePeriodSeconds < current ? Math.max(0, input.gracePeriodSeconds) : undefined;
  const grace = shorter ?? current;
  const note =
    shorter === undefined
      ? `already terminating in the API server (grace ${current}s): left to the kubelet`
      : `already terminating in the API server (grace ${current}s): left to the kubelet, grace shortened to ${shorter}s by a delete`;
  const entry: TerminatedPod = { uid: pod.uid, namespace: pod.namespace, name: pod.name, gracePeriodSeconds: grace, outcome: 'requested', handledBy: 'api', note };
  if (input.dryRun) return { ...entry, outcome: 'planned' };
  if (shorter !== undefined) {
    try {
      if ((await api.kube.deletePod({ namespace: pod.namespace, name: pod.name, uid: pod.uid }, shorter, input.signal)) !== 'accepted') return { ...entry, outcome: 'gone' };
    } catch (error) {
      reporter.warn(`${refOf(pod)}: the delete with grace ${shorter}s failed: ${(error as Error).message}; the kubelet goes on with grace ${current}s`);
      entry.gracePeriodSeconds = current;
      entry.note = `already terminating in the API server (grace ${current}s): left to the kubelet (the shorter grace could not be asked for)`;
    }
  }
  reporter.info(`${input.action}: ${refOf(pod)} ${entry.note}; waiting up to ${formatDuration(input.timeoutMs ?? killTimeoutMs(entry.gracePeriodSeconds))} for it to finish`);
  const journal = new ApiWaitJournal(input.session.stateDir, pod.uid, reporter);
  return await waitForKubelet(api, pod, entry, input.timeoutMs ?? killTimeoutMs(entry.gracePeriodSeconds), input, reporter, started, journal);
}

/** "desires a, b" / "may desire c (from the API server, and none is configured to ask)" / both: the refusal without an API server. */
function desiredPhrase(desired: PodInfo[], untold: PodInfo[]): string {
  const parts: string[] = [];
  if (desired.length > 0) parts.push(`desires ${desired.map(refOf).join(', ')}`);
  if (untold.length > 0) parts.push(`may desire ${untold.map(refOf).join(', ')} (from the API server, and no API server is configured to ask)`);
  return parts.join(' and ');
}

/** A PodDisruptionBudget holding an eviction back: which budget, its disruptions left, since when. */
export interface PdbBlock {
  uid: string;
  namespace: string;
  name: string;
  budget: string | undefined;
  disruptionsAllowed: number;
  message: string;
  /** When podctl gives up (epoch ms; Infinity: it waits as long as it takes). */
  givesUpAt: number;
}

/**
 * Delete or evict one pod through the API, then wait (bounded) until the kubelet has finished it.
 * A PodDisruptionBudget's 429 is retried every PDB_RETRY_MS (kubectl drain's 5 s) up to
 * `input.pdbBoundMs` (default the wait's bound), said once per pod (with when podctl gives up), not
 * once per retry; any other 429 is retried after its Retry-After (else a second) within the bound.
 */
export async function stopThroughApi(api: ApiNode, pod: PodInfo, grace: number, mode: 'delete' | 'evict', input: GuardInput, reporter: Reporter, started: number): Promise<TerminatedPod> {
  const entry: TerminatedPod = { uid: pod.uid, namespace: pod.namespace, name: pod.name, gracePeriodSeconds: grace, outcome: 'requested', handledBy: 'api' };
  const boundMs = input.timeoutMs ?? killTimeoutMs(grace);
  const pdbBoundMs = input.pdbBoundMs ?? boundMs;
  const ref = { namespace: pod.namespace, name: pod.name, uid: pod.uid };
  let blocked: PdbBlock | undefined;
  const board = pdbWaitBoard(reporter);
  // each PodDisruptionBudget's hold, journaled for status and the drain report (a throttling 429 is not one)
  const journal = new ApiWaitJournal(input.session.stateDir, pod.uid, reporter);
  const held = (evicted: { budget: string | undefined; disruptionsAllowed: number; message: string }): void =>
    journal.open('eviction-wait', `PodDisruptionBudget ${pod.namespace}/${evicted.budget ?? '(unnamed)'}`, `${evicted.disruptionsAllowed} disruption(s) allowed: ${evicted.message}`);
  try {
    if (mode === 'delete') {
      const outcome = await api.kube.deletePod(ref, input.gracePeriodSeconds, input.signal);
      if (outcome !== 'accepted') {
        entry.outcome = 'gone';
        return entry;
      }
    } else {
      for (;;) {
        const evicted = await api.kube.evictPod(ref, input.gracePeriodSeconds, input.signal);
        if (evicted.outcome === 'accepted') {
          journal.close('eviction-wait', 'waited');
          break;
        }
        if (evicted.outcome === 'gone') {
          journal.close('eviction-wait', 'gone');
          entry.outcome = 'gone';
          return entry;
        }
        const pdb = evicted.outcome === 'blocked-by-pdb';
        const waitMs = pdb ? PDB_RETRY_MS : (evicted.retryAfterMs ?? EVICTION_RETRY_MS);
        const bound = pdb ? pdbBoundMs : boundMs;
        if (Date.now() - started >= bound || input.signal?.aborted) {
          entry.outcome = pdb ? 'blocked-by-pdb' : 'failed';
          entry.error = evicted.message;
          if (pdb) held(evicted);
          journal.close('eviction-wait', 'refused');
          reporter.warn(
            pdb
              ? `${refOf(pod)}: eviction blocked by PodDisruptionBudget ${evicted.budget ?? '(unnamed)'} (${evicted.disruptionsAllowed} disruption(s) allowed) for ${formatDuration(Date.now() - started)}; --ignore-pdb deletes it anyway`
              : `${refOf(pod)}: eviction throttled by the API server for ${formatDuration(Date.now() - started)} (${evicted.message})`,
          );
          return entry;
        }
        if (pdb && (blocked === undefined || blocked.budget !== evicted.budget)) {
          blocked = { ...ref, budget: evicted.budget, disruptionsAllowed: evicted.disruptionsAllowed, message: evicted.message, givesUpAt: started + bound };
          held(evicted);
          input.onPdbBlock?.(blocked);
          const until = Number.isFinite(bound) ? `gives up in ${formatDuration(started + bound - Date.now())}` : 'no bound: waits until it allows the disruption (--timeout bounds it)';
          reporter.info(
            `${refOf(pod)}: eviction held by PodDisruptionBudget ${evicted.budget ?? '(unnamed)'} (${evicted.disruptionsAllowed} disruption(s) allowed); trying every ${formatDuration(PDB_RETRY_MS)}, ${until}`,
          );
        } else if (!pdb) reporter.debug(`${refOf(pod)}: eviction throttled by the API server (HTTP 429); trying again in ${formatDuration(waitMs)}`);
        // the last attempt is at the bound
        const pause = Math.max(0, Math.min(waitMs, started + bound - Date.now()));
        if (pdb) board?.hold(pod.uid, { ref: refOf(pod), budget: evicted.budget ?? '(unnamed)', nextTryAt: Date.now() + pause, givesUpAt: started + bound });
        await sleep(pause, input.signal).catch(() => {});
      }
    }
  } catch (error) {
    entry.outcome = 'failed';
    entry.error = (error as Error).message;
    journal.close('eviction-wait', 'failed');
    reporter.warn(`${refOf(pod)}: ${mode === 'evict' ? 'eviction' : 'delete'} through the API failed: ${entry.error}`);
    return entry;
  } finally {
    board?.release(pod.uid);
    await journal.flush();
  }
  reporter.info(
    `${input.action}: ${refOf(pod)} ${mode === 'evict' ? 'evicted' : 'deleted'} in the API server with grace ${grace}s; waiting up to ${formatDuration(boundMs)} for the kubelet to finish it`,
  );
  return await waitForKubelet(api, pod, entry, boundMs, input, reporter, started, journal);
}

/** What a pod left to the kubelet is called while its API object is gone but the runtime still runs its containers. */
export const KUBELET_FINISHING = 'deleted in the API, kubelet finishing';

/**
 * How many of the pod's containers the runtime still runs (0: all stopped, or the pod is gone from
 * the runtime), from a fresh listing; undefined when the runtime did not answer.
 */
export async function runningInRuntime(session: NodeSession, uid: string, signal?: AbortSignal): Promise<number | undefined> {
  try {
    const [pod] = await session.listPods({ uids: [uid], ...(signal ? { signal } : {}) });
    return pod?.containersRunning ?? 0;
  } catch {
    return undefined;
  }
}

/** The note of a pod whose API object is gone while the runtime still runs it (or cannot say). */
export function kubeletFinishingNote(running: number | undefined): string {
  return `${KUBELET_FINISHING}: ${running === undefined ? 'the runtime did not say its containers stopped' : `${running} container(s) still run in the runtime`}`;
}

/**
 * Waits (bounded) until the kubelet has finished the pod: its API object gone (polling) and then the
 * runtime saying its containers stopped. `terminated` only on the runtime's word; a pod gone from the
 * API whose containers still run at the bound is `kubelet-finishing`, never `terminated`.
 */
async function waitForKubelet(
  api: ApiNode,
  pod: PodInfo,
  entry: TerminatedPod,
  boundMs: number,
  input: GuardInput,
  reporter: Reporter,
  started: number,
  journal: ApiWaitJournal,
): Promise<TerminatedPod> {
  // the wait is journaled (status, the drain report) from here to its outcome
  journal.open('kubelet-wait', 'kubelet', `waiting up to ${formatDuration(Math.max(0, started + boundMs - Date.now()))} for the kubelet to finish the pod`);
  try {
    return await pollKubelet(api, pod, entry, boundMs, input, reporter, started);
  } finally {
    journal.close('kubelet-wait', entry.outcome === 'terminated' ? 'waited' : entry.outcome);
    await journal.flush();
  }
}

/** The polling of waitForKubelet: the API object, then the runtime, until the bound. */
async function pollKubelet(api: ApiNode, pod: PodInfo, entry: TerminatedPod, boundMs: number, input: GuardInput, reporter: Reporter, started: number): Promise<TerminatedPod> {
  let goneFromApi = false;
  let running: number | undefined;
  for (;;) {
    if (!goneFromApi) {
      let current: V1Pod | undefined;
      try {
        current = await api.kube.getPod(pod.namespace, pod.name, input.signal);
      } catch (error) {
        reporter.debug(`${refOf(pod)}: ${(error as Error).message}`);
      }
      goneFromApi = current === undefined || current.metadata?.uid !== pod.uid;
    }
    if (goneFromApi) {
      running = await runningInRuntime(input.session, pod.uid, input.signal);
      if (running === 0) {
        entry.outcome = 'terminated';
        entry.elapsedMs = Date.now() - started;
        return entry;
      }
    }
    if (Date.now() - started >= boundMs || input.signal?.aborted) {
      if (input.signal?.aborted) entry.outcome = 'interrupted';
      else entry.outcome = goneFromApi ? 'kubelet-finishing' : 'timeout';
      if (goneFromApi) {
        entry.error = kubeletFinishingNote(running);
        reporter.warn(`${refOf(pod)}: ${entry.error} after ${formatDuration(Date.now() - started)}`);
      } else reporter.warn(`${refOf(pod)} still in the API server after ${formatDuration(Date.now() - started)}; the kubelet goes on with its deletion`);
      return entry;
    }
    await sleep(Math.min(500, boundMs), input.signal).catch(() => {});
  }
}
