/**
 * The maintenance drain runs beside the agent's housekeeping (the local API server with the RBAC of
 * deploy/, the CRI simulator): while a drain waits on a PodDisruptionBudget, housekeeping steps keep
 * ending at their interval and /healthz says the loop makes progress; an agent stopped mid-drain
 * hands the drain on (a DrainHandedOn Event, the Node left `draining`, never `failed`), and the next
 * agent resumes it (DrainResumed) to `done`. The agent's own pod, known by POD_UID while its cgroup
 * file reads `0::/`, is never drained.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/cri/simulator/index.js';
import type { NodeSession } from '../../../src/domain/session-api.js';
import type { KubeletStatus } from '../../../src/kube/kubelet.js';
import { runAgent, type AgentStep, type MetricsAddress } from '../../../src/services/housekeeping/agent.js';
import { agentSelf } from '../../../src/services/housekeeping/agent-self.js';
import { ApiNode } from '../../../src/services/api/api-node.js';
import { startKubeApiServer, type KubeApiServer } from '../../support/kube-api-server.js';
import { agentOptions, openAgentNode } from '../../support/agent-node.js';
import { until } from '../../support/wait.js';

let server: KubeApiServer;
let sim: RunningSimulator;
let dir: string;
let session: NodeSession;
let api: ApiNode;

const owner = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'uid-rs', controller: true }];

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-agent-maintenance-'));
  server = await startKubeApiServer();
  server.addNode('node-1');
  server.installNodeRestriction();
  sim = await startSimulator({
    socketPath: path.join(dir, 'cri.sock'),
    timeScale: 0.1,
    pods: [
      { name: 'db', namespace: 'app', uid: 'uid-db', terminationGracePeriodSeconds: 10, containers: [{ name: 'c', onSigterm: 'exit' }] },
      { name: 'web', namespace: 'app', uid: 'uid-web', terminationGracePeriodSeconds: 10, containers: [{ name: 'c', onSigterm: 'exit' }] },
      { name: 'podctl-agent-x', namespace: 'podctl-system', uid: 'uid-agent', terminationGracePeriodSeconds: 10, containers: [{ name: 'agent', onSigterm: 'exit' }] },
    ],
  });
  for (const [namespace, name, uid, labels] of [
    ['app', 'db', 'uid-db', { app: 'db' }],
    ['app', 'web', 'uid-web', { app: 'web' }],
    ['podctl-system', 'podctl-agent-x', 'uid-agent', { app: 'podctl' }],
  ] as const) {
    server.addPod({
      metadata: { name, namespace, uid, labels, ownerReferences: owner },
      spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 10, containers: [{ name: 'c' }] },
      status: { phase: 'Running' },
    });
  }
  ({ session, api } = await openAgentNode(server, dir, sim, { budgetMs: 1_000 }));
});
afterEach(async () => {
  await session.close();
  api.close();
  await sim.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

const drainAnnotation = (): string | undefined => server.nodes.get('node-1')?.metadata.annotations?.['podctl.io/drain'];
const nodeEvents = (reason: string): string[] => [...server.events.values()].filter((e) => e.involvedObject?.kind === 'Node' && e.reason === reason).map((e) => String(e.message));

/** Starts the agent of node-1 (as the DaemonSet's, knowing its pod from POD_UID), stopped through the returned controller. */
function startAgent(kubelet: KubeletStatus, self: { podUid?: string; containerId?: string }, onStep?: (step: AgentStep) => void) {
  const controller = new AbortController();
  let listen: MetricsAddress | undefined;
  const done = runAgent(
    agentOptions({ session, api }, controller.signal, {
      kubeletState: async () => kubelet,
      ...(self.podUid ? { selfPodUid: self.podUid } : {}),
      ...(self.containerId ? { selfContainerId: self.containerId } : {}),
      listen: { host: '127.0.0.1', port: 0 },
      onListening: (a) => (listen = a),
      ...(onStep ? { onStep } : {}),
    }),
  );
  const healthz = async (): Promise<number> => (await fetch(`http://${listen!.host}:${listen!.port}/healthz`)).status;
  return { controller, done, healthz };
}

describe("the agent's maintenance drain beside housekeeping", () => {
  it('keeps the housekeeping cadence while a drain waits on a PDB; stopped, it hands on; the next agent resumes it to done', { timeout: 60_000 }, async () => {
    server.addPdb('app', 'db-budget', { app: 'db' }, 0);
    const running: KubeletStatus = { state: 'running', via: 'healthz', detail: 'test' };
    const cgroup = path.join(dir, 'cgroup');
    writeFileSync(cgroup, '0::/\n'); // a private cgroup namespace: the file names no container
    const self = await agentSelf({ POD_UID: 'uid-agent' }, cgroup);
    expect(self).toEqual({ podUid: 'uid-agent' });
    let stepsWhileDraining = 0;
    const first = startAgent(running, self, (step) => {
      if (drainAnnotation() === 'draining' && step.ok) stepsWhileDraining += 1;
    });
    server.updateNode('node-1', (n) => (n.metadata.annotations = { 'podctl.io/drain': 'requested' }));
    await until('the drain blocked by the budget', () => nodeEvents('DrainBlockedByPDB').length > 0, 20_000);
    const blockedAt = stepsWhileDraining;
    await until('housekeeping steps ending during the blocked drain', () => stepsWhileDraining >= blockedAt + 10, 20_000);
    expect(await first.healthz()).toBe(200);
    expect(drainAnnotation()).toBe('draining');

    first.controller.abort(new DOMException('SIGTERM', 'AbortError'));
    await first.done;
    expect(drainAnnotation()).toBe('draining');
    expect(nodeEvents('DrainHandedOn')).toEqual([
      expect.stringMatching(/stopped mid-drain of node node-1: the node stays podctl.io\/drain=draining and the agent that starts next on it resumes the drain/),
    ]);
    expect(nodeEvents('DrainFailed')).toEqual([]);

    // the budget allows the disruption now; the kubelet is down (stopped for the maintenance): over CRI
    server.pdbs.get('app/db-budget')!.status.disruptionsAllowed = 1;
    const second = startAgent({ state: 'down', via: 'healthz+process', detail: 'test' }, self);
    await until('the resumed drain ends', () => drainAnnotation() === 'done' || drainAnnotation() === 'failed', 40_000);
    second.controller.abort(new DOMException('test done', 'AbortError'));
    await second.done;
    expect(drainAnnotation()).toBe('done');
    expect(nodeEvents('DrainResumed')).toHaveLength(1);
    expect(nodeEvents('DrainStarted')).toHaveLength(1);
    const states = new Map((await session.listPods()).map((p) => [p.uid, p.containersRunning]));
    expect(states.get('uid-db')).toBe(0);
    expect(states.get('uid-web')).toBe(0);
    expect(states.get('uid-agent'), 'the agent never drains its own pod').toBe(1);
  });
});
