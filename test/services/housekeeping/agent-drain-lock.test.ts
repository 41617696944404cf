/**
 * Rolling maintenance without an orchestrator: the agents of two nodes (each its own CRI simulator,
 * state dir and token, under the RBAC of deploy/) against one local API server, both Nodes annotated
 * `podctl.io/drain=requested` at once. At most one drains at a time, held by the Lease
 * podctl-drain-0 in podctl-system: the other says `queued` and why (podctl.io/drain-message and a
 * DrainQueued Event) until the first is done, then drains. A holder that dies mid-drain stops
 * renewing its Lease; once it has expired the next node takes it over.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/cri/simulator/index.js';
import type { NodeSession } from '../../../src/domain/session-api.js';
import { connectKube } from '../../../src/kube/index.js';
import { createMetrics } from '../../../src/metrics/registry.js';
import { runAgent } from '../../../src/services/housekeeping/agent.js';
import { ApiNode } from '../../../src/services/api/api-node.js';
import { openSession } from '../../../src/session/open.js';
import { writeAgentKubeconfig } from '../../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../../support/kube-api-server.js';
import { until } from '../../support/wait.js';

interface TestNode {
  name: string;
  sim: RunningSimulator;
  session: NodeSession;
  api: ApiNode;
}

let server: KubeApiServer;
let dir: string;
let nodes: TestNode[];

/** A node whose one pod ignores SIGTERM: its drain over CRI lasts the pod's grace. */
async function addTestNode(name: string, graceSeconds: number): Promise<TestNode> {
  const home = path.join(dir, name);
  mkdirSync(home);
  server.addNode(name);
  const uid = `uid-web-${name}`;
  const sim = await startSimulator({
    socketPath: path.join(home, 'cri.sock'),
    timeScale: 1,
    pods: [{ name: `web-${name}`, namespace: 'app', uid, terminationGracePeriodSeconds: graceSeconds, containers: [{ name: 'c', onSigterm: 'ignore' }] }],
  });
  server.addPod({
    metadata: { name: `web-${name}`, namespace: 'app', uid, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'uid-rs', controller: true }] },
    spec: { nodeName: name, terminationGracePeriodSeconds: graceSeconds, containers: [{ name: 'c' }] },
    status: { phase: 'Running' },
  });
  const kube = await connectKube({ kind: 'kubeconfig', path: writeAgentKubeconfig(home, server, name) }, { node: name, timeoutMs: 2_000, retry: { budgetMs: 1_000 } });
  const api = new ApiNode(kube, { node: name, stateDir: path.join(home, 'state') });
  const session = await openSession({ stateDir: path.join(home, 'state'), runtimeEndpoint: sim.endpoint, rpcTimeoutMs: 5_000 });
  return { name, sim, session, api };
}

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-drain-lock-'));
  server = await startKubeApiServer();
  server.installNodeRestriction();
  nodes = [];
});
afterEach(async () => {
  for (const node of nodes) {
    await node.session.close();
    node.api.close();
    await node.sim.close();
  }
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The agent of a node (the kubelet down: the drain goes over CRI), with the drain lock of one slot. */
function startAgent(node: TestNode, leaseDurationSeconds = 60) {
  const controller = new AbortController();
  const done = runAgent({
    session: node.session,
    source: { kind: 'api' },
    api: node.api,
    node: node.name,
    intervalMs: 100,
    stuckAfterMs: 60_000,
    metrics: createMetrics(),
    kubeletState: async () => ({ state: 'down', via: 'healthz+process', detail: 'test' }),
    drainLock: { namespace: 'podctl-system', slots: 1, leaseDurationSeconds, retryMs: 200 },
    signal: controller.signal,
  });
  return { stop: async () => (controller.abort(new DOMException('test done', 'AbortError')), await done) };
}

const annotation = (node: string, key = 'podctl.io/drain'): string | undefined => server.nodes.get(node)?.metadata.annotations?.[key];
const nodeEvents = (node: string, reason: string): string[] =>
  [...server.events.values()].filter((e) => e.involvedObject?.kind === 'Node' && e.involvedObject?.name === node && e.reason === reason).map((e) => String(e.message));
const lease = () => server.namespacedLeases.get('podctl-system/podctl-drain-0');

/** Samples every node's drain annotation until `done` holds (bounded); returns every change seen, in order. */
async function watchUntil(what: string, done: () => boolean, boundMs: number): Promise<string[]> {
  const seen: string[] = [];
  const last = new Map<string, string | undefined>();
  const sampled = (): boolean => {
    if (done()) return true;
    for (const { name } of nodes) {
      const now = annotation(name);
      if (last.get(name) !== now) seen.push(`${name}=${now}`);
      last.set(name, now);
    }
    return false;
  };
  await until(what, sampled, { timeoutMs: boundMs, everyMs: 20, detail: () => `seen: ${seen.join(', ')}` });
  return seen;
}

describe('the drain lock (a coordination.k8s.io Lease)', () => {
  it('two nodes asked at once: one drains, the other is queued and says why, then drains when the first is done', { timeout: 60_000 }, async () => {
    nodes.push(await addTestNode('node-1', 2), await addTestNode('node-2', 2));
    const agents = nodes.map((n) => startAgent(n));
    for (const { name } of nodes) server.updateNode(name, (n) => (n.metadata.annotations = { 'podctl.io/drain': 'requested' }));
    const seen = await watchUntil("every node's drain ended", () => nodes.every((n) => annotation(n.name) === 'done' || annotation(n.name) === 'failed'), 45_000);
    for (const agent of agents) await agent.stop();

    expect(nodes.map((n) => annotation(n.name))).toEqual(['done', 'done']);
    // never both draining: the second drains only after the first is done
    const draining = seen.filter((s) => s.endsWith('=draining'));
    expect(draining, seen.join(', ')).toHaveLength(2);
    const [first, second] = draining.map((s) => s.split('=')[0]!);
    expect(first).not.toBe(second);
    expect(seen.indexOf(`${first}=done`), seen.join(', ')).toBeLessThan(seen.indexOf(`${second}=draining`));
    expect(seen).toContain(`${second}=queued`);
    expect(nodeEvents(second!, 'DrainQueued')).toEqual([`podctl agent: the drain of node ${second} waits: at most 1 node(s) drain at once: Lease podctl-drain-0 held by node ${first}`]);
    expect(nodeEvents(first!, 'DrainQueued')).toEqual([]);
    expect(annotation(second!, 'podctl.io/drain-message'), 'the message goes once the drain starts').toBeUndefined();
    // released when the second drain ended: the slot is free
    expect(lease()?.spec.holderIdentity).toBeUndefined();
    expect(server.denied()).toEqual([]);
  });

  it('a holder that dies mid-drain: its Lease expires and the next node takes it over', { timeout: 60_000 }, async () => {
    nodes.push(await addTestNode('node-1', 60), await addTestNode('node-2', 1));
    const [one, two] = nodes as [TestNode, TestNode];
    const holder = startAgent(one, 2);
    server.updateNode('node-1', (n) => (n.metadata.annotations = { 'podctl.io/drain': 'requested' }));
    await watchUntil(
      'node-1 draining under the lock',
      () => annotation('node-1') === 'draining' && lease()?.spec.holderIdentity === 'node-1' && nodeEvents('node-1', 'DrainStarted').length === 1,
      20_000,
    );
    await holder.stop(); // stopped mid-drain: it renews its Lease no more
    expect(lease()?.spec.holderIdentity).toBe('node-1');

    const next = startAgent(two, 2);
    server.updateNode('node-2', (n) => (n.metadata.annotations = { 'podctl.io/drain': 'requested' }));
    await watchUntil('node-2 queued', () => annotation('node-2') === 'queued', 10_000);
    expect(annotation('node-2', 'podctl.io/drain-message')).toBe('waiting for the drain lock: at most 1 node(s) drain at once: Lease podctl-drain-0 held by node node-1');
    const seen = await watchUntil("node-2's drain ended", () => annotation('node-2') === 'done' || annotation('node-2') === 'failed', 30_000);
    await next.stop();
    expect(annotation('node-2')).toBe('done');
    expect(seen).toContain('node-2=draining');
    expect(lease()?.spec.leaseTransitions).toBe(1);
    expect(lease()?.spec.holderIdentity).toBeUndefined();
  });
});
