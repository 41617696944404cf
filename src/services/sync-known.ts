/**
 * `podctl sync-known`: the kubelet's housekeeping step (SyncKnownPods) run on demand.
 *
 * Desired pods come from the API server when one is configured, else from a file (`--desired`,
 * a PodList, a list of pods or a single pod, JSON or YAML, several YAML documents allowed) or from
 * the runtime itself (`--desired-from runtime`: whatever the runtime still runs is desired).
 * The session then forgets finished workers, drives orphans to termination, terminates runtime pods
 * no worker knew, and resumes pods whose owner died.
 *
 * Invariants: a desired-pod file is validated before anything is changed (each pod needs
 * metadata.uid, name and namespace); the result lists every known worker exactly once.
 */
import { readFile } from 'node:fs/promises';
import type { V1Pod } from '../engine/types.js';
import { RuntimeFailure, UsageError, isAbort } from '../lib/errors.js';
import { comparePods } from '../lib/refs.js';
import type { Styler, TableSpec } from '../lib/output.js';
import { silentReporter, type Reporter } from '../lib/reporter.js';
import type { NodeSession, PodInfo } from './session-api.js';
import type { ApiNode } from './api-node.js';
import type { ApiSyncReport } from './api-sync.js';

export type DesiredSource = { kind: 'api' } | { kind: 'file'; path: string } | { kind: 'runtime' };

export interface KnownWorker {
  uid: string;
  namespace: string;
  name: string;
  state: 'sync' | 'terminating' | 'terminated';
  orphan: boolean;
  hasConfig: boolean;
  static: boolean;
}

export interface PodName {
  uid: string;
  namespace: string;
  name: string;
}

export interface SyncKnownResult {
  source: DesiredSource['kind'];
  desiredPods: number;
  workers: KnownWorker[];
  orphanedRuntimePods: PodName[];
  resumed: PodName[];
  forgotten: PodName[];
  /** Desired from the API server: mirror pods, deletions honoured, final deletes (api-sync.ts). */
  api?: ApiSyncReport;
}

export interface SyncKnownOptions {
  session: NodeSession;
  source: DesiredSource;
  reporter?: Reporter;
  /** SIGINT/SIGTERM: stop waiting and reject with the signal's reason (the session keeps the state). */
  signal?: AbortSignal;
  /** The API server (source api): desired pods planned as the kubelet's config source does. */
  api?: ApiNode;
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
      throw new UsageError(`--desired ${where}: pod #${i + 1}${m?.name ? ` (${m.name})` : ''} has no metadata.${m?.uid ? 'name' : 'uid'}`, 'podctl keys pods by UID: export them with `kubectl get pods -o yaml`');
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
  return [doc as V1Pod];
}

async function desiredPods(options: SyncKnownOptions, before: PodInfo[]): Promise<V1Pod[] | undefined> {
  switch (options.source.kind) {
    case 'api':
      return undefined;
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

export async function syncKnown(options: SyncKnownOptions): Promise<SyncKnownResult> {
  const reporter = options.reporter ?? silentReporter();
  const signal = options.signal;
  const before = await options.session.listPods(signal ? { signal } : undefined);
  const apiRun = options.source.kind === 'api' && options.api ? await (await import('./api-sync.js')).startApiSync({ session: options.session, api: options.api, before, reporter, ...(signal ? { signal } : {}) }) : undefined;
  const desired = apiRun ? apiRun.desired : await desiredPods(options, before);
  reporter.info(
    options.source.kind === 'api'
      ? 'sync-known: desired pods from the API server'
      : `sync-known: ${desired?.length ?? 0} desired pod(s) from ${options.source.kind === 'file' ? options.source.path : 'the runtime'}`,
  );
  let outcome;
  try {
    outcome = await options.session.syncKnown(desired, signal ? { signal } : undefined);
  } catch (error) {
    if (error instanceof UsageError || error instanceof RuntimeFailure || isAbort(error)) throw error;
    throw new RuntimeFailure(`sync-known failed: ${(error as Error).message}`, undefined, { cause: error });
  }
  const api = apiRun ? await apiRun.finish() : undefined;
  const names = new Map<string, PodName>();
  for (const p of before) names.set(p.uid, { uid: p.uid, namespace: p.namespace, name: p.name });
  for (const p of desired ?? []) {
    const uid = p.metadata?.uid ?? '';
    if (!names.has(uid)) names.set(uid, { uid, namespace: p.metadata?.namespace ?? 'default', name: p.metadata?.name ?? '' });
  }
  const nameOf = (uid: string): PodName => names.get(uid) ?? { uid, namespace: '', name: '' };
  const workers: KnownWorker[] = [...outcome.workers.entries()]
    .map(([uid, w]) => ({ ...nameOf(uid), state: w.state, orphan: w.orphan, hasConfig: w.hasConfig, static: w.static }))
    .sort(comparePods);
  return {
    source: options.source.kind,
    desiredPods: desired?.length ?? workers.filter((w) => !w.orphan).length,
    workers,
    orphanedRuntimePods: outcome.orphanedRuntimePods.map(nameOf).sort(comparePods),
    resumed: outcome.resumed.map(nameOf).sort(comparePods),
    forgotten: outcome.forgotten.map(nameOf).sort(comparePods),
    ...(api ? { api } : {}),
  };
}

/** The known-workers map as a table. */
export function syncKnownTable(result: SyncKnownResult, styler: Styler): TableSpec {
  const yes = (b: boolean): string => (b ? 'yes' : 'no');
  return {
    head: ['NAMESPACE/NAME', 'UID', 'STATE', 'ORPHAN', 'HAS CONFIG', 'STATIC'],
    rows: result.workers.map((w) => [
      w.namespace ? `${w.namespace}/${w.name}` : '(unknown)',
      w.uid.slice(0, 8),
      w.state === 'sync' ? styler.green('running') : w.state === 'terminating' ? styler.yellow(w.state) : styler.cyan(w.state),
      w.orphan ? styler.yellow('yes') : 'no',
      yes(w.hasConfig),
      yes(w.static),
    ]),
  };
}

export function syncKnownSummary(result: SyncKnownResult): string {
  const names = (list: PodName[]): string => (list.length === 0 ? '' : `: ${list.map((p) => (p.namespace ? `${p.namespace}/${p.name}` : p.uid)).join(', ')}`);
  return [
    `sync-known (desired from ${result.source}): ${result.workers.length} known worker(s), ${result.workers.filter((w) => w.orphan).length} orphan(s)`,
    `  orphaned runtime pods terminated: ${result.orphanedRuntimePods.length}${names(result.orphanedRuntimePods)}`,
    `  resumed from a dead owner: ${result.resumed.length}${names(result.resumed)}`,
    `  finished workers forgotten: ${result.forgotten.length}${names(result.forgotten)}`,
    ...(result.api ? apiSummaryLines(result.api, names) : []),
  ].join('\n');
}

function apiSummaryLines(api: ApiSyncReport, names: (list: PodName[]) => string): string[] {
  return [
    `  deleted in the API server, terminated with its grace: ${api.deleting.length}${names(api.deleting)}`,
    `  final deletes (left Terminating): ${api.finallyDeleted.length}${names(api.finallyDeleted)}`,
    ...(api.stillRunning.length > 0 ? [`  deleted in the API server, still running here: ${api.stillRunning.length}${names(api.stillRunning)}`] : []),
    ...(api.mirrors.length > 0 ? [`  mirror pods (their static pods kept): ${api.mirrors.length}`] : []),
    ...(api.pendingRecorded + api.pendingLeft > 0 ? [`  API writes pending for a later run: ${api.pendingRecorded + api.pendingLeft}`] : []),
  ];
}
