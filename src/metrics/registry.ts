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
 * Node series, named and labelled as the kubelet's (docs/metrics.md):
 * - podctl_desired_pods{static}, podctl_active_pods{static}, podctl_mirror_pods  gauges.
 * - podctl_restarted_pods_total{static}                counter: a pod re-created before its earlier
 *                                                        worker with the same UID had finished.
 * - podctl_pod_worker_duration_seconds{operation_type} histogram: one worker sync (create, update, sync, kill).
 * - podctl_runtime_operations_total / _errors_total / _duration_seconds{operation_type}: CRI calls,
 *   with the kubelet's operation names (stop_container, stop_podsandbox, list_podsandbox, …).
 * - podctl_evictions_total                              counter: terminations requested as evictions.
 * - podctl_stuck_pods{reason}                         gauge: pods on their way out not finishing, by what holds them
 *   (services/diagnose/blocked-by.ts); the agent counts those terminating past grace + stuck-after.
 * - podctl_kubelet_up                                  gauge: 1 running (or unknown), 0 down.
 * - podctl_api_reachable                               gauge (the agent, with an API server): 1 its watches are answered, 0 not.
 * - podctl_housekeeping_steps_total{result}            counter (the agent): steps by result (ok, stale, failed, refused).
 * - podctl_api_writes_enabled, podctl_api_writes_unrestricted  gauges (the agent with an API server
 *   only, registered on first use): whether it sends API writes, and whether it does so under
 *   --unrestricted-api-writes.
 * - with `processDefaults`, prom-client's process_* and nodejs_* series (less three gauges named
 *   *_total, which promtool rejects) (the agent; never in a
 *   textfile, where node_exporter's own process series would collide).
 *
 * Invariants:
 * - A transition is counted once: engine events count this process's transitions; `observeTransition`
 *   is for transitions another process made (seen through the store) and must not repeat them.
 * - A kill duration is observed once per termination, on the terminated transition, only when its
 *   start is known.
 * - Listeners never throw: a malformed event is ignored rather than breaking the engine's emitter.
 */
import { randomBytes } from 'node:crypto';
import { rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, basename } from 'node:path';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PodWorkerEvent, PodWorkerSync } from '../engine/types.js';
import type { SessionEvent, SyncKnownResult } from '../domain/session-api.js';
import { workingPodSeries } from './working-pods.js';

/** Seconds; from a prompt pod exit to a pod that used a long grace period. */
const KILL_DURATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600];

/** A lifecycle transition podctl saw happen in another process (from checkpoint snapshots). */
export interface ObservedTransition {
  uid: string;
  from: string;
  to: string;
  at: number;
  /** When the pod entered `from` (epoch ms), if known: gives the kill duration of terminating → terminated. */
  fromSince?: number;
}

/** Seconds; a CRI call (list, status) to a stop that waits out a grace period. */
const RUNTIME_OPERATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Seconds; one worker sync. */
const WORKER_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/**
 * The kubelet's operation_type of a CRI method: snake case, "PodSandbox" as one word
 * (StopPodSandbox → stop_podsandbox, ListContainers → list_containers).
 */
export function operationType(method: string): string {
  return method
    .replace(/PodSandbox/g, 'Podsandbox')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase();
}

const RESET_HELP = ' Counted by this process since it started: resets when it restarts (rate() and increase() handle the reset).';

export interface MetricsOptions {
  /** prom-client's process_* and nodejs_* series (for a long-running process's /metrics). */
  processDefaults?: boolean;
}

export class PodctlMetrics {
  readonly registry: Registry;
  #desired: Gauge<'static'>;
  #active: Gauge<'static'>;
  #mirror: Gauge;
  #restarted: Counter<'static'>;
  #workerDuration: Histogram<'operation_type'>;
  #runtimeOps: Counter<'operation_type'>;
  #runtimeErrors: Counter<'operation_type'>;
  #runtimeDuration: Histogram<'operation_type'>;
  #evictions: Counter;
  #kubeletUp: Gauge;
  #apiReachable: Gauge | undefined;
  #steps: Counter<'result'> | undefined;
  /** Worker sync start and the update type it serves, per pod UID. */
  #syncStartedAt = new Map<string, number>();
  #updateType = new Map<string, string>();
  /** UIDs of static pods (from the last listing), for the static label of restarts. */
  #staticUids = new Set<string>();
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

  constructor(options: MetricsOptions = {}) {
    this.registry = new Registry();
    const registers = [this.registry];
    if (options.processDefaults) {
      collectDefaultMetrics({ register: this.registry });
      // prom-client names three gauges *_total, which Prometheus reserves for counters (promtool
      // rejects them); they are left out
      for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) this.registry.removeSingleMetric(name);
    }
    this.#desired = new Gauge({
      name: 'podctl_desired_pods',
      help: "Pods the desired source lists for this node (static pods from the node's manifests included), by whether they are static.",
      labelNames: ['static'],
      registers,
    });
    this.#active = new Gauge({
      name: 'podctl_active_pods',
      help: "Desired pods not yet terminated: the pods that hold the node's resources, by whether they are static.",
      labelNames: ['static'],
      registers,
    });
    this.#mirror = new Gauge({ name: 'podctl_mirror_pods', help: "Mirror pods in the API server standing for this node's static pods.", registers });
    this.#restarted = new Counter({
      name: 'podctl_restarted_pods_total',
      help: `Pods created again (same UID) before their earlier worker had finished, by whether they are static.${RESET_HELP}`,
      labelNames: ['static'],
      registers,
    });
    this.#workerDuration = new Histogram({
      name: 'podctl_pod_worker_duration_seconds',
      help: 'Duration of one pod worker sync, by the update it served (create, update, sync, kill).',
      labelNames: ['operation_type'],
      buckets: WORKER_DURATION_BUCKETS,
      registers,
    });
    this.#runtimeOps = new Counter({
      name: 'podctl_runtime_operations_total',
      help: `CRI calls to the container runtime, by operation (the kubelet's names).${RESET_HELP}`,
      labelNames: ['operation_type'],
      registers,
    });
    this.#runtimeErrors = new Counter({ name: 'podctl_runtime_operations_errors_total', help: `CRI calls that failed, by operation.${RESET_HELP}`, labelNames: ['operation_type'], registers });
    this.#runtimeDuration = new Histogram({
      name: 'podctl_runtime_operations_duration_seconds',
      help: 'Duration of CRI calls, by operation.',
      labelNames: ['operation_type'],
      buckets: RUNTIME_OPERATION_BUCKETS,
      registers,
    });
    this.#evictions = new Counter({ name: 'podctl_evictions_total', help: `Terminations this process requested as evictions.${RESET_HELP}`, registers });
    this.#kubeletUp = new Gauge({ name: 'podctl_kubelet_up', help: 'Whether a kubelet runs beside podctl: 1 running (or unknown, treated as running), 0 down.', registers });
    for (const isStatic of ['false', 'true']) {
      this.#desired.set({ static: isStatic }, 0);
      this.#active.set({ static: isStatic }, 0);
      this.#restarted.inc({ static: isStatic }, 0);
    }
    for (const op of ['stop_container', 'stop_podsandbox', 'remove_container', 'remove_podsandbox', 'list_podsandbox', 'list_containers']) {
      this.#runtimeOps.inc({ operation_type: op }, 0);
      this.#runtimeErrors.inc({ operation_type: op }, 0);
    }
    this.#workingPods = new Gauge({
      name: 'podctl_working_pods',
      help: 'Pod workers by lifecycle phase (sync, terminating, terminated), by whether the pod is desired, orphaned or known only from the runtime, and by whether it is static.',
      labelNames: ['lifecycle', 'config', 'static'],
      registers,
    });
    this.#stuckPods = new Gauge({
      name: 'podctl_stuck_pods',
      help: 'Pods on their way out that are not finishing, by what holds them (services/diagnose/blocked-by.ts: grace, cni-teardown, uninterruptible-io, stale-shim, runtime-deadline, volume-busy, finalizer, kubelet-owns, undriven, runtime-error).',
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

  /** The desired and active pod gauges (static or not), and the mirror pods in the API server. */
  setNodePods(counts: { desired: { static: number; other: number }; active: { static: number; other: number }; mirror: number }, staticUids?: Iterable<string>): void {
    this.#desired.set({ static: 'true' }, counts.desired.static);
    this.#desired.set({ static: 'false' }, counts.desired.other);
    this.#active.set({ static: 'true' }, counts.active.static);
    this.#active.set({ static: 'false' }, counts.active.other);
    this.#mirror.set(counts.mirror);
    if (staticUids) this.#staticUids = new Set(staticUids);
  }

  #apiWrites: { enabled: Gauge; unrestricted: Gauge } | undefined;

  /** Whether the agent sends API writes (services/housekeeping/api-writes.ts); the two gauges exist from the first call. */
  setApiWrites(state: { enabled: boolean; unrestricted: boolean }): void {
    this.#apiWrites ??= {
      enabled: new Gauge({
        name: 'podctl_api_writes_enabled',
        help: 'Whether the agent sends API writes (evictions, deletes, status patches, cordon, Events): 1 while its node restriction is in force or --unrestricted-api-writes is given, else 0.',
        registers: [this.registry],
      }),
      unrestricted: new Gauge({
        name: 'podctl_api_writes_unrestricted',
        help: 'Whether the agent runs with --unrestricted-api-writes (writes whether or not its node restriction is in force): 1 yes, 0 no.',
        registers: [this.registry],
      }),
    };
    this.#apiWrites.enabled.set(state.enabled ? 1 : 0);
    this.#apiWrites.unrestricted.set(state.unrestricted ? 1 : 0);
  }

  /** `running` and `unknown` are 1 (unknown is treated as running), `down` 0. */
  /** podctl_api_reachable, registered on first use (only an agent with an API server has it). */
  setApiReachable(reachable: boolean): void {
    this.#apiReachable ??= new Gauge({ name: 'podctl_api_reachable', help: "Whether the agent's watches of the API server are answered: 1 yes, 0 no.", registers: [this.registry] });
    this.#apiReachable.set(reachable ? 1 : 0);
  }

  /** podctl_housekeeping_steps_total{result}: the agent's steps (every result present from the first). */
  countHousekeepingStep(result: 'ok' | 'stale' | 'failed' | 'refused'): void {
    if (!this.#steps) {
      this.#steps = new Counter({
        name: 'podctl_housekeeping_steps_total',
        help: `The agent's housekeeping steps by result: ok, stale (on the last known pods: the API server did not answer), failed, refused (a safety rule).${RESET_HELP}`,
        labelNames: ['result'],
        registers: [this.registry],
      });
      for (const r of ['ok', 'stale', 'failed', 'refused']) this.#steps.inc({ result: r }, 0);
    }
    this.#steps.inc({ result });
  }

  setKubeletState(state: 'running' | 'down' | 'unknown'): void {
    this.#kubeletUp.set(state === 'down' ? 0 : 1);
  }

  /** One finished CRI call. */
  observeRuntimeOperation(op: { method: string; ms: number; error: boolean }): void {
    const operation_type = operationType(op.method);
    this.#runtimeOps.inc({ operation_type });
    if (op.error) this.#runtimeErrors.inc({ operation_type });
    this.#runtimeDuration.observe({ operation_type }, op.ms / 1000);
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
        if (event.evicted) this.#evictions.inc();
        return;
      case 'update-queued':
        this.#updateType.set(event.uid, event.updateType);
        return;
      case 'restart-requested':
        this.#restarted.inc({ static: String(this.#staticUids.has(event.uid)) });
        return;
      case 'sync-started':
        this.#syncStartedAt.set(event.uid, event.at);
        return;
      case 'sync-succeeded':
        this.#observeWorkerSync(event.uid, event.at, event.phase);
        return;
      case 'state-changed':
        this.#transitions.inc({ from: event.from, to: event.to });
        if (event.to === 'terminated') this.#observeKillEnd(event.uid, event.at);
        return;
      case 'sync-failed':
        this.#observeWorkerSync(event.uid, event.at, event.phase);
        // A sync cancelled for a new intent (kill, shorter grace) is not an error.
        if (event.aborted !== true) this.#syncErrors.inc({ phase: event.phase });
        return;
      case 'forgotten':
        this.#terminationStartedAt.delete(event.uid);
        this.#updateType.delete(event.uid);
        this.#syncStartedAt.delete(event.uid);
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

  #observeWorkerSync(uid: string, at: number, phase: string): void {
    const started = this.#syncStartedAt.get(uid);
    if (started === undefined) return;
    this.#syncStartedAt.delete(uid);
    // a terminating sync serves a kill whatever update queued it; otherwise the queued update's type
    const type = phase === 'sync' ? (this.#updateType.get(uid) ?? 'sync') : 'kill';
    if (at >= started) this.#workerDuration.observe({ operation_type: type }, (at - started) / 1000);
  }

  #observeKillEnd(uid: string, at: number): void {
    const startedAt = this.#terminationStartedAt.get(uid);
    if (startedAt === undefined) return;
    this.#terminationStartedAt.delete(uid);
    if (at >= startedAt) this.#killDuration.observe((at - startedAt) / 1000);
  }
}

export function createMetrics(options: MetricsOptions = {}): PodctlMetrics {
  return new PodctlMetrics(options);
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
 * Checks, before anything happens, that a metrics file can be written at `path`: its directory
 * exists and is a directory. Returns the reason it cannot, or undefined.
 */
export async function metricsFileProblem(path: string): Promise<string | undefined> {
  if (path === '' || path.endsWith('/')) return `"${path}" is not a file path`;
  try {
    const s = await stat(dirname(path));
    if (!s.isDirectory()) return `${dirname(path)} is not a directory`;
  } catch (error) {
    return `directory ${dirname(path)} does not exist (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
  }
  return undefined;
}

/**
 * Writes the text exposition to `path` atomically (temporary file in the same directory, then rename),
 * so a scraper (node_exporter's textfile collector) reading the file never sees half of it. The
 * directory must exist (checked up front with `metricsFileProblem`).
 */
export async function writeMetricsFile(metrics: PodctlMetrics, path: string): Promise<void> {
  const text = await metrics.exposition();
  const dir = dirname(path);
  // an unpredictable name, created exclusively (O_CREAT|O_EXCL never follows a planted symlink)
  const tmp = join(dir, `.${basename(path)}.${randomBytes(8).toString('hex')}.tmp`);
  try {
    await writeFile(tmp, text, { mode: 0o644, flag: 'wx' });
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw error;
  }
}
