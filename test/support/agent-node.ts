/**
 * The agent of node-1 as the housekeeping tests run it in process, on the local API server and the
 * embedded simulator: its pods bound to the node, its API door as the DaemonSet's ServiceAccount,
 * a node session on the simulator, and the options the DaemonSet gives it (the API server as the
 * source, a step every 100 ms, the kubelet down), each test's own options last.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import type { NodeSession } from '../../src/domain/session-api.js';
import { connectKube } from '../../src/kube/index.js';
import { createMetrics } from '../../src/metrics/registry.js';
import type { AgentOptions } from '../../src/services/housekeeping/agent.js';
import { ApiNode } from '../../src/services/api/api-node.js';
import { openSession } from '../../src/session/open.js';
import { writeAgentKubeconfig } from '../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from './kube-api-server.js';

export interface AgentNode {
  session: NodeSession;
  api: ApiNode;
}

/**
 * The local API server with the agent's node restriction in force (the agent writes only then), a
 * fresh directory `<tmp>/<prefix>…`, and the simulator serving `sim` on a socket in it.
 */
export async function startAgentWorld(prefix: string, sim: Omit<Parameters<typeof startSimulator>[0], 'socketPath'>): Promise<{ server: KubeApiServer; dir: string; sim: RunningSimulator }> {
  const server = await startKubeApiServer();
  server.installNodeRestriction();
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { server, dir, sim: await startSimulator({ socketPath: path.join(dir, 'cri.sock'), ...sim }) };
}

/** Each pod (namespace app, uid `uid-<name>`, one container c) in the API server, Running on node-1 with `grace`. */
export function addRunningPods(server: KubeApiServer, names: readonly string[], grace: number): void {
  for (const name of names) {
    server.addPod({
      metadata: { name, namespace: 'app', uid: `uid-${name}` },
      spec: { nodeName: 'node-1', terminationGracePeriodSeconds: grace, containers: [{ name: 'c' }] },
      status: { phase: 'Running' },
    });
  }
}

/** The agent's API door (as the DaemonSet's ServiceAccount) and a session on `sim`, both keeping their state in `<dir>/state`. */
export async function openAgentNode(server: KubeApiServer, dir: string, sim: RunningSimulator, retry?: { budgetMs: number }): Promise<AgentNode> {
  const kube = await connectKube({ kind: 'kubeconfig', path: writeAgentKubeconfig(dir, server) }, { node: 'node-1', timeoutMs: 2_000, ...(retry ? { retry } : {}) });
  const api = new ApiNode(kube, { node: 'node-1', stateDir: path.join(dir, 'state') });
  const session = await openSession({ stateDir: path.join(dir, 'state'), runtimeEndpoint: sim.endpoint, rpcTimeoutMs: 5_000 });
  return { session, api };
}

/** The agent's options on `node`, stopped by `signal`; `options` last. */
export function agentOptions(node: AgentNode, signal: AbortSignal, options: Partial<AgentOptions> = {}): AgentOptions {
  return {
    session: node.session,
    source: { kind: 'api' },
    api: node.api,
    node: 'node-1',
    intervalMs: 100,
    stuckAfterMs: 60_000,
    metrics: createMetrics(),
    kubeletState: async () => ({ state: 'down', via: 'none', detail: 'test' }),
    signal,
    ...options,
  };
}
