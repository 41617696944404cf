import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectCri } from '../../src/cri/client/client.js';
import { GrpcStatus } from '../../src/cri/client/errors.js';
import { groupRuntimePods } from '../../src/cri/cache/pods.js';
import { behaviourOf, demoNode, FaultInjector, runSimulator, seedPods, SimRuntime, startSimulator } from '../../src/cri/simulator/index.js';
import { useTempDir } from './support.js';
import { until } from '../support/wait.js';

/** The bound of a wait here (for a loaded machine, not a speed goal) and its pace. */
const WAIT = { timeoutMs: 5_000, everyMs: 10 };

function model(): SimRuntime {
  return new SimRuntime();
}

describe('simulated containers', () => {
  it('read their SIGTERM behaviour from the /pause command line or an annotation', () => {
    expect(behaviourOf({ command: ['/pause'], args: [], annotations: {} })).toBe('exit');
    expect(behaviourOf({ command: ['/pause'], args: ['ignore'], annotations: {} })).toBe('ignore');
    expect(behaviourOf({ command: ['/pause', 'graceful', '7'], args: [], annotations: {} })).toEqual({ exitAfterSeconds: 7 });
    expect(behaviourOf({ command: ['/pause'], args: [], annotations: { 'podctl.io/sim-sigterm': '3' } })).toEqual({ exitAfterSeconds: 3 });
    expect(behaviourOf({ command: [], args: [], annotations: { 'podctl.io/sim-sigterm': 'ignore' } })).toBe('ignore');
  });

  it('a second StopContainer with a shorter timeout kills early and ends the first call too', async () => {
    const state = model();
    const [pod] = seedPods(state, [{ name: 'x', containers: [{ name: 'c', onSigterm: 'ignore' }] }]);
    const id = pod!.containerIds[0]!;
    const started = Date.now();
    let firstDoneAt = 0;
    const first = state.stopContainer(id, 30).then(() => (firstDoneAt = Date.now()));
    await state.stopContainer(id, 0.2);
    await first;
    expect(firstDoneAt - started).toBeLessThan(5000);
    expect(state.container(id)).toMatchObject({ state: 2, exitCode: 137, reason: 'Error' });
    expect(state.pendingTimers()).toBe(0);
    state.close();
  });

  it('a container that exits N seconds after SIGTERM exits 0 before a longer timeout', async () => {
    const state = model();
    const [pod] = seedPods(state, [{ name: 'x', containers: [{ name: 'c', onSigterm: { exitAfterSeconds: 0.1 } }] }]);
    const id = pod!.containerIds[0]!;
    await state.stopContainer(id, 10);
    expect(state.container(id)).toMatchObject({ state: 2, exitCode: 0, reason: 'Completed' });
    expect(state.pendingTimers()).toBe(0);
    state.close();
  });

  it('StopPodSandbox SIGKILLs every running container at once', () => {
    const state = model();
    const [pod] = seedPods(state, [
      {
        name: 'x',
        containers: [
          { name: 'a', onSigterm: 'ignore' },
          { name: 'b', onSigterm: { exitAfterSeconds: 5 } },
        ],
      },
    ]);
    state.stopPodSandbox(pod!.sandboxId);
    expect(pod!.containerIds.map((id) => state.container(id)?.exitCode)).toEqual([137, 137]);
    expect(state.sandbox(pod!.sandboxId)?.state).toBe(1);
    expect(
      state
        .journal()
        .filter((r) => r.kind === 'signal')
        .map((r) => (r as { signal: string }).signal),
    ).toEqual(['SIGKILL', 'SIGKILL']);
    state.close();
  });

  it("a sandbox's stop and removal are events under the sandbox's id, as containerd sends them, after its containers'", () => {
    const state = model();
    const [pod] = seedPods(state, [{ name: 'x', containers: [{ name: 'a' }, { name: 'b' }] }]);
    const events: { id: string; type: number; sandbox?: number; statuses: string[] }[] = [];
    state.subscribe((e) =>
      events.push({
        id: e.containerId,
        type: e.containerEventType,
        ...(e.podSandboxStatus ? { sandbox: e.podSandboxStatus.state } : {}),
        statuses: e.containersStatuses.map((c) => `${c.id}:${c.state}`),
      }),
    );
    const sid = pod!.sandboxId;
    const [a, b] = pod!.containerIds;
    state.stopPodSandbox(sid);
    state.stopPodSandbox(sid); // stopping a stopped sandbox again says nothing
    state.removePodSandbox(sid);
    const ofSandbox = events.filter((e) => e.id === sid);
    expect(ofSandbox).toEqual([
      { id: sid, type: 2, sandbox: 1, statuses: [`${a}:2`, `${b}:2`] },
      { id: sid, type: 3, statuses: [] },
    ]);
    // each container's own stop comes before the sandbox's, and its removal before the sandbox's
    expect(events.findIndex((e) => e.id === a && e.type === 2)).toBeLessThan(events.indexOf(events.find((e) => e.id === sid)!));
    expect(events.findIndex((e) => e.id === b && e.type === 3)).toBeLessThan(events.length - 1);
    state.close();
  });

  it('refuses to create containers in a stopped sandbox, and reports unknown IDs as NotFound', () => {
    const state = model();
    const [pod] = seedPods(state, [{ name: 'x' }]);
    state.stopPodSandbox(pod!.sandboxId);
    expect(() => state.createContainer(pod!.sandboxId, { metadata: { name: 'late', attempt: 0 } })).toThrow(/not ready/);
    expect(() => state.containerStatus('nope')).toThrow(expect.objectContaining({ code: GrpcStatus.NOT_FOUND }));
    state.close();
  });

  it('close() releases every pending stop and timer', async () => {
    const state = model();
    const [pod] = seedPods(state, [{ name: 'x', containers: [{ name: 'c', onSigterm: 'ignore' }] }]);
    const stopping = state.stopContainer(pod!.containerIds[0]!, 60);
    state.close();
    await stopping;
    expect(state.pendingTimers()).toBe(0);
  });
});

describe('fault injection', () => {
  it('fires rules by method, count and probability', () => {
    const rolls = [0.9, 0.1, 0.1];
    const faults = new FaultInjector(
      [
        { method: 'StopContainer', code: GrpcStatus.DEADLINE_EXCEEDED, count: 2 },
        { method: 'ListContainers', code: GrpcStatus.UNAVAILABLE, probability: 0.5 },
      ],
      () => rolls.shift() ?? 0,
    );
    expect(faults.decide('Version')).toBeUndefined();
    expect(faults.decide('StopContainer')?.code).toBe(GrpcStatus.DEADLINE_EXCEEDED);
    expect(faults.decide('StopContainer')?.code).toBe(GrpcStatus.DEADLINE_EXCEEDED);
    expect(faults.decide('StopContainer')).toBeUndefined(); // count used up
    expect(faults.decide('ListContainers')).toBeUndefined(); // rolled 0.9 ≥ 0.5
    expect(faults.decide('ListContainers')?.code).toBe(GrpcStatus.UNAVAILABLE);
    faults.set([]);
    expect(faults.decide('ListContainers')).toBeUndefined();
  });

  const dir = useTempDir();

  it('proceed: the runtime does the work but answers with the error (StopContainer DeadlineExceeded)', async () => {
    const sim = await startSimulator({
      socketPath: path.join(dir(), 'f.sock'),
      pods: [{ name: 'x' }],
      faults: [{ method: 'StopContainer', code: GrpcStatus.DEADLINE_EXCEEDED, proceed: true, count: 1 }],
    });
    const client = await connectCri({ endpoint: sim.endpoint });
    try {
      const [id] = sim.state.containerIds();
      await expect(client.stopContainer(id!, 5)).rejects.toMatchObject({ code: GrpcStatus.DEADLINE_EXCEEDED, method: 'StopContainer' });
      expect(sim.state.container(id!)?.state).toBe(2);
      expect(sim.state.journal().some((r) => r.kind === 'fault' && r.method === 'StopContainer')).toBe(true);
    } finally {
      client.close();
      await sim.close();
    }
  });
});

describe('demo node', () => {
  it('has a few dozen kubelet-style pods across namespaces, with static pods and priorities', () => {
    const specs = demoNode();
    expect(specs.length).toBe(36);
    const namespaces = new Set(specs.map((p) => p.namespace));
    expect(namespaces.size).toBeGreaterThanOrEqual(5);
    expect(specs.filter((p) => p.static)).toHaveLength(2);
    expect(new Set(specs.map((p) => p.uid)).size).toBe(36);
    expect(specs.some((p) => p.containers?.some((c) => c.onSigterm === 'ignore'))).toBe(true);
    expect(specs.some((p) => p.containers?.some((c) => typeof c.onSigterm === 'object'))).toBe(true);
    expect(specs.some((p) => p.containers?.some((c) => c.preStop))).toBe(true);
    expect(new Set(specs.map((p) => p.priority)).size).toBeGreaterThan(3);
    // deterministic
    expect(demoNode().map((p) => p.uid)).toEqual(specs.map((p) => p.uid));
    expect(demoNode(5)).toHaveLength(5);
  });

  it('seeds pods that rebuild with their labels, annotations and states', async () => {
    const state = model();
    seedPods(state, demoNode(12));
    const pods = groupRuntimePods(state.listPodSandbox(undefined), state.listContainers(undefined));
    expect(pods.size).toBe(12);
    const etcd = [...pods.values()].find((p) => p.name === 'etcd-node-1')!;
    expect(etcd).toMatchObject({ namespace: 'kube-system', static: true, configSource: 'file', priority: 2_000_001_000 });
    const batch = [...pods.values()].filter((p) => p.namespace === 'batch');
    expect(batch.length).toBeGreaterThan(0);
    expect(batch.every((p) => p.restartPolicy !== 'Always')).toBe(true);
    state.close();
  });
});

describe('runSimulator (foreground)', () => {
  const dir = useTempDir();

  it('serves until aborted, then closes and removes its socket', async () => {
    const stateDir = path.join(dir(), 'state');
    const ac = new AbortController();
    let endpoint = '';
    const running = runSimulator({ stateDir, pods: 4, signal: ac.signal, handleProcessSignals: false, onReady: (s) => (endpoint = s.endpoint) });
    await until('the simulator serving', () => endpoint !== '', WAIT);
    expect(endpoint).toBe(`unix://${stateDir}/simulator.sock`);
    const client = await connectCri({ endpoint });
    expect(await client.listPodSandbox()).toHaveLength(4);
    client.close();
    ac.abort();
    await running;
    expect(existsSync(path.join(stateDir, 'simulator.sock'))).toBe(false);
  });

  it('refuses to start on a socket another simulator is serving', async () => {
    const socketPath = path.join(dir(), 'busy.sock');
    const sim = await startSimulator({ socketPath });
    try {
      await expect(startSimulator({ socketPath })).rejects.toThrow(/already being served/);
    } finally {
      await sim.close();
    }
  });
});
