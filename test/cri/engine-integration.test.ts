/**
 * The real engine driving the runtime-backed syncer and cache against the simulator: the path
 * every podctl command takes, minus the store.
 */
import { describe, expect, it } from 'vitest';
import { createPodWorkers, type PodWorkerEvent, type PodWorkers } from '../../src/engine/index.js';
import { RuntimePodCache } from '../../src/cri/cache/cache.js';
import { GrpcStatus } from '../../src/cri/client/errors.js';
import { groupRuntimePods, toRunningPod, toV1Pod } from '../../src/cri/cache/pods.js';
import { RuntimeSyncer } from '../../src/cri/runtime/syncer.js';
import type { CriClient } from '../../src/cri/client/client.js';
import type { SimRecord, StartSimulatorOptions } from '../../src/cri/simulator/index.js';
import { until, useSimulator } from './support.js';

function stopTimeouts(journal: readonly SimRecord[]): string[] {
  return journal.filter((r) => r.kind === 'rpc' && r.method === 'StopContainer').map((r) => (r as { detail?: string }).detail ?? '');
}

describe('engine + runtime syncer + runtime cache', () => {
  const simulator = useSimulator();

  async function setup(options: Omit<StartSimulatorOptions, 'socketPath'>) {
    const { sim, client } = await simulator(options);
    const cache = new RuntimePodCache({ client });
    const syncer = new RuntimeSyncer({ client, cache });
    const events: PodWorkerEvent[] = [];
    const workers = createPodWorkers({ syncer, cache, backOffPeriodMs: 100, onEvent: (e) => events.push(e) });
    return { sim, client, cache, syncer, workers, events };
  }

  async function specOf(client: CriClient, uid: string) {
    return toV1Pod(groupRuntimePods(await client.listPodSandbox(), await client.listContainers()).get(uid)!);
  }

  async function finished(workers: PodWorkers, uid: string, timeoutMs = 10_000) {
    await until(() => workers.snapshot().get(uid)?.finished === true, timeoutMs);
  }

  it('kills a pod with its grace honoured and finishes the worker', async () => {
    const { sim, client, cache, workers } = await setup({ pods: [{ name: 'web', uid: 'w1', containers: [{ name: 'c', onSigterm: 'ignore' }] }] });
    const pod = await specOf(client, 'w1');
    workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 1 } });
    await finished(workers, 'w1');
    const [cid] = sim.state.containerIds();
    expect(sim.state.container(cid!)).toMatchObject({ state: 2, exitCode: 137 });
    expect(stopTimeouts(sim.state.journal())).toEqual(['timeout=1']);
    await workers.close();
    cache.close();
  });

  it('a shorter grace requested mid-flight ends the termination early', async () => {
    const { sim, client, cache, workers, events } = await setup({ pods: [{ name: 'web', uid: 'w2', containers: [{ name: 'c', onSigterm: 'ignore' }] }] });
    const pod = await specOf(client, 'w2');
    workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 30 } });
    await until(() => sim.state.pendingStops() === 1);
    const shortenedAt = Date.now();
    workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 1 } });
    await finished(workers, 'w2');
    expect(Date.now() - shortenedAt).toBeLessThan(8000);
    expect(stopTimeouts(sim.state.journal())).toEqual(['timeout=30', 'timeout=1']);
    expect(events.some((e) => e.type === 'grace-shortened' && e.uid === 'w2')).toBe(true);
    expect(sim.state.pendingStops()).toBe(0);
    await workers.close();
    cache.close();
  });

  it('terminates a runtime-only pod with grace 1', async () => {
    const { sim, client, cache, workers } = await setup({ pods: [{ name: 'orphan', uid: 'o1', terminationGracePeriodSeconds: 90, containers: [{ name: 'c', onSigterm: 'ignore' }] }] });
    const runningPod = toRunningPod(groupRuntimePods(await client.listPodSandbox(), await client.listContainers()).get('o1')!);
    workers.updatePod({ updateType: 'kill', runningPod });
    await until(() => sim.state.containerIds().every((id) => sim.state.container(id)?.state === 2));
    expect(stopTimeouts(sim.state.journal())).toEqual(['timeout=1']);
    await workers.whenIdle();
    await workers.close();
    cache.close();
  });

  it('a runtime error fails the sync as CriError; the engine backs off and retries to completion', async () => {
    const { sim, client, cache, workers, events } = await setup({
      pods: [{ name: 'web', uid: 'w3' }],
      faults: [{ method: 'StopContainer', code: GrpcStatus.DEADLINE_EXCEEDED, details: 'context deadline exceeded', count: 1 }],
    });
    const pod = await specOf(client, 'w3');
    workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 2 } });
    await finished(workers, 'w3');
    const failed = events.find((e) => e.type === 'sync-failed' && e.uid === 'w3');
    expect(failed).toBeDefined();
    expect((failed as { error: string }).error).toContain('StopContainer: DeadlineExceeded');
    expect(stopTimeouts(sim.state.journal())).toHaveLength(2);
    await workers.close();
    cache.close();
  });
});
