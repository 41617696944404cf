/**
 * The agent without the API server, and health that tells the truth (the local API server, the CRI
 * simulator): while the API server accepts connections and never answers, housekeeping goes on with
 * the last known pods — a pod whose owner died is taken over — but a runtime pod the API never named
 * is not terminated as an orphan until the API server answers again; /healthz says `api: unreachable
 * since …` and stays 200, podctl_api_reachable is 0 then 1. With a token the API server refuses,
 * /readyz turns 503 naming the 401 after a few failed steps while /healthz (liveness) stays 200.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedPods, startSimulator, type RunningSimulator } from '../../../src/cri/simulator/index.js';
import { connectKube } from '../../../src/kube/index.js';
import { createMetrics } from '../../../src/metrics/registry.js';
import { runAgent, type AgentOptions, type AgentStep, type MetricsAddress } from '../../../src/services/housekeeping/agent.js';
import { ApiNode } from '../../../src/services/api/api-node.js';
import { openSession } from '../../../src/session/open.js';
import { writeKubeconfig } from '../../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../../support/kube-api-server.js';
import { until } from '../../support/wait.js';

let server: KubeApiServer;
let sim: RunningSimulator;
let dir: string;

beforeAll(async () => {
  server = await startKubeApiServer();
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-agent-outage-'));
  sim = await startSimulator({
    socketPath: path.join(dir, 'cri.sock'),
    timeScale: 1,
    pods: [
      { name: 'web', namespace: 'app', uid: 'uid-web', containers: [{ name: 'c', onSigterm: 'exit' }] },
      { name: 'abandoned', namespace: 'app', uid: 'uid-abandoned', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'ignore' }] },
    ],
    faults: [],
  });
  server.addNode('node-1');
  for (const name of ['web', 'abandoned']) {
    server.addPod({
      metadata: { name, namespace: 'app', uid: `uid-${name}` },
      spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 30, containers: [{ name: 'c' }] },
      status: { phase: 'Running' },
    });
  }
});
afterAll(async () => {
  await sim?.close();
  await server?.stop();
});

async function get(listen: MetricsAddress, where: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://${listen.host}:${listen.port}${where}`);
  return { status: res.status, text: await res.text() };
}

/** Starts the agent; returns its steps, its address once listening, and a stop function. */
function startAgent(options: Omit<AgentOptions, 'signal' | 'metrics' | 'onStep' | 'onListening' | 'stuckAfterMs' | 'intervalMs' | 'source'>, metrics = createMetrics()) {
  const controller = new AbortController();
  const steps: AgentStep[] = [];
  let listen: MetricsAddress | undefined;
  const running = runAgent({
    source: { kind: 'api' },
    intervalMs: 200,
    stuckAfterMs: 60_000,
    node: 'node-1',
    listen: { host: '127.0.0.1', port: 0 },
    kubeletState: async () => ({ state: 'down', via: 'none', detail: 'test' }),
    apiBackoffMs: { base: 50, max: 200 },
    ...options,
    metrics,
    signal: controller.signal,
    onStep: (step) => steps.push(step),
    onListening: (a) => (listen = a),
  });
  return {
    steps,
    metrics,
    listen: () => listen,
    stop: async () => {
      controller.abort(new DOMException('test done', 'AbortError'));
      await running;
    },
  };
}

describe('podctl agent without the API server', () => {
  it('takes over a pod whose owner died while the API server does not answer, kills no orphan on stale data, and says so on /healthz', async () => {
    const stateDir = path.join(dir, 'state');
    const kube = await connectKube({ kind: 'kubeconfig', path: writeKubeconfig(dir, server.port) }, { node: 'node-1', timeoutMs: 500, watchIdleMs: 800, retry: { attempts: 2, budgetMs: 2_000 } });
    const api = new ApiNode(kube, { node: 'node-1', stateDir });
    const session = await openSession({ stateDir, runtimeEndpoint: sim.endpoint, rpcTimeoutMs: 5_000 });
    const agent = startAgent({ session, api });
    try {
      await until('a first step', () => agent.steps.some((s) => s.ok && s.full) && agent.listen() !== undefined, 20_000);
      const listen = agent.listen()!;

      // the API server stops answering: connections are accepted, nothing comes back, open watches go quiet
      server.stall = true;
      server.silence();
      await until('the agent to notice', async () => /^podctl_api_reachable 0$/m.test(await agent.metrics.exposition()), 20_000);
      const outage = await get(listen, '/healthz');
      expect(outage.status).toBe(200);
      expect(outage.text).toMatch(/^api: unreachable since \S+Z \(.+\): /m);
      expect((await get(listen, '/readyz')).status).toBe(200);

      // meanwhile: a pod no list ever named appears in the runtime, and a podctl that was terminating a pod dies
      seedPods(sim.state, [{ name: 'late', namespace: 'app', uid: 'uid-late', containers: [{ name: 'c', onSigterm: 'exit' }] }]);
      const owner = await openSession({ stateDir, runtimeEndpoint: sim.endpoint, rpcTimeoutMs: 5_000 });
      await owner.requestKill({ uid: 'uid-abandoned', gracePeriodSeconds: 30 });
      await owner.close();
      await until('the takeover', () => agent.steps.some((s) => s.resumed.includes('uid-abandoned')), 20_000);
      const stepsInOutage = agent.steps.length;
      await until('a few more steps', () => agent.steps.length >= stepsInOutage + 5, 20_000);
      expect(agent.steps.some((s) => s.orphaned.includes('uid-late'))).toBe(false);
      expect((await session.getPod('uid-late'))?.containersRunning).toBe(1);
      expect(await agent.metrics.exposition()).toMatch(/^podctl_housekeeping_steps_total\{result="stale"\} [1-9]/m);

      // the API server answers again: the orphan is confirmed by a fresh list and terminated
      server.unstall();
      await until('the orphan terminated', () => agent.steps.some((s) => s.orphaned.includes('uid-late')), 30_000);
      expect(await agent.metrics.exposition()).toMatch(/^podctl_api_reachable 1$/m);
      expect((await get(listen, '/healthz')).text).toMatch(/^api: ok since /m);
      expect((await session.getPod('uid-web'))?.containersRunning).toBe(1);
    } finally {
      server.unstall();
      await agent.stop();
      await session.close();
      api.close();
    }
  }, 90_000);

  it('with credentials the API server refuses: /readyz 503 naming the 401 after a few failed steps, /healthz 200', async () => {
    const stateDir = path.join(dir, 'state-401');
    const kube = await connectKube({ kind: 'kubeconfig', path: writeKubeconfig(mkdtempSync(path.join(dir, 'k-')), server.port, 'test', 'not-the-token') }, { node: 'node-1', timeoutMs: 2_000 });
    const api = new ApiNode(kube, { node: 'node-1', stateDir });
    const session = await openSession({ stateDir, runtimeEndpoint: sim.endpoint, rpcTimeoutMs: 5_000 });
    const agent = startAgent({ session, api });
    try {
      await until('three failed steps', () => agent.steps.filter((s) => !s.ok).length >= 3 && agent.listen() !== undefined, 20_000);
      const listen = agent.listen()!;
      const ready = await get(listen, '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.text.split('\n')[0]).toMatch(/api: .*HTTP 401/);
      expect(ready.text).toMatch(/^api: refused since /m);
      expect((await get(listen, '/healthz')).status).toBe(200);
      expect(await agent.metrics.exposition()).toMatch(/^podctl_housekeeping_steps_total\{result="failed"\} [3-9]/m);
    } finally {
      await agent.stop();
      await session.close();
      api.close();
    }
  }, 60_000);
});
