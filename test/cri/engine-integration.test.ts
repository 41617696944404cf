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
import { useSimulator } from './support.js';
import { until } from '../support/wait.js';

/** The bound of a wait here (for a loaded machine, not a speed goal) and its pace. */
const WAIT = { timeoutMs: 5_000, everyMs: 10 };

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
    await until("the pod's worker finished", () => workers.snapshot().get(uid)?.finished === true, { ...WAIT, timeoutMs });
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
    await until('one stop pending', () => sim.state.pendingStops() === 1, WAIT);
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
    await until('every container exited', () => sim.state.containerIds().every((id) => sim.state.container(id)?.state === 2), WAIT);
    expect(stopTimeouts(sim.state.journal())).toEqual(['timeout=1']);
    await workers.whenIdle();
    await workers.close();
    cache.close();
  });

  it('syncs a terminated pod only after a relist started once its terminating sync ended, and relists once for it', async () => {
    const { sim, client } = await simulator({ pods: [{ name: 'web', uid: 'w4', containers: [{ name: 'c', onSigterm: 'exit' }] }] });
    // every reading of the clock is a later instant: two asks in the same millisecond never share a relist by chance
    let ticks = 0;
    const clock = { now: () => Date.now() + ticks++ };
    const cache = new RuntimePodCache({ client, clock });
    const syncer = new RuntimeSyncer({ client, cache, clock });
    const log: Array<{ what: string; at: number }> = [];
    cache.subscribe((e) => {
      if (e.kind === 'relisted') log.push({ what: 'relisted', at: e.at });
    });
    const syncTerminatedPod = syncer.syncTerminatedPod.bind(syncer);
    syncer.syncTerminatedPod = (...args) => {
      log.push({ what: 'terminated sync', at: clock.now() });
      return syncTerminatedPod(...args);
    };
    const workers = createPodWorkers({
      syncer,
      cache,
      clock,
      backOffPeriodMs: 100,
      onEvent: (e) => {
        if (e.type === 'state-changed' && e.to === 'terminated') log.push({ what: 'terminated', at: e.at });
        if (e.type === 'finished') log.push({ what: 'finished', at: e.at });
      },
    });
    const pod = await specOf(client, 'w4');
    workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 5 } });
    await finished(workers, 'w4');
    // a relist the syncer would queue behind the terminated phase's would have started by now
    await new Promise((resolve) => setTimeout(resolve, 300));
    const terminatedAt = log.find((e) => e.what === 'terminated')!.at;
    const newer = log.filter((e) => e.what === 'relisted' && e.at >= terminatedAt);
    expect(newer).toHaveLength(1);
    // the kubelet's rule: the terminated phase runs on a status newer than the terminating sync's end
    const phase = log.findIndex((e) => e.what === 'terminated sync');
    expect(log.indexOf(newer[0]!)).toBeLessThan(phase);
    expect(sim.state.container(sim.state.containerIds()[0]!)).toMatchObject({ state: 2, exitCode: 0 });
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
