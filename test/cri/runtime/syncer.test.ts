import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { CriClient } from '../../../src/cri/client/client.js';
import { CriError, GrpcStatus, isDeadlineExceeded } from '../../../src/cri/client/errors.js';
import { groupRuntimePods, toRunningPod, toV1Pod } from '../../../src/cri/cache/pods.js';
import type { SimPodSpec, SimRecord } from '../../../src/cri/simulator/index.js';
import { isTerminalByRestartPolicy, RuntimeSyncer } from '../../../src/cri/runtime/syncer.js';
import { useSimulator } from '../support.js';
import { until } from '../../support/wait.js';

/** The bound of a wait here (for a loaded machine, not a speed goal) and its pace. */
const WAIT = { timeoutMs: 5_000, everyMs: 10 };

async function podOf(client: CriClient, uid: string): Promise<V1Pod> {
  const pods = groupRuntimePods(await client.listPodSandbox(), await client.listContainers());
  const pod = pods.get(uid);
  if (!pod) throw new Error(`no pod ${uid}`);
  return toV1Pod(pod);
}

function spec(over: Partial<SimPodSpec> & { uid: string }): SimPodSpec {
  return { name: `pod-${over.uid}`, namespace: 'test', ...over };
}

const never = new AbortController().signal;

function rpcs(journal: readonly SimRecord[], method: string): Extract<SimRecord, { kind: 'rpc' }>[] {
  return journal.filter((r): r is Extract<SimRecord, { kind: 'rpc' }> => r.kind === 'rpc' && r.method === method);
}

describe('RuntimeSyncer.syncTerminatingPod', () => {
  const simulator = useSimulator();

  it('stops every container before the sandbox, and the sandbox last', async () => {
    const { sim, client } = await simulator({
      pods: [spec({ uid: 'u1', containers: [{ name: 'slow', onSigterm: { exitAfterSeconds: 0.3 } }, { name: 'fast' }] })],
    });
    const syncer = new RuntimeSyncer({ client });
    await syncer.syncTerminatingPod(never, await podOf(client, 'u1'), undefined, 5, undefined);

    const journal = sim.state.journal();
    const sandboxStop = journal.findIndex((r) => r.kind === 'rpc' && r.method === 'StopPodSandbox');
    const exits = journal.map((r, i) => ({ r, i })).filter(({ r }) => r.kind === 'exit');
    expect(sandboxStop).toBeGreaterThan(-1);
    expect(exits).toHaveLength(2);
    for (const { r, i } of exits) {
      expect(i).toBeLessThan(sandboxStop);
      // both exited on their own after SIGTERM: nothing was SIGKILLed by the sandbox stop
      expect((r as Extract<SimRecord, { kind: 'exit' }>).exitCode).toBe(0);
    }
    expect(rpcs(journal, 'StopContainer').map((r) => r.detail)).toEqual(['timeout=5', 'timeout=5']);
  });

  it('with a status from the cache, stops what that relist saw without listing the pod again first; the check after lists fresh', async () => {
    const { sim, client } = await simulator({ pods: [spec({ uid: 'c1', containers: [{ name: 'a' }, { name: 'b' }] })] });
    const { RuntimePodCache } = await import('../../../src/cri/cache/cache.js');
    const cache = new RuntimePodCache({ client });
    await cache.refresh();
    const syncer = new RuntimeSyncer({ client, cache });
    const pod = await podOf(client, 'c1');
    const before = rpcs(sim.state.journal(), 'ListContainers').length;
    await syncer.syncTerminatingPod(never, pod, cache.get('c1'), 4, undefined);
    const journal = sim.state.journal();
    expect(rpcs(journal, 'StopContainer').map((r) => r.detail)).toEqual(['timeout=4', 'timeout=4']);
    expect(rpcs(journal, 'StopPodSandbox')).toHaveLength(1);
    // the syncer lists only for its check after the stops
    expect(rpcs(journal, 'ListContainers').length - before).toBe(1);
    expect(sim.state.containerIds().every((id) => sim.state.container(id)?.state === 2)).toBe(true);
    cache.close();
  });

  /** A syncer over a status cache whose last relist is 5 s old (older than the relist period). */
  async function staleCacheSyncer(client: ConstructorParameters<typeof RuntimeSyncer>[0]['client']) {
    const { RuntimePodCache } = await import('../../../src/cri/cache/cache.js');
    let now = Date.now();
    const clock = { now: () => now };
    const cache = new RuntimePodCache({ client, clock });
    await cache.refresh();
    now += 5_000;
    return { cache, syncer: new RuntimeSyncer({ client, cache, clock }) };
  }

  it('a cached view older than the relist period is not used: the runtime is listed again first', async () => {
    const { sim, client } = await simulator({ pods: [spec({ uid: 'c2', containers: [{ name: 'a' }] })] });
    const { cache, syncer } = await staleCacheSyncer(client);
    const pod = await podOf(client, 'c2');
    const before = rpcs(sim.state.journal(), 'ListContainers').length;
    await syncer.syncTerminatingPod(never, pod, cache.get('c2'), 4, undefined);
    expect(rpcs(sim.state.journal(), 'ListContainers').length - before).toBe(2);
    expect(rpcs(sim.state.journal(), 'StopContainer')).toHaveLength(1);
    cache.close();
  });

  it('pods stopped together with a cached view older than the relist period share relists: no listing per pod before the stops', async () => {
    const uids = Array.from({ length: 8 }, (_, i) => `s${i}`);
    const { sim, client } = await simulator({ pods: uids.map((uid) => spec({ uid, containers: [{ name: 'a' }] })) });
    const { cache, syncer } = await staleCacheSyncer(client);
    const pods = await Promise.all(uids.map((uid) => podOf(client, uid)));
    const before = rpcs(sim.state.journal(), 'ListContainers').length;
    await Promise.all(pods.map((pod, i) => syncer.syncTerminatingPod(never, pod, cache.get(uids[i]!), 4, undefined)));
    // one relist (and at most one queued after it) before the stops, as many for the checks after: not 8 listings by label
    expect(rpcs(sim.state.journal(), 'ListContainers').length - before).toBeLessThanOrEqual(4);
    expect(rpcs(sim.state.journal(), 'StopContainer')).toHaveLength(8);
    expect(sim.state.containerIds().every((id) => sim.state.container(id)?.state === 2)).toBe(true);
    cache.close();
  });

  it("without a grace from the engine, uses the pod's deletion grace, else its termination grace", async () => {
    const { sim, client } = await simulator({
      pods: [spec({ uid: 'g1', terminationGracePeriodSeconds: 7 }), spec({ uid: 'g2', terminationGracePeriodSeconds: 7, deletionGracePeriodSeconds: 3 })],
    });
    const syncer = new RuntimeSyncer({ client });
    await syncer.syncTerminatingPod(never, await podOf(client, 'g1'), undefined, undefined, undefined);
    await syncer.syncTerminatingPod(never, await podOf(client, 'g2'), undefined, undefined, undefined);
    expect(rpcs(sim.state.journal(), 'StopContainer').map((r) => r.detail)).toEqual(['timeout=7', 'timeout=3']);
  });

  it('SIGKILLs a container that ignores SIGTERM when the grace period runs out, not before', async () => {
    const { sim, client } = await simulator({ pods: [spec({ uid: 'u2', containers: [{ name: 'stubborn', onSigterm: 'ignore' }] })] });
    const [cid] = sim.state.containerIds();
    const syncer = new RuntimeSyncer({ client });
    const started = Date.now();
    await syncer.syncTerminatingPod(never, await podOf(client, 'u2'), undefined, 1, undefined);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(950);
    expect(sim.state.container(cid!)).toMatchObject({ state: 2, exitCode: 137 });
    const signals = sim.state
      .journal()
      .filter((r) => r.kind === 'signal')
      .map((r) => (r as { signal: string }).signal);
    expect(signals).toEqual(['SIGTERM', 'SIGKILL']);
  });

  it('a shortened grace (abort + re-run) ends the in-flight stop early and leaves nothing behind', async () => {
    const { sim, client } = await simulator({ pods: [spec({ uid: 'u3', containers: [{ name: 'stubborn', onSigterm: 'ignore' }] })] });
    const [cid] = sim.state.containerIds();
    const syncer = new RuntimeSyncer({ client });
    const pod = await podOf(client, 'u3');

    const first = new AbortController();
    const long = syncer.syncTerminatingPod(first.signal, pod, undefined, 30, undefined);
    await until('one stop pending', () => sim.state.pendingStops() === 1, WAIT);
    const reason = new Error('grace shortened');
    first.abort(reason);
    await expect(long).rejects.toBe(reason);
    await until('no stop pending', () => sim.state.pendingStops() === 0, WAIT); // the 30 s stop was cancelled, not left running
    expect(sim.state.container(cid!)?.state).toBe(1);

    const started = Date.now();
    await syncer.syncTerminatingPod(never, pod, undefined, 1, undefined);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(sim.state.container(cid!)).toMatchObject({ state: 2, exitCode: 137 });
    expect(rpcs(sim.state.journal(), 'StopContainer').map((r) => r.detail)).toEqual(['timeout=30', 'timeout=1']);
    expect(sim.state.pendingTimers()).toBe(0);
  });

  it('runs an exec preStop hook before SIGTERM, within the grace period, once', async () => {
    const { sim, client } = await simulator({
      pods: [spec({ uid: 'u4', containers: [{ name: 'app', preStop: { exec: { command: ['sh', '-c', 'sleep 1'] } } }] })],
    });
    const [cid] = sim.state.containerIds();
    const hooks: { ok: boolean }[] = [];
    const s2 = new RuntimeSyncer({ client, onHook: (h) => hooks.push(h) });
    await s2.syncTerminatingPod(never, await podOf(client, 'u4'), undefined, 10, undefined);
    const journal = sim.state.journal();
    const exec = journal.findIndex((r) => r.kind === 'exec');
    const term = journal.findIndex((r) => r.kind === 'signal' && r.signal === 'SIGTERM');
    expect(exec).toBeGreaterThan(-1);
    expect(exec).toBeLessThan(term);
    expect(hooks).toEqual([expect.objectContaining({ ok: true, container: 'app' })]);
    // the exec was bounded by the grace (10 s) and the stop got what remained (~9 s)
    expect(rpcs(journal, 'ExecSync')[0]?.detail).toMatch(/^timeout=10 /);
    expect(rpcs(journal, 'StopContainer')[0]?.detail).toBe('timeout=9');
    expect(sim.state.container(cid!)?.exitCode).toBe(0);

    // a re-run does not run the hook again
    await s2.syncTerminatingPod(never, await podOf(client, 'u4'), undefined, 10, undefined);
    expect(sim.state.journal().filter((r) => r.kind === 'exec')).toHaveLength(1);
  });

  it('cuts a sleep preStop hook at the grace period and still stops the container', async () => {
    const { sim, client } = await simulator({
      pods: [spec({ uid: 'u5', containers: [{ name: 'app', onSigterm: 'ignore', preStop: { sleep: { seconds: 30 } } }] })],
    });
    const [cid] = sim.state.containerIds();
    const syncer = new RuntimeSyncer({ client });
    const started = Date.now();
    await syncer.syncTerminatingPod(never, await podOf(client, 'u5'), undefined, 1, undefined);
    const elapsed = Date.now() - started;
    // 1 s of hook, then the kubelet's minimum window (capped by the grace: 1 s) before SIGKILL
    expect(elapsed).toBeGreaterThanOrEqual(1900);
    expect(elapsed).toBeLessThan(6000);
    expect(rpcs(sim.state.journal(), 'StopContainer')[0]?.detail).toBe('timeout=1');
    expect(sim.state.container(cid!)?.exitCode).toBe(137);
  });

  it('reports the final status through podStatusFn: Succeeded, Failed, Evicted', async () => {
    const { client } = await simulator({
      pods: [spec({ uid: 'ok', containers: [{ name: 'a' }] }), spec({ uid: 'killed', containers: [{ name: 'a', onSigterm: 'ignore' }] })],
    });
    const syncer = new RuntimeSyncer({ client });
    let okStatus: V1PodStatus | undefined;
    await syncer.syncTerminatingPod(never, await podOf(client, 'ok'), undefined, 5, (s) => (okStatus = { ...s }));
    expect(okStatus?.phase).toBe('Succeeded');

    await syncer.syncTerminatingPod(never, await podOf(client, 'killed'), undefined, 0, (s) => {
      expect(s.phase).toBe('Failed'); // exit 137
      s.reason = 'Evicted';
      s.message = 'The node was low on resource: memory.';
    });
    expect(syncer.finalStatus('killed')).toMatchObject({ phase: 'Failed', reason: 'Evicted' });
  });

  it('throws a CriError when the runtime fails, so the engine backs off and retries', async () => {
    const { sim, client } = await simulator({
      pods: [spec({ uid: 'u6' })],
      faults: [{ method: 'StopContainer', code: GrpcStatus.DEADLINE_EXCEEDED, details: 'context deadline exceeded', count: 1 }],
    });
    const syncer = new RuntimeSyncer({ client });
    const pod = await podOf(client, 'u6');
    const err = await syncer.syncTerminatingPod(never, pod, undefined, 5, undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CriError);
    expect(isDeadlineExceeded(err)).toBe(true);
    // the sandbox was not stopped while a container's stop had failed
    expect(rpcs(sim.state.journal(), 'StopPodSandbox')).toHaveLength(0);
    await syncer.syncTerminatingPod(never, pod, undefined, 5, undefined);
    expect(rpcs(sim.state.journal(), 'StopPodSandbox')).toHaveLength(1);
  });

  it('treats NotFound from StopContainer as already stopped and goes on to the sandbox', async () => {
    const { sim, client } = await simulator({ pods: [spec({ uid: 'u7' })], faults: [{ method: 'StopContainer', code: GrpcStatus.NOT_FOUND, count: 1 }] });
    const syncer = new RuntimeSyncer({ client });
    await syncer.syncTerminatingPod(never, await podOf(client, 'u7'), undefined, 5, undefined);
    expect(rpcs(sim.state.journal(), 'StopPodSandbox')).toHaveLength(1);
  });
});

describe('RuntimeSyncer.syncTerminatingRuntimePod', () => {
  const simulator = useSimulator();

  it('terminates a pod with no spec using grace 1', async () => {
    const { sim, client } = await simulator({ pods: [spec({ uid: 'r1', terminationGracePeriodSeconds: 60, containers: [{ name: 'c', onSigterm: 'ignore' }, { name: 'd' }] })] });
    const syncer = new RuntimeSyncer({ client });
    const running = toRunningPod(groupRuntimePods(await client.listPodSandbox(), await client.listContainers()).get('r1')!);
    await syncer.syncTerminatingRuntimePod(never, running);
    const journal = sim.state.journal();
    expect(rpcs(journal, 'StopContainer').map((r) => r.detail)).toEqual(['timeout=1', 'timeout=1']);
    expect(rpcs(journal, 'StopPodSandbox')).toHaveLength(1);
    expect(sim.state.containerIds().map((id) => sim.state.container(id)?.state)).toEqual([2, 2]);
  });
});

describe('RuntimeSyncer.syncTerminatedPod', () => {
  const simulator = useSimulator();

  it('throws while a container still runs (so the engine retries)', async () => {
    const { client } = await simulator({ pods: [spec({ uid: 't1' })] });
    const syncer = new RuntimeSyncer({ client });
    await expect(syncer.syncTerminatedPod(never, await podOf(client, 't1'), undefined)).rejects.toThrow(/still has 1 running/);
  });

  it('keeps the stopped containers and sandbox of a deleted pod', async () => {
    const { sim, client } = await simulator({ pods: [spec({ uid: 't2' })] });
    const syncer = new RuntimeSyncer({ client });
    const pod = await podOf(client, 't2');
    await syncer.syncTerminatingPod(never, pod, undefined, 5, undefined);
    await syncer.syncTerminatedPod(never, pod, undefined);
    expect(sim.state.containerIds()).toHaveLength(1);
    expect(sim.state.sandboxIds()).toHaveLength(1);
  });

  it('removes containers and sandboxes of an evicted pod', async () => {
    const { sim, client } = await simulator({ pods: [spec({ uid: 't3', containers: [{ name: 'a' }, { name: 'b' }] })] });
    const syncer = new RuntimeSyncer({ client });
    const pod = await podOf(client, 't3');
    await syncer.syncTerminatingPod(never, pod, undefined, 5, (s) => {
      s.phase = 'Failed';
      s.reason = 'Evicted';
    });
    await syncer.syncTerminatedPod(never, pod, undefined);
    expect(sim.state.containerIds()).toEqual([]);
    expect(sim.state.sandboxIds()).toEqual([]);
    const journal = sim.state.journal();
    expect(rpcs(journal, 'RemoveContainer')).toHaveLength(2);
    // containers go before their sandbox
    const lastContainerRemoval = journal.findLastIndex((r) => r.kind === 'rpc' && r.method === 'RemoveContainer');
    const sandboxRemoval = journal.findIndex((r) => r.kind === 'rpc' && r.method === 'RemovePodSandbox');
    expect(lastContainerRemoval).toBeLessThan(sandboxRemoval);
  });

  it('removes a pod annotated podctl.io/remove=true', async () => {
    const { sim, client } = await simulator({ pods: [spec({ uid: 't4', annotations: { 'podctl.io/remove': 'true' } })] });
    const syncer = new RuntimeSyncer({ client });
    const pod = await podOf(client, 't4');
    await syncer.syncTerminatingPod(never, pod, undefined, 5, undefined);
    await syncer.syncTerminatedPod(never, pod, undefined);
    expect(sim.state.sandboxIds()).toEqual([]);
  });
});

describe('RuntimeSyncer.syncPod', () => {
  const simulator = useSimulator();

  it('never starts anything and reports terminal by restart policy', async () => {
    const { sim, client } = await simulator({
      pods: [
        spec({ uid: 'never-done', restartPolicy: 'Never', containers: [{ name: 'a', state: 'exited', exitCode: 1 }] }),
        spec({ uid: 'onfail-bad', restartPolicy: 'OnFailure', containers: [{ name: 'a', state: 'exited', exitCode: 1 }] }),
        spec({ uid: 'onfail-ok', restartPolicy: 'OnFailure', containers: [{ name: 'a', state: 'exited', exitCode: 0 }] }),
        spec({ uid: 'always', restartPolicy: 'Always', containers: [{ name: 'a', state: 'exited', exitCode: 0 }] }),
        spec({ uid: 'never-running', restartPolicy: 'Never', containers: [{ name: 'a', state: 'exited' }, { name: 'b' }] }),
      ],
    });
    const { RuntimePodCache } = await import('../../../src/cri/cache/cache.js');
    const cache = new RuntimePodCache({ client });
    const syncer = new RuntimeSyncer({ client, cache });
    const results: Record<string, boolean> = {};
    for (const uid of ['never-done', 'onfail-bad', 'onfail-ok', 'always', 'never-running']) {
      const status = await cache.getNewerThan(uid, Date.now());
      results[uid] = await syncer.syncPod(never, 'sync', await podOf(client, uid), undefined, status);
    }
    expect(results).toEqual({ 'never-done': true, 'onfail-bad': false, 'onfail-ok': true, always: false, 'never-running': false });
    const mutating = ['RunPodSandbox', 'CreateContainer', 'StartContainer', 'StopContainer', 'StopPodSandbox'];
    const calls = sim.state.journal().filter((r) => r.kind === 'rpc' && mutating.includes(r.method));
    expect(calls).toHaveLength(0);
    cache.close();
  });

  it('a spec container that never ran keeps the pod non-terminal', () => {
    const pod: V1Pod = { metadata: { uid: 'x' }, spec: { restartPolicy: 'Never', containers: [{ name: 'a' }, { name: 'b' }] } };
    const status = { id: 'x', name: '', namespace: '', sandboxStatuses: [], containerStatuses: [{ id: '1', name: 'a', state: 'exited' as const, exitCode: 0 }] };
    expect(isTerminalByRestartPolicy(pod, status)).toBe(false);
    status.containerStatuses.push({ id: '2', name: 'b', state: 'exited', exitCode: 3 });
    expect(isTerminalByRestartPolicy(pod, status)).toBe(true);
  });
});
