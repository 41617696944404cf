/**
 * podctl's Prometheus metrics: a prom-client registry built per run (never the global default
 * registry), fed by engine events and by transitions podctl observed from other processes.
 *
 * Series:
 * - podctl_working_pods{lifecycle, config, static}  gauge: the kubelet_working_pods breakdown; every
 *   label combination is always present (0 when empty).
 * - podctl_untracked_runtime_pods                    gauge: runtime pods no worker tracks.
 * - podctl_pod_transitions_total{from, to}           counter: worker lifecycle transitions.
 * - podctl_sync_errors_total{phase}                   counter: failed syncer calls (retried with backoff).
 * - podctl_orphaned_runtime_pods_total                counter: runtime pods no worker knew, each counted once.
 * - podctl_kill_duration_seconds                      histogram: termination requested → terminated.
 * - podctl_stuck_pods{reason}                         gauge: pods on their way out not finishing, by what holds them.
 *
 * Invariants:
 * - A transition is counted once: engine events count this process's transitions; `observeTransition`
 *   is for transitions another process made (seen through the store) and must not repeat them.
 * - A kill duration is observed once per termination, on the terminated transition, only when its
 *   start is known.
 * - Listeners never throw: a malformed event is ignored rather than breaking the engine's emitter.
 */
import { writeFile, rename, mkdir } from 'node:fs/promises';
import { dirname, join, basename } from 'node:path';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PodWorkerEvent, PodWorkerSync } from '../engine/types.js';
import type { SessionEvent, SyncKnownResult } from '../services/session-api.js';
import { workingPodSeries } from './working-pods.js';

/** Seconds; from a prompt pod exit to a pod that used a long grace period. */
export const KILL_DURATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600];

/** A lifecycle transition podctl saw happen in another process (from checkpoint snapshots). */
export interface ObservedTransition {
  uid: string;
  from: string;
  to: string;
  at: number;
  /** When the pod entered `from` (epoch ms), if known: gives the kill duration of terminating → terminated. */
  fromSince?: number;
}

export class PodctlMetrics {
  readonly registry: Registry;
  #workingPods: Gauge<'lifecycle' | 'config' | 'static'>;
  #untracked: Gauge;
  #stuckPods: Gauge<'reason'>;
  #transitions: Counter<'from' | 'to'>;
  #syncErrors: Counter<'phase'>;
  #orphanedRuntimePods: Counter;
  #killDuration: Histogram;
  /** Termination start per pod UID, from termination-requested events of this process. */
  #terminationStartedAt = new Map<string, number>();
  /** Runtime pods already counted as orphaned. */
  #orphansCounted = new Set<string>();

  constructor() {
    this.registry = new Registry();
    const registers = [this.registry];
    this.#workingPods = new Gauge({
      name: 'podctl_working_pods',
      help: 'Pod workers by lifecycle phase (sync, terminating, terminated), by whether the pod is desired, orphaned or known only from the runtime, and by whether it is static.',
      labelNames: ['lifecycle', 'config', 'static'],
      registers,
    });
    this.#stuckPods = new Gauge({
      name: 'podctl_stuck_pods',
      help: 'Pods on their way out that are not finishing, by what holds them (services/blocked-by.ts: grace, cni-teardown, uninterruptible-io, stale-shim, runtime-deadline, volume-busy, finalizer, kubelet-owns, undriven, runtime-error).',
      labelNames: ['reason'],
      registers: [this.registry],
    });
    this.#untracked = new Gauge({
      name: 'podctl_untracked_runtime_pods',
      help: 'Pods present in the container runtime that no pod worker tracks.',
      registers,
    });
    this.#transitions = new Counter({
      name: 'podctl_pod_transitions_total',
      help: 'Pod worker lifecycle transitions.',
      labelNames: ['from', 'to'],
      registers,
    });
    this.#syncErrors = new Counter({
      name: 'podctl_sync_errors_total',
      help: 'Syncer calls that failed and were retried with backoff, by phase.',
      labelNames: ['phase'],
      registers,
    });
    this.#orphanedRuntimePods = new Counter({
      name: 'podctl_orphaned_runtime_pods_total',
      help: 'Pods found in the runtime that no pod worker knew about.',
      registers,
    });
    this.#killDuration = new Histogram({
      name: 'podctl_kill_duration_seconds',
      help: 'Time from a termination request to the pod being terminated (no containers running).',
      buckets: KILL_DURATION_BUCKETS,
      registers,
    });
    this.setWorkingPods([]);
  }

  /** Replaces the working-pods breakdown (e.g. with the known-workers map of a sync). */
  setWorkingPods(workers: Iterable<PodWorkerSync>, untracked = 0): void {
    for (const s of workingPodSeries(workers)) {
      this.#workingPods.set({ lifecycle: s.lifecycle, config: s.config, static: s.static }, s.value);
    }
    this.#untracked.set(untracked);
  }

  /** Sets the stuck pods by reason; every reason in `reasons` is set (0 when absent), so each series exists. */
  setStuckPods(reasons: readonly string[], counts: ReadonlyMap<string, number>): void {
    for (const reason of reasons) this.#stuckPods.set({ reason }, counts.get(reason) ?? 0);
  }

  /** Counts runtime pods no worker knew; a UID is counted once per run. */
  observeOrphanedRuntimePods(uids: Iterable<string>): void {
    for (const uid of uids) {
      if (this.#orphansCounted.has(uid)) continue;
      this.#orphansCounted.add(uid);
      this.#orphanedRuntimePods.inc();
    }
  }

  /** Records the outcome of a SyncKnownPods step: the known-workers breakdown and orphaned runtime pods. */
  observeSyncKnown(result: Pick<SyncKnownResult, 'workers' | 'orphanedRuntimePods'>): void {
    this.setWorkingPods(result.workers.values());
    this.observeOrphanedRuntimePods(result.orphanedRuntimePods);
  }

  /** Feeds one event of this process's engine. */
  observeEngineEvent(event: PodWorkerEvent): void {
    switch (event.type) {
      case 'termination-requested':
        if (!this.#terminationStartedAt.has(event.uid)) this.#terminationStartedAt.set(event.uid, event.at);
        return;
      case 'state-changed':
        this.#transitions.inc({ from: event.from, to: event.to });
        if (event.to === 'terminated') this.#observeKillEnd(event.uid, event.at);
        return;
      case 'sync-failed':
        // A sync cancelled for a new intent (kill, shorter grace) is not an error.
        if (event.aborted !== true) this.#syncErrors.inc({ phase: event.phase });
        return;
      case 'forgotten':
        this.#terminationStartedAt.delete(event.uid);
        return;
      default:
        return;
    }
  }

  /** Feeds one session event: engine events are counted; the others carry no metric by themselves. */
  observeSessionEvent(event: SessionEvent): void {
    if (event.source === 'engine') this.observeEngineEvent(event.event);
  }

  /** Counts a transition another process made. */
  observeTransition(t: ObservedTransition): void {
    this.#transitions.inc({ from: t.from, to: t.to });
    if (t.to === 'terminated' && t.from === 'terminating' && t.fromSince !== undefined && t.at >= t.fromSince) {
      this.#killDuration.observe((t.at - t.fromSince) / 1000);
    }
  }

  /** Counts a sync error another process reported (seen as a new last error in its checkpoint). */
  observeRemoteSyncError(phase = 'unknown'): void {
    this.#syncErrors.inc({ phase });
  }

  /** The Prometheus text exposition of every series. */
  exposition(): Promise<string> {
    return this.registry.metrics();
  }

  #observeKillEnd(uid: string, at: number): void {
    const startedAt = this.#terminationStartedAt.get(uid);
    if (startedAt === undefined) return;
    this.#terminationStartedAt.delete(uid);
    if (at >= startedAt) this.#killDuration.observe((at - startedAt) / 1000);
  }
}

export function createMetrics(): PodctlMetrics {
  return new PodctlMetrics();
}

/** Feeds a metrics registry from a session's events; returns the function that stops it. */
export function attachMetrics(metrics: PodctlMetrics, session: { subscribe(l: (e: SessionEvent) => void): () => void }): () => void {
  return session.subscribe((event) => {
    try {
      metrics.observeSessionEvent(event);
    } catch {
      // A listener must never break the emitter; a metric lost is better than a stalled engine.
    }
  });
}

/**
 * Writes the text exposition to `path` atomically (temporary file in the same directory, then rename),
 * so a scraper reading the file never sees half of it.
 */
export async function writeMetricsFile(metrics: PodctlMetrics, path: string): Promise<void> {
  const text = await metrics.exposition();
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `.${basename(path)}.${process.pid}.tmp`);
  await writeFile(tmp, text, { mode: 0o644 });
  await rename(tmp, path);
}
