/**
 * `podctl sync-known`: the kubelet's housekeeping step (SyncKnownPods) run on demand.
 *
 * Desired pods come from the API server when one is configured, else from a file (`--desired`,
 * a PodList, a list of pods or a single pod, JSON or YAML, several YAML documents allowed) or from
 * the runtime itself (`--desired-from runtime`: whatever the runtime still runs is desired).
 * The session then forgets finished workers, drives orphans to termination, terminates runtime pods
 * no worker knew, and resumes pods whose owner died.
 *
 * Invariants (the safety rules, docs/operator-guide.md#safety-rules):
 * - A desired-pod file is validated before anything is changed (each pod needs metadata.uid, name
 *   and namespace); the result lists every known worker exactly once.
 * - A static pod is never terminated because a list omits it: its desired state comes from the
 *   node's manifest directory, never from an API-server list (which holds only its mirror pod) nor
 *   from a file. Static pods on the node are added to the desired set unless `includeStatic`.
 * - An empty desired list while the node runs pods would terminate every one of them: refused
 *   (UsageError naming --yes) unless `yes`.
 * - `dryRun` changes nothing: it predicts, from one listing, what the real run would do and
 *   returns it in the real result's shape (`dryRun: true`).
 */
import { readFile } from 'node:fs/promises';
import type { V1Pod } from '../../engine/types.js';
import { isStaticPod, CONFIG_SOURCE_ANNOTATION } from '../../engine/index.js';
import { RuntimeFailure, UsageError, isAbort } from '../../lib/errors.js';
import { comparePods } from '../../lib/refs.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import type { ApiNode } from '../api/api-node.js';
import type { ApiSyncPlan, ApiSyncReport, ApiSyncRun } from './api-sync.js';
import type { KubeletState } from '../../kube/kubelet.js';
import { decideOrphans, type OrphanDecision, type WaitingOrphan } from '../api/orphan-wait.js';
import { BoundExceeded, boundSignal } from '../../lib/abortable.js';
import { formatDuration } from '../../lib/duration.js';

/** What the session's own step returns (domain/session-api.ts). */
type SessionSyncOutcome = Awaited<ReturnType<NodeSession['syncKnown']>>;

export type DesiredSource = { kind: 'api' } | { kind: 'file'; path: string } | { kind: 'runtime' };

interface KnownWorker {
  uid: string;
  namespace: string;
  name: string;
  state: 'sync' | 'terminating' | 'terminated';
  orphan: boolean;
  hasConfig: boolean;
  static: boolean;
  /** Why a worker still on its way out is not finished (after a waiting sync). */
  error?: string;
}

export interface PodName {
  uid: string;
  namespace: string;
  name: string;
}

export interface SyncKnownResult {
  /** True when nothing was done: the lists say what the real run would do. */
  dryRun: boolean;
  source: DesiredSource['kind'];
  /** Static pods kept as desired (not in the source's list) because static pods are never orphans. */
  keptStatic: PodName[];
  desiredPods: number;
  /** How many of the desired pods are static (podctl_desired_pods{static="true"}). */
  desiredStatic: number;
  workers: KnownWorker[];
  orphanedRuntimePods: PodName[];
  resumed: PodName[];
  forgotten: PodName[];
  /** Desired from the API server: mirror pods, deletions honoured, final deletes (api-sync.ts). */
  api?: ApiSyncReport;
  /** Whether a kubelet runs beside podctl (kube/kubelet.ts), when it was checked. */
  kubelet?: { state: KubeletState; detail: string };
  /** Candidate orphans kept beside a running kubelet (orphan-wait.ts): not terminated this time. */
  waitingForKubelet: WaitingOrphan[];
  /** Pods this sync drove that are still terminating when it returns, each with why (empty for a dry run or without waiting). */
  unfinished: (PodName & { error: string })[];
  /** Pods never made targets: the caller's own (`self`). */
  skipped: (PodName & { reason: 'self' })[];
}

export interface SyncKnownOptions {
  session: NodeSession;
  source: DesiredSource;
  reporter?: Reporter;
  /** SIGINT/SIGTERM: stop waiting and reject with the signal's reason (the session keeps the state). */
  signal?: AbortSignal;
  /** Let static pods be orphans too (default false: they are always desired). */
  includeStatic?: boolean;
  /** Accept an empty desired list although the node runs pods. */
  yes?: boolean;
  /** Predict, change nothing. */
  dryRun?: boolean;
  /** The kubelet's state: while it runs, orphans wait for a fresh GET and the kubelet's cleanup time (orphan-wait.ts). */
  kubelet?: { state: KubeletState; detail: string };
  /** Beside a running kubelet: terminate unconfirmed orphans anyway. */
  force?: boolean;
  /** The kubelet's root directory (pod volumes, for the final delete's mount check). */
  kubeletRoot?: string;
  /** The caller's own pod (the agent's): never a target, whatever the lists say (`skipped: self`). */
  isSelf?: (pod: PodInfo) => boolean;
  /** Wait (bounded) for the pods this step drives to be terminated (default true; the agent: false). */
  wait?: boolean;
  /**
   * Accept a runtime listing this old (ms) for the pods on the node before the step (default 0: a
   * fresh one). The agent passes its interval: the session's own step relists anyway.
   */
  listingMaxAgeMs?: number;
  /** Receives the pods on the node as listed before the step (the agent's gauges and stuck pods). */
  onListing?: (pods: PodInfo[]) => void;
  /** The API server (source api): desired pods planned as the kubelet's config source does. */
  api?: ApiNode;
  /**
   * Source api without a list: this node's pods as the agent's watches last saw them. With `stale`
   * (why they may be old: the API server does not answer) no pod is terminated as an orphan (each
   * needs a fresh confirmation) and no final delete is sent; takeovers and deletions go on.
   */
  apiView?: { pods: V1Pod[]; stale?: string };
}

/** Parses a desired-pod document; `where` names the file in errors. */
export async function parseDesiredPods(text: string, where: string): Promise<V1Pod[]> {
  const trimmed = text.trim();
  if (trimmed === '') throw new UsageError(`--desired ${where}: the file is empty`, 'give a PodList, a list of pods or a pod, as JSON or YAML');
  let documents: unknown[];
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      documents = [JSON.parse(trimmed)];
    } catch (error) {
      throw new UsageError(`--desired ${where}: invalid JSON: ${(error as Error).message}`);
    }
  } else {
    const { parseAllDocuments } = await import('yaml');
    const parsed = parseAllDocuments(trimmed);
    const docs = Array.isArray(parsed) ? parsed : [parsed];
    const broken = docs.find((d) => d.errors.length > 0);
    if (broken) throw new UsageError(`--desired ${where}: invalid YAML: ${broken.errors[0]?.message.split('\n')[0]}`);
    documents = docs.map((d) => d.toJS() as unknown).filter((d) => d !== null && d !== undefined);
  }
  const pods: V1Pod[] = [];
  for (const doc of documents) pods.push(...podsOf(doc, where));
  pods.forEach((pod, i) => {
    const m = pod.metadata;
    if (!m?.uid || !m.name) {
      throw new UsageError(
        `--desired ${where}: pod #${i + 1}${m?.name ? ` (${m.name})` : ''} has no metadata.${m?.uid ? 'name' : 'uid'}`,
        'podctl keys pods by UID: export them with `kubectl get pods -o yaml`',
      );
    }
  });
  return pods.map((pod) => ({ ...pod, metadata: { ...pod.metadata, namespace: pod.metadata?.namespace ?? 'default' } }));
}

function podsOf(doc: unknown, where: string): V1Pod[] {
  if (Array.isArray(doc)) return doc.flatMap((d) => podsOf(d, where));
  if (typeof doc !== 'object' || doc === null) throw new UsageError(`--desired ${where}: expected a pod or a list of pods`);
  const object = doc as { kind?: string; items?: unknown };
  if (Array.isArray(object.items)) return object.items.flatMap((d) => podsOf(d, where));
  if (object.kind !== undefined && object.kind !== 'Pod') {
    throw new UsageError(`--desired ${where}: found kind ${object.kind}, expected Pod or PodList`);
  }
  return [doc];
}

async function desiredPods(options: SyncKnownOptions, before: PodInfo[]): Promise<V1Pod[]> {
  switch (options.source.kind) {
    case 'api':
      return options.session.apiDesiredPods();
    case 'file': {
      let text: string;
      try {
        text = await readFile(options.source.path, 'utf8');
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        throw new UsageError(`--desired ${options.source.path}: cannot read (${code ?? (error as Error).message})`, 'check the path');
      }
      return parseDesiredPods(text, options.source.path);
    }
    case 'runtime':
      return before.filter((p) => p.runtime !== undefined && p.pod !== undefined && p.state !== 'finished').map((p) => p.pod as V1Pod);
  }
}

function sourceName(source: DesiredSource): string {
  return source.kind === 'file' ? source.path : source.kind === 'api' ? 'the API server' : 'the runtime';
}

/** A pod is on the node (and would be terminated if not desired) unless its termination is over. */
function isOnNode(pod: PodInfo): boolean {
  return pod.state !== 'finished' && !(pod.state === 'terminated' && pod.containersRunning === 0 && pod.worker?.finished === true);
}

function isStaticInfo(pod: PodInfo): boolean {
  return pod.static || (pod.pod !== undefined && isStaticPod(pod.pod));
}

/** The session's test for an orphaned runtime pod worth terminating: a running container or a ready sandbox. */
function runsSomething(pod: PodInfo): boolean {
  return pod.containersRunning > 0 || (pod.runtime?.sandboxStatuses.some((s) => s.state === 'ready') ?? false);
}

/** The desired pod standing for a pod kept for the kubelet (its own spec when known). */
function keptDesired(pod: PodInfo): V1Pod {
  return pod.pod ?? { metadata: { uid: pod.uid, name: pod.name, namespace: pod.namespace } };
}

/** The desired pod standing for a static pod found on the node (its own spec when known). */
function staticDesired(pod: PodInfo): V1Pod {
  if (pod.pod) return pod.pod;
  return { metadata: { uid: pod.uid, name: pod.name, namespace: pod.namespace, annotations: { [CONFIG_SOURCE_ANNOTATION]: 'file' } } };
}

/** The desired pods a source lists; with an API server, its plan too (read only: its kills start later). */
interface Listing {
  listed: V1Pod[];
  apiSync?: typeof import('./api-sync.js');
  apiPlan?: ApiSyncPlan;
  /** Why the API view may be old: no pod is then terminated as an orphan. */
  stale?: string;
}

/** Lists the desired pods from the source (the API server's are planned, nothing is killed yet). */
async function listDesired(options: SyncKnownOptions, before: PodInfo[]): Promise<Listing> {
  const signal = options.signal;
  const apiSync = options.source.kind === 'api' && options.api ? await import('./api-sync.js') : undefined;
  const apiPlan =
    apiSync && options.api ? await apiSync.planApiSync({ api: options.api, before, ...(signal ? { signal } : {}), ...(options.apiView ? { apiPods: options.apiView.pods } : {}) }) : undefined;
  if (!apiSync || !apiPlan) return { listed: await desiredPods(options, before) };
  const stale = options.apiView?.stale;
  return { listed: apiPlan.plan.desired, apiSync, apiPlan, ...(stale !== undefined ? { stale } : {}) };
}

/** Refuses (UsageError naming --yes) an empty desired list while the node runs pods, unless `yes`. */
function refuseEmptyList(options: SyncKnownOptions, listing: Listing, onNode: PodInfo[]): void {
  const listedNothing = listing.apiPlan ? listing.apiPlan.apiPods.length === 0 : listing.listed.length === 0;
  if (!listedNothing || onNode.length === 0 || options.yes) return;
  throw new UsageError(
    `the desired pod list from ${sourceName(options.source)} is empty, but this node runs ${onNode.length} pod(s): sync-known would terminate them${options.includeStatic ? '' : ' (all but static pods)'}`,
    'pass --yes if that is really meant',
  );
}

/** The desired set handed to the session: the listed pods plus those kept (static, the caller's own, orphans waiting). */
interface DesiredSet {
  desired: V1Pod[];
  keptStatic: PodInfo[];
  self: PodInfo[];
  orphans: OrphanDecision;
}

/**
 * Adds to the listed pods the ones never terminated for a list's silence: static pods (unless
 * `includeStatic`), the caller's own, and candidate orphans kept (a stale API view, or beside a
 * running kubelet until confirmed gone: orphan-wait.ts).
 */
async function completeDesired(options: SyncKnownOptions, before: PodInfo[], listing: Listing, reporter: Reporter): Promise<DesiredSet> {
  const { listed, stale } = listing;
  const listedUids = new Set(listed.map((p) => p.metadata?.uid));
  // Static pods are desired by the node's manifests, whatever the list says.
  const keptStatic = options.includeStatic ? [] : before.filter(isOnNode).filter((p) => isStaticInfo(p) && !listedUids.has(p.uid));
  const self = options.isSelf ? before.filter((p) => !listedUids.has(p.uid) && options.isSelf!(p)) : [];
  const nameless = new Set([...listedUids, ...keptStatic.map((p) => p.uid), ...self.map((p) => p.uid)]);
  const candidates = before.filter((p) => !nameless.has(p.uid) && !isStaticInfo(p) && p.owner?.alive !== true && (p.state === 'runtime' ? runsSomething(p) : p.state === 'sync'));
  const orphans: OrphanDecision = stale
    ? { kept: candidates.map((p) => ({ uid: p.uid, namespace: p.namespace, name: p.name, reason: `not terminated as an orphan: ${stale}`, waitSeconds: null })), released: [] }
    : options.kubelet
      ? await decideOrphans({
          candidates,
          kubelet: options.kubelet.state,
          api: options.api,
          stateDir: options.session.stateDir,
          force: options.force === true,
          persist: !options.dryRun,
          ...(options.signal ? { signal: options.signal } : {}),
        })
      : { kept: [], released: [] };
  const waiting = new Set(orphans.kept.map((o) => o.uid));
  for (const o of orphans.kept) reporter.info(`sync-known: ${o.namespace}/${o.name} kept: ${o.reason}`);
  const desired = [...listed, ...keptStatic.map(staticDesired), ...before.filter((p) => waiting.has(p.uid)).map(keptDesired), ...self.map(keptDesired)];
  return { desired, keptStatic, self, orphans };
}

/** The name of each uid the step may report: from the listing, else from the desired pods. */
function namesOf(before: PodInfo[], desired: V1Pod[]): (uid: string) => PodName {
  const names = new Map<string, PodName>();
  for (const p of before) names.set(p.uid, { uid: p.uid, namespace: p.namespace, name: p.name });
  for (const p of desired) {
    const uid = p.metadata?.uid ?? '';
    if (!names.has(uid)) names.set(uid, { uid, namespace: p.metadata?.namespace ?? 'default', name: p.metadata?.name ?? '' });
  }
  return (uid) => names.get(uid) ?? { uid, namespace: '', name: '' };
}

/** The session's housekeeping step; a failure other than bad input or an abort becomes a RuntimeFailure. */
async function runSessionSync(options: SyncKnownOptions, desired: V1Pod[]): Promise<SessionSyncOutcome> {
  try {
    return await options.session.syncKnown(desired, { ...(options.signal ? { signal: options.signal } : {}), ...(options.wait === false ? { wait: false } : {}) });
  } catch (error) {
    if (error instanceof UsageError || error instanceof RuntimeFailure || isAbort(error)) throw error;
    throw new RuntimeFailure(`sync-known failed: ${(error as Error).message}`, undefined, { cause: error });
  }
}

/**
 * Every pod the step drove that is still on its way out, with why (the runtime's last error, or
 * what holds it), from one fresh bounded listing; each such worker gets that `error` too. A worker
 * that finished meanwhile is reported as it is now; one the listing could not show still says why
 * it is not known to be finished.
 */
async function explainUnfinished(session: NodeSession, workers: KnownWorker[], outcome: SessionSyncOutcome, nameOf: (uid: string) => PodName): Promise<(PodName & { error: string })[]> {
  const driven = new Set([...workers.filter((w) => w.state === 'terminating').map((w) => w.uid), ...outcome.orphanedRuntimePods, ...outcome.resumed]);
  if (driven.size === 0) return [];
  const { unfinishedReason } = await import('../diagnose/unfinished.js');
  let listingError: string | undefined;
  const pods = await session.listPods({ runtimeMaxAgeMs: 1_000, signal: boundSignal(5_000) }).catch((error: unknown) => {
    listingError = error instanceof BoundExceeded ? `the runtime did not answer within ${formatDuration(error.boundMs)}` : error instanceof Error ? error.message : String(error);
    return [] as PodInfo[];
  });
  const now = Date.now();
  const listedNow = new Map(pods.map((p) => [p.uid, p]));
  const unfinished: (PodName & { error: string })[] = [];
  for (const pod of pods) {
    if (!driven.has(pod.uid) || pod.state !== 'terminating') continue;
    const error = unfinishedReason(pod, now);
    unfinished.push({ ...nameOf(pod.uid), error });
    const w = workers.find((x) => x.uid === pod.uid);
    if (w) w.error = error;
  }
  for (const w of workers) {
    if (w.state !== 'terminating' || w.error !== undefined) continue;
    const current = listedNow.get(w.uid);
    if (listingError !== undefined) w.error = `not known to be finished: the pods could not be listed (${listingError})`;
    else if (!current || current.state === 'terminated' || current.state === 'finished') w.state = 'terminated';
    else w.error = `not finishing: the pod is now in state ${current.state}`;
  }
  return unfinished.sort(comparePods);
}

/** Starts the API server's part of the step (mirror pods, deletions, final deletes) from its plan. */
function startApiPart(options: SyncKnownOptions, before: PodInfo[], listing: Listing, reporter: Reporter): Promise<ApiSyncRun> | undefined {
  const { apiSync, apiPlan, stale } = listing;
  if (!apiSync || !apiPlan || !options.api) return undefined;
  return apiSync.startApiSync(
    {
      session: options.session,
      api: options.api,
      before,
      reporter,
      leaveToKubelet: options.kubelet !== undefined && options.kubelet.state !== 'down',
      ...(stale ? { stale: true } : {}),
      ...(options.kubeletRoot ? { kubeletRoot: options.kubeletRoot } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    },
    apiPlan,
  );
}

export async function syncKnown(options: SyncKnownOptions): Promise<SyncKnownResult> {
  const reporter = options.reporter ?? silentReporter();
  const signal = options.signal;
  const before = await options.session.listPods({ ...(signal ? { signal } : {}), ...(options.listingMaxAgeMs ? { runtimeMaxAgeMs: options.listingMaxAgeMs } : {}) });
  options.onListing?.(before);
  // With an API server: list and plan first (read only); the kills it asks for start after the checks.
  const listing = await listDesired(options, before);
  refuseEmptyList(options, listing, before.filter(isOnNode));
  const { desired, keptStatic, self, orphans } = await completeDesired(options, before, listing, reporter);
  reporter.info(
    `sync-known: ${listing.listed.length} desired pod(s) from ${sourceName(options.source)}` +
      (keptStatic.length > 0 ? `, ${keptStatic.length} static pod(s) kept (--include-static to let them go)` : ''),
  );
  const nameOf = namesOf(before, desired);
  const common = {
    source: options.source.kind,
    desiredPods: desired.length,
    desiredStatic: desired.filter((p) => isStaticPod(p)).length,
    keptStatic: keptStatic.map((p) => nameOf(p.uid)).sort(comparePods),
    waitingForKubelet: orphans.kept,
    skipped: self.map((p) => ({ ...nameOf(p.uid), reason: 'self' as const })),
    ...(options.kubelet ? { kubelet: options.kubelet } : {}),
  };

  if (options.dryRun) return { dryRun: true, unfinished: [], ...common, ...predictSync(before, new Set(desired.map((p) => p.metadata?.uid ?? '')), nameOf) };

  const apiRun = await startApiPart(options, before, listing, reporter);
  const outcome = await runSessionSync(options, desired);
  const api = apiRun ? await apiRun.finish() : undefined;
  const workers: KnownWorker[] = [...outcome.workers.entries()].map(([uid, w]) => ({ ...nameOf(uid), state: w.state, orphan: w.orphan, hasConfig: w.hasConfig, static: w.static })).sort(comparePods);
  const unfinished = options.wait !== false ? await explainUnfinished(options.session, workers, outcome, nameOf) : [];
  return {
    dryRun: false,
    unfinished,
    ...common,
    workers,
    orphanedRuntimePods: outcome.orphanedRuntimePods.map(nameOf).sort(comparePods),
    resumed: outcome.resumed.map(nameOf).sort(comparePods),
    forgotten: outcome.forgotten.map(nameOf).sort(comparePods),
    ...(api ? { api } : {}),
  };
}

/**
 * What a sync would do, from one listing: workers whose pod is not desired become orphans and are
 * driven to termination (finished ones are forgotten), runtime pods no worker knows are terminated,
 * and pods whose owner died are resumed. Pods a live podctl process drives are that process's.
 */
function predictSync(pods: PodInfo[], desiredUids: Set<string>, nameOf: (uid: string) => PodName): Pick<SyncKnownResult, 'workers' | 'orphanedRuntimePods' | 'resumed' | 'forgotten'> {
  const workers: KnownWorker[] = [];
  const orphanedRuntimePods: PodName[] = [];
  const resumed: PodName[] = [];
  const forgotten: PodName[] = [];
  for (const pod of pods) {
    const desired = desiredUids.has(pod.uid);
    const ownedElsewhere = pod.owner?.alive === true;
    if (pod.state === 'runtime') {
      if (!desired && !ownedElsewhere && runsSomething(pod)) orphanedRuntimePods.push(nameOf(pod.uid));
      continue;
    }
    if (ownedElsewhere) continue;
    const finished = pod.state === 'finished' || pod.worker?.finished === true;
    if (finished) {
      if (!desired) forgotten.push(nameOf(pod.uid));
      continue;
    }
    if (pod.owner !== undefined || pod.state !== 'sync') resumed.push(nameOf(pod.uid));
    const state = desired ? (pod.state as KnownWorker['state']) : pod.state === 'sync' ? 'terminating' : (pod.state as KnownWorker['state']);
    workers.push({ ...nameOf(pod.uid), state, orphan: !desired, hasConfig: pod.pod !== undefined, static: isStaticInfo(pod) });
  }
  return {
    workers: workers.sort(comparePods),
    orphanedRuntimePods: orphanedRuntimePods.sort(comparePods),
    resumed: resumed.sort(comparePods),
    forgotten: forgotten.sort(comparePods),
  };
}
