import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import type { CriClient } from '../../../src/cri/client/client.js';
import { HookJournal } from '../../../src/cri/runtime/hook-journal.js';
import { groupRuntimePods, toRunningPod, toV1Pod } from '../../../src/cri/cache/pods.js';
import type { SimPodSpec, SimRecord } from '../../../src/cri/simulator/index.js';
import { RuntimeSyncer } from '../../../src/cri/runtime/syncer.js';
import { terminationOrdering } from '../../../src/cri/runtime/stop-order.js';
import { useSimulator } from '../support.js';

const never = new AbortController().signal;

async function podOf(client: CriClient, uid: string): Promise<V1Pod> {
  const pod = groupRuntimePods(await client.listPodSandbox(), await client.listContainers()).get(uid);
  if (!pod) throw new Error(`no pod ${uid}`);
  return toV1Pod(pod);
}

/** The pod as its spec declares it: `sidecars` move from containers to restartable init containers, in this order. */
function withSidecars(pod: V1Pod, sidecars: string[]): V1Pod {
  const containers = pod.spec?.containers ?? [];
  return {
    ...pod,
    spec: {
      ...pod.spec!,
      containers: containers.filter((c) => !sidecars.includes(c.name)),
      initContainers: sidecars.map((name) => ({ ...containers.find((c) => c.name === name)!, restartPolicy: 'Always' })),
    },
  };
}

function exitOrder(journal: readonly SimRecord[], names: Map<string, string>): string[] {
  return journal.filter((r): r is Extract<SimRecord, { kind: 'exit' }> => r.kind === 'exit').map((r) => names.get(r.id) ?? r.id);
}

function namesOf(sim: { state: { containerIds(): string[]; container(id: string): { metadata?: { name: string } | undefined } | undefined } }): Map<string, string> {
  return new Map(sim.state.containerIds().map((id) => [id, sim.state.container(id)?.metadata?.name ?? id]));
}

describe('the kill ordering of sidecars (restartable init containers)', () => {
  const simulator = useSimulator();

  it('stops sidecars only after every main container exited, in reverse spec order', async () => {
    const spec: SimPodSpec = {
      name: 'web',
      uid: 's1',
      containers: [{ name: 'app', onSigterm: { exitAfterSeconds: 0.6 } }, { name: 'mesh' }, { name: 'logs' }],
    };
    const { sim, client } = await simulator({ pods: [spec] });
    const pod = withSidecars(await podOf(client, 's1'), ['logs', 'mesh']);
    const started = Date.now();
    await new RuntimeSyncer({ client }).syncTerminatingPod(never, pod, undefined, 10, undefined);
    const journal = sim.state.journal();
    // app takes 0.6 s after SIGTERM; mesh (declared after logs) goes next, logs last
    expect(exitOrder(journal, namesOf(sim))).toEqual(['app', 'mesh', 'logs']);
    const sigterms = journal.filter((r): r is Extract<SimRecord, { kind: 'signal' }> => r.kind === 'signal' && r.signal === 'SIGTERM');
    const names = namesOf(sim);
    expect(sigterms.map((r) => names.get(r.id))).toEqual(['app', 'mesh', 'logs']);
    const appExit = journal.find((r) => r.kind === 'exit' && names.get(r.id) === 'app')!.at;
    const meshTerm = sigterms.find((r) => names.get(r.id) === 'mesh')!.at;
    expect(meshTerm).toBeGreaterThanOrEqual(appExit);
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
  });

  it('a sidecar waits for a main container that does not exit no longer than the grace left', async () => {
    const { sim, client } = await simulator({
      pods: [{ name: 'stuck', uid: 's2', containers: [{ name: 'app', onSigterm: 'ignore' }, { name: 'mesh' }] }],
    });
    const pod = withSidecars(await podOf(client, 's2'), ['mesh']);
    await new RuntimeSyncer({ client }).syncTerminatingPod(never, pod, undefined, 1, undefined);
    const names = namesOf(sim);
    const journal = sim.state.journal();
    // app is SIGKILLed at the 1 s grace; mesh's turn came by the bound (or app's exit), never before app's SIGTERM
    const stops = journal.filter((r): r is Extract<SimRecord, { kind: 'rpc' }> => r.kind === 'rpc' && r.method === 'StopContainer');
    expect(stops.map((r) => r.detail)).toEqual(['timeout=1', 'timeout=1']);
    const sigterm = (name: string): number => journal.find((r) => r.kind === 'signal' && r.signal === 'SIGTERM' && names.get(r.id) === name)!.at;
    // mesh waited for its turn until the grace bound (app never exits by itself), not longer
    expect(sigterm('mesh') - sigterm('app')).toBeGreaterThanOrEqual(900);
    expect(sigterm('mesh') - sigterm('app')).toBeLessThan(3000);
    expect(new Set(exitOrder(journal, names))).toEqual(new Set(['app', 'mesh']));
  });

  it('pods known only from the runtime stop every container in parallel', async () => {
    const { sim, client } = await simulator({
      pods: [{ name: 'r', uid: 's3', containers: [{ name: 'app', onSigterm: { exitAfterSeconds: 0.5 } }, { name: 'mesh' }] }],
    });
    const running = toRunningPod(groupRuntimePods(await client.listPodSandbox(), await client.listContainers()).get('s3')!);
    await new RuntimeSyncer({ client }).syncTerminatingRuntimePod(never, running);
    expect(exitOrder(sim.state.journal(), namesOf(sim))).toEqual(['mesh', 'app']);
  });

  it('no ordering for a pod without running sidecars; a sidecar waits only for running containers', async () => {
    const pod: V1Pod = { spec: { containers: [{ name: 'a' }, { name: 'b' }], initContainers: [{ name: 'init', restartPolicy: 'Always' }, { name: 'once' }] } };
    expect(terminationOrdering(pod, ['a', 'b'])).toBeUndefined();
    const ordering = terminationOrdering(pod, ['a', 'init'])!;
    const waited = ordering.waitForTurn('init', 5000, never);
    let done = false;
    void waited.then(() => (done = true));
    await new Promise((r) => setTimeout(r, 30));
    expect(done).toBe(false);
    ordering.containerTerminated('a');
    await expect(waited).resolves.toBe(true);
    await expect(ordering.waitForTurn('a', 5000, never)).resolves.toBe(false);
  });
});

describe('httpGet preStop hooks', () => {
  const simulator = useSimulator();
  const servers: http.Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  });

  async function server(status = 200): Promise<{ port: number; requests: { at: number; url: string; headers: http.IncomingHttpHeaders }[] }> {
    const requests: { at: number; url: string; headers: http.IncomingHttpHeaders }[] = [];
    const s = http.createServer((req, res) => {
      requests.push({ at: Date.now(), url: req.url ?? '', headers: req.headers });
      res.writeHead(status).end(status === 200 ? 'ok' : 'draining failed');
    });
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    return { port: (s.address() as AddressInfo).port, requests };
  }

  it("a host-network pod's hook reaches the node with path and headers before SIGTERM; its outcome is journaled", async () => {
    const { port, requests } = await server();
    const { sim, client } = await simulator({
      pods: [{ name: 'h', uid: 'h1', hostNetwork: true, containers: [{ name: 'app', preStop: { httpGet: { path: '/drain?x=1', port, httpHeaders: [{ name: 'X-Drain', value: 'yes' }] } } }] }],
    });
    const journal = new HookJournal();
    await new RuntimeSyncer({ client, hookJournal: journal }).syncTerminatingPod(never, await podOf(client, 'h1'), undefined, 5, undefined);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.url).toBe('/drain?x=1');
    expect(requests[0]!.headers['x-drain']).toBe('yes');
    const term = sim.state.journal().find((r) => r.kind === 'signal' && r.signal === 'SIGTERM')!;
    expect(requests[0]!.at).toBeLessThanOrEqual(term.at);
    expect(journal.take(['h1'])).toEqual([expect.objectContaining({ container: 'app', type: 'httpGet', outcome: 'succeeded' })]);
  });

  it('resolves a named port from the spec, and a hook that answers 500 is a failed hook', async () => {
    const { port, requests } = await server(500);
    const { client } = await simulator({
      pods: [{ name: 'h', uid: 'h2', containers: [{ name: 'app', preStop: { httpGet: { path: 'stop', port: 'admin' } } }] }],
    });
    const pod = await podOf(client, 'h2');
    pod.spec!.containers[0]!.ports = [{ name: 'admin', containerPort: port }];
    const journal = new HookJournal();
    await new RuntimeSyncer({ client, hookJournal: journal }).syncTerminatingPod(never, pod, undefined, 5, undefined);
    // the simulator's pod network answers on 127.0.0.1 (its sandbox status IP)
    expect(requests.map((r) => r.url)).toEqual(['/stop']);
    expect(journal.take(['h2'])).toEqual([expect.objectContaining({ type: 'httpGet', outcome: 'failed', message: expect.stringContaining('500') })]);
  });

  it('a hook that cannot run (unknown port name) is not-run, and the container is still stopped', async () => {
    const { sim, client } = await simulator({
      pods: [{ name: 'h', uid: 'h3', containers: [{ name: 'app', preStop: { httpGet: { port: 'nope' } } }] }],
    });
    const journal = new HookJournal();
    await new RuntimeSyncer({ client, hookJournal: journal }).syncTerminatingPod(never, await podOf(client, 'h3'), undefined, 5, undefined);
    expect(journal.take(['h3'])).toEqual([expect.objectContaining({ outcome: 'not-run', message: 'no container port named "nope"' })]);
    expect(sim.state.journal().some((r) => r.kind === 'exit')).toBe(true);
  });
});
