/**
 * The working-pods breakdown: how many pod workers are in each lifecycle phase, whether their pod is
 * desired, orphaned or known only from the runtime, and whether it is static. This is the breakdown
 * of the kubelet's `kubelet_working_pods` gauge; the metrics registry exports it and the watch header
 * shows it, so both read the same classification from here.
 *
 * Invariants:
 * - Only pods with a worker (in any podctl process) count as working pods; a pod seen in the runtime
 *   that no worker has ever tracked is "untracked", reported beside the breakdown, never inside it.
 * - A finished worker counts as `terminated` (finished is a flag on top of terminated, not a phase).
 * - `hasConfig` follows the kubelet: the worker's active update, else its pending update, carries a
 *   pod spec. A worker driven from a runtime pod alone (no spec) is `runtime_only`.
 * - `orphan` is a worker whose pod left the desired set: the engine marks such workers deleted.
 *
 * Pure functions; no prom-client import (the TUI uses this module without loading the registry).
 */
import type { PodWorkerState, PodWorkerSync } from '../engine/types.js';
import type { PodInfo } from '../domain/session-api.js';

type WorkingPodConfig = 'desired' | 'orphan' | 'runtime_only';

const LIFECYCLES: readonly PodWorkerState[] = ['sync', 'terminating', 'terminated'];
const CONFIGS: readonly WorkingPodConfig[] = ['desired', 'orphan', 'runtime_only'];

/** The config label of one worker, in the kubelet's order of precedence. */
function configOf(sync: Pick<PodWorkerSync, 'orphan' | 'hasConfig'>): WorkingPodConfig {
  if (!sync.hasConfig) return 'runtime_only';
  if (sync.orphan) return 'orphan';
  return 'desired';
}

/**
 * The worker-sync record of a pod as listed by the session, or undefined for a pod no worker tracks.
 * Mirrors what `syncKnownPods` returns for that worker.
 */
export function workerSyncOf(info: PodInfo): PodWorkerSync | undefined {
  if (info.state === 'runtime') return undefined;
  const state: PodWorkerState = info.state === 'finished' ? 'terminated' : info.state;
  const worker = info.worker;
  const update = worker?.activeUpdate ?? worker?.pendingUpdate;
  let hasConfig: boolean;
  if (update !== undefined) hasConfig = update.pod !== undefined;
  else hasConfig = info.pod !== undefined;
  return {
    state,
    orphan: worker?.deleted === true,
    hasConfig,
    static: hasConfig && info.static,
  };
}

export interface WorkingPodCounts {
  byLifecycle: Record<PodWorkerState, number>;
  byConfig: Record<WorkingPodConfig, number>;
  static: number;
  /** Pods with a worker. */
  working: number;
  /** Runtime pods no worker tracks. */
  untracked: number;
  /** Every pod listed. */
  total: number;
}

function emptyCounts(): WorkingPodCounts {
  return {
    byLifecycle: { sync: 0, terminating: 0, terminated: 0 },
    byConfig: { desired: 0, orphan: 0, runtime_only: 0 },
    static: 0,
    working: 0,
    untracked: 0,
    total: 0,
  };
}

/** Adds one worker-sync record to the counts. */
function addWorker(counts: WorkingPodCounts, sync: PodWorkerSync): void {
  counts.byLifecycle[sync.state] += 1;
  counts.byConfig[configOf(sync)] += 1;
  if (sync.static) counts.static += 1;
  counts.working += 1;
}

/** The header's breakdown of a pod listing. */
export function countWorkingPods(pods: readonly PodInfo[]): WorkingPodCounts {
  const counts = emptyCounts();
  for (const info of pods) {
    counts.total += 1;
    const sync = workerSyncOf(info);
    if (sync === undefined) counts.untracked += 1;
    else addWorker(counts, sync);
  }
  return counts;
}

/** One series of the working-pods gauge. */
export interface WorkingPodSeries {
  lifecycle: PodWorkerState;
  config: WorkingPodConfig;
  /** `unknown` for runtime_only workers: without a spec nobody can tell (the kubelet's labels). */
  static: 'true' | 'false' | 'unknown';
  value: number;
}

/** The static label of a worker: a worker without a spec cannot say. */
function staticLabelOf(sync: Pick<PodWorkerSync, 'static' | 'hasConfig' | 'orphan'>): WorkingPodSeries['static'] {
  return configOf(sync) === 'runtime_only' ? 'unknown' : (String(sync.static) as 'true' | 'false');
}

/**
 * Every combination of labels with its count (3 lifecycles × (desired and orphan × static true/false,
 * runtime_only × unknown) = 15 series, as the kubelet's): combinations with no pod are reported as 0,
 * so a series that drops to zero is visible rather than stale.
 */
export function workingPodSeries(workers: Iterable<PodWorkerSync>): WorkingPodSeries[] {
  const key = (l: string, c: string, s: string) => `${l}|${c}|${s}`;
  const counts = new Map<string, number>();
  for (const sync of workers) {
    const k = key(sync.state, configOf(sync), staticLabelOf(sync));
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const series: WorkingPodSeries[] = [];
  for (const lifecycle of LIFECYCLES) {
    for (const config of CONFIGS) {
      for (const isStatic of config === 'runtime_only' ? (['unknown'] as const) : (['false', 'true'] as const)) {
        series.push({ lifecycle, config, static: isStatic, value: counts.get(key(lifecycle, config, isStatic)) ?? 0 });
      }
    }
  }
  return series;
}
