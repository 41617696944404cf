import { mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { register as globalRegistry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { PodWorkerSync } from '../../src/engine/types.js';
import { attachMetrics, createMetrics, metricsFileProblem, operationType, writeMetricsFile } from '../../src/metrics/registry.js';
import { countWorkingPods, workerSyncOf, workingPodSeries } from '../../src/metrics/working-pods.js';
import { FakeSession, pod } from '../tui/support/fake-session.js';

function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('working pods breakdown', () => {
  it('classifies a pod listing like the kubelet classifies its workers', () => {
    const runtimeOnlyWorker = pod('default/rt', {
      state: 'terminating',
      worker: { activeUpdate: { updateType: 'kill', runningPod: { id: 'x', name: 'rt', namespace: 'default', containers: [], sandboxes: [] } } } as never,
    });
    const orphan = pod('default/gone', { worker: { deleted: true } as never, state: 'terminating' });
    const staticPod = pod('kube-system/etcd', { static: true, state: 'sync' });
    const finished = pod('default/old', { state: 'finished' });
    const untracked = pod('default/loose', { state: 'runtime' });
    expect(workerSyncOf(runtimeOnlyWorker)).toEqual({ state: 'terminating', orphan: false, hasConfig: false, static: false });
    expect(workerSyncOf(orphan)).toEqual({ state: 'terminating', orphan: true, hasConfig: true, static: false });
    expect(workerSyncOf(staticPod)).toEqual({ state: 'sync', orphan: false, hasConfig: true, static: true });
    expect(workerSyncOf(finished)?.state).toBe('terminated');
    expect(workerSyncOf(untracked)).toBeUndefined();
    const counts = countWorkingPods([runtimeOnlyWorker, orphan, staticPod, finished, untracked]);
    expect(counts.byLifecycle).toEqual({ sync: 1, terminating: 2, terminated: 1 });
    expect(counts.byConfig).toEqual({ desired: 2, orphan: 1, runtime_only: 1 });
    expect(counts).toMatchObject({ static: 1, working: 4, untracked: 1, total: 5 });
  });

  it('reports every label combination, zero when empty', () => {
    const series = workingPodSeries([{ state: 'sync', orphan: false, hasConfig: true, static: false }]);
    expect(series).toHaveLength(15);
    expect(series.filter((s) => s.value > 0)).toEqual([{ lifecycle: 'sync', config: 'desired', static: 'false', value: 1 }]);
  });
});

describe('metrics registry', () => {
  it('names CRI operations as the kubelet does and counts calls, errors and durations', async () => {
    expect(['StopPodSandbox', 'ListContainers', 'ContainerStatus', 'PodSandboxStatus', 'ExecSync', 'Version', 'RemovePodSandbox'].map(operationType)).toEqual([
      'stop_podsandbox',
      'list_containers',
      'container_status',
      'podsandbox_status',
      'exec_sync',
      'version',
      'remove_podsandbox',
    ]);
    const m = createMetrics();
    m.observeRuntimeOperation({ method: 'StopContainer', ms: 1500, error: false });
    m.observeRuntimeOperation({ method: 'StopContainer', ms: 20, error: true });
    const text = await m.exposition();
    expect(sample(text, 'podctl_runtime_operations_total{operation_type="stop_container"}')).toBe(2);
    expect(sample(text, 'podctl_runtime_operations_errors_total{operation_type="stop_container"}')).toBe(1);
    expect(sample(text, 'podctl_runtime_operations_duration_seconds_bucket{le="2.5",operation_type="stop_container"}')).toBe(2);
    expect(sample(text, 'podctl_runtime_operations_duration_seconds_bucket{le="1",operation_type="stop_container"}')).toBe(1);
  });

  it('counts restarts by static label, evictions, and worker syncs by the update they served', async () => {
    const m = createMetrics();
    m.setNodePods({ desired: { static: 1, other: 2 }, active: { static: 1, other: 1 }, mirror: 1 }, ['uid-static']);
    const base = { fullname: 'p_ns', at: 1_000 };
    m.observeEngineEvent({ type: 'restart-requested', uid: 'uid-static', ...base });
    m.observeEngineEvent({ type: 'restart-requested', uid: 'uid-other', ...base });
    m.observeEngineEvent({ type: 'restart-requested', uid: 'uid-other', ...base });
    m.observeEngineEvent({ type: 'termination-requested', uid: 'uid-e', ...base, gracePeriod: 30, evicted: true, deleted: false });
    m.observeEngineEvent({ type: 'termination-requested', uid: 'uid-k', ...base, gracePeriod: 30, evicted: false, deleted: false });
    m.observeEngineEvent({ type: 'update-queued', uid: 'uid-c', ...base, updateType: 'create' });
    m.observeEngineEvent({ type: 'sync-started', uid: 'uid-c', ...base, phase: 'sync' });
    m.observeEngineEvent({ type: 'sync-succeeded', uid: 'uid-c', fullname: 'p_ns', at: 1_300, phase: 'sync' });
    m.observeEngineEvent({ type: 'sync-started', uid: 'uid-k', ...base, phase: 'terminating' });
    m.observeEngineEvent({ type: 'sync-failed', uid: 'uid-k', fullname: 'p_ns', at: 3_000, phase: 'terminating', error: 'x', retryInMs: 100 });
    const text = await m.exposition();
    expect(sample(text, 'podctl_restarted_pods_total{static="true"}')).toBe(1);
    expect(sample(text, 'podctl_restarted_pods_total{static="false"}')).toBe(2);
    expect(sample(text, 'podctl_evictions_total')).toBe(1);
    expect(sample(text, 'podctl_pod_worker_duration_seconds_count{operation_type="create"}')).toBe(1);
    expect(sample(text, 'podctl_pod_worker_duration_seconds_sum{operation_type="create"}')).toBeCloseTo(0.3);
    expect(sample(text, 'podctl_pod_worker_duration_seconds_sum{operation_type="kill"}')).toBeCloseTo(2);
    expect(sample(text, 'podctl_desired_pods{static="false"}')).toBe(2);
    expect(sample(text, 'podctl_active_pods{static="true"}')).toBe(1);
    expect(sample(text, 'podctl_mirror_pods')).toBe(1);
  });

  it('is a fresh registry per run, never the global default one', async () => {
    const a = createMetrics();
    const b = createMetrics();
    expect(a.registry).not.toBe(b.registry);
    expect(a.registry).not.toBe(globalRegistry);
    expect(await globalRegistry.metrics()).not.toContain('podctl_');
  });

  it('exports the working-pods gauge from a known-workers map', async () => {
    const m = createMetrics();
    const workers: PodWorkerSync[] = [
      { state: 'sync', orphan: false, hasConfig: true, static: false },
      { state: 'sync', orphan: false, hasConfig: true, static: false },
      { state: 'terminating', orphan: true, hasConfig: true, static: false },
      { state: 'terminating', orphan: true, hasConfig: false, static: false },
      { state: 'terminated', orphan: false, hasConfig: true, static: true },
    ];
    m.setWorkingPods(workers, 3);
    const text = await m.exposition();
    expect(sample(text, 'podctl_working_pods{lifecycle="sync",config="desired",static="false"}')).toBe(2);
    expect(sample(text, 'podctl_working_pods{lifecycle="terminating",config="orphan",static="false"}')).toBe(1);
    expect(sample(text, 'podctl_working_pods{lifecycle="terminating",config="runtime_only",static="unknown"}')).toBe(1);
    expect(sample(text, 'podctl_working_pods{lifecycle="terminated",config="desired",static="true"}')).toBe(1);
    expect(sample(text, 'podctl_working_pods{lifecycle="terminated",config="orphan",static="true"}')).toBe(0);
    expect(sample(text, 'podctl_untracked_runtime_pods')).toBe(3);
    // A later breakdown replaces the earlier one (no stale series).
    m.setWorkingPods([]);
    expect(sample(await m.exposition(), 'podctl_working_pods{lifecycle="sync",config="desired",static="false"}')).toBe(0);
  });

  it('counts transitions, sync errors and kill durations from engine events', async () => {
    const session = new FakeSession();
    const m = createMetrics();
    const detach = attachMetrics(m, session);
    const base = { uid: 'u1', fullname: 'web_default' };
    session.emitEngine({ type: 'state-changed', ...base, at: 0, from: 'new', to: 'sync' });
    session.emitEngine({ type: 'termination-requested', ...base, at: 1_000, gracePeriod: 5, evicted: false, deleted: false });
    session.emitEngine({ type: 'state-changed', ...base, at: 1_000, from: 'sync', to: 'terminating' });
    session.emitEngine({ type: 'sync-failed', ...base, at: 2_000, phase: 'terminating', error: 'StopContainer: Unavailable', retryInMs: 1000 });
    session.emitEngine({ type: 'grace-shortened', ...base, at: 2_500, from: 5, to: 2 });
    session.emitEngine({ type: 'state-changed', ...base, at: 4_000, from: 'terminating', to: 'terminated' });
    detach();
    session.emitEngine({ type: 'state-changed', uid: 'u2', fullname: 'x_y', at: 0, from: 'new', to: 'sync' });
    const text = await m.exposition();
    expect(sample(text, 'podctl_pod_transitions_total{from="new",to="sync"}')).toBe(1);
    expect(sample(text, 'podctl_pod_transitions_total{from="sync",to="terminating"}')).toBe(1);
    expect(sample(text, 'podctl_pod_transitions_total{from="terminating",to="terminated"}')).toBe(1);
    expect(sample(text, 'podctl_sync_errors_total{phase="terminating"}')).toBe(1);
    expect(sample(text, 'podctl_kill_duration_seconds_count')).toBe(1);
    expect(sample(text, 'podctl_kill_duration_seconds_sum')).toBe(3);
    expect(sample(text, 'podctl_kill_duration_seconds_bucket{le="2"}')).toBe(0);
    expect(sample(text, 'podctl_kill_duration_seconds_bucket{le="5"}')).toBe(1);
  });

  it('counts transitions seen from other processes and orphaned runtime pods once per UID', async () => {
    const m = createMetrics();
    m.observeTransition({ uid: 'a', from: 'terminating', to: 'terminated', at: 12_000, fromSince: 2_000 });
    m.observeTransition({ uid: 'b', from: 'sync', to: 'terminating', at: 1 });
    m.observeOrphanedRuntimePods(['r1', 'r2']);
    m.observeOrphanedRuntimePods(['r2', 'r3']);
    const text = await m.exposition();
    expect(sample(text, 'podctl_pod_transitions_total{from="terminating",to="terminated"}')).toBe(1);
    expect(sample(text, 'podctl_kill_duration_seconds_sum')).toBe(10);
    expect(sample(text, 'podctl_orphaned_runtime_pods_total')).toBe(3);
  });

  it('records a sync-known outcome: the known-workers map and the orphaned runtime pods', async () => {
    const m = createMetrics();
    m.observeSyncKnown({
      workers: new Map([
        ['a', { state: 'sync', orphan: false, hasConfig: true, static: true }],
        ['b', { state: 'terminating', orphan: true, hasConfig: false, static: false }],
      ]),
      orphanedRuntimePods: ['b'],
    });
    const text = await m.exposition();
    expect(sample(text, 'podctl_working_pods{lifecycle="sync",config="desired",static="true"}')).toBe(1);
    expect(sample(text, 'podctl_working_pods{lifecycle="terminating",config="runtime_only",static="unknown"}')).toBe(1);
    expect(sample(text, 'podctl_orphaned_runtime_pods_total')).toBe(1);
  });

  it('writes the exposition atomically to a file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'podctl-metrics-'));
    const m = createMetrics();
    m.setWorkingPods([{ state: 'sync', orphan: false, hasConfig: true, static: false }]);
    const path = join(dir, 'sub', 'podctl.prom');
    // the directory must exist: checked up front, never created behind the operator's back
    expect(await metricsFileProblem(path)).toMatch(/^directory .*sub does not exist \(ENOENT\)$/);
    await mkdir(join(dir, 'sub'));
    expect(await metricsFileProblem(path)).toBeUndefined();
    await writeMetricsFile(m, path);
    const text = await readFile(path, 'utf8');
    expect(text).toContain('# TYPE podctl_working_pods gauge');
    expect(sample(text, 'podctl_working_pods{lifecycle="sync",config="desired",static="false"}')).toBe(1);
    expect(await readdir(join(dir, 'sub'))).toEqual(['podctl.prom']);
    await rm(dir, { recursive: true, force: true });
  });
});
