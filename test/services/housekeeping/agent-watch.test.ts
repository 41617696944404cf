/**
 * The agent follows the API server with watches (the local API server, test/support; the CRI
 * simulator): one list and one watch each for its node's pods and its Node, whatever the number of
 * steps; a pod deleted in the API is stopped when its watch event arrives, not at the next interval;
 * the drain annotation is read from the watched Node.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/cri/simulator/index.js';
import { observeRuntimeOperations } from '../../../src/cri/client/client.js';
import { runAgent, type AgentOptions, type AgentStep } from '../../../src/services/housekeeping/agent.js';
import { ApiNode } from '../../../src/services/api/api-node.js';
import type { NodeSession } from '../../../src/domain/session-api.js';
import { startKubeApiServer, type KubeApiServer, type RecordedRequest } from '../../support/kube-api-server.js';
import { addRunningPods, agentOptions, openAgentNode } from '../../support/agent-node.js';

let server: KubeApiServer;
let sim: RunningSimulator;
let dir: string;
let session: NodeSession;
let api: ApiNode;

const POD_NAMES = ['a', 'b', 'c', 'd', 'e'];

beforeAll(async () => {
  server = await startKubeApiServer();
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-agent-watch-'));
  sim = await startSimulator({
    socketPath: path.join(dir, 'cri.sock'),
    timeScale: 1,
    pods: POD_NAMES.map((name) => ({ name, namespace: 'app', uid: `uid-${name}`, containers: [{ name: 'c', onSigterm: 'exit' as const }] })),
    faults: [],
  });
  server.addNode('node-1');
  server.installNodeRestriction(); // the agent writes only with its node restriction in force
  addRunningPods(server, POD_NAMES, 30);
  ({ session, api } = await openAgentNode(server, dir, sim));
});
afterAll(async () => {
  await session?.close();
  api?.close();
  await sim?.close();
  await server?.stop();
});
afterEach(() => {
  // every request the agent made is one the shipped RBAC grants
  expect(server.denied().map((r) => `${r.method} ${r.path}`)).toEqual([]);
  server.requests.length = 0;
});

/** Runs the agent until `until` holds (checked after each step and every 20 ms) or the bound. */
async function runUntil(options: Partial<AgentOptions>, until: (steps: AgentStep[]) => boolean, boundMs = 20_000): Promise<AgentStep[]> {
  const controller = new AbortController();
  const steps: AgentStep[] = [];
  const running = runAgent(agentOptions({ session, api }, controller.signal, { onStep: (step) => steps.push(step), ...options }));
  const end = Date.now() + boundMs;
  while (!until(steps) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  controller.abort(new DOMException('test done', 'AbortError'));
  await running;
  return steps;
}

const isWatch = (r: RecordedRequest): boolean => r.query.get('watch') === '1';
/** The agent's check that its node restriction is in force (at start, then every minute): not per step. */
const isRestrictionCheck = (r: RecordedRequest): boolean => r.path.startsWith('/apis/authentication.k8s.io/') || r.path.startsWith('/apis/admissionregistration.k8s.io/');
const count = (test: (r: RecordedRequest) => boolean): number => server.requests.filter((r) => !isRestrictionCheck(r) && test(r)).length;

describe('podctl agent follows the API server with watches', () => {
  it('lists its pods and its Node once, then only watches them: no request per step', async () => {
    const steps = await runUntil({}, (s) => s.length >= 25);
    expect(steps.length).toBeGreaterThanOrEqual(25);
    expect(steps.every((s) => s.ok)).toBe(true);
    expect(count((r) => r.path === '/api/v1/pods' && !isWatch(r))).toBe(1);
    expect(count((r) => r.path === '/api/v1/nodes' && !isWatch(r))).toBe(1);
    // the first list may come from the watch cache
    expect(server.requests.find((r) => r.path === '/api/v1/pods' && !isWatch(r))?.query.get('resourceVersion')).toBe('0');
    expect(count((r) => r.path === '/api/v1/pods' && isWatch(r))).toBe(1);
    expect(count((r) => r.path === '/api/v1/nodes' && isWatch(r))).toBe(1);
    expect(count((r) => r.path === '/api/v1/nodes/node-1')).toBe(0); // no GET of the Node per step
    expect(count(() => true)).toBe(4);
    expect(server.requests.filter(isRestrictionCheck)).toHaveLength(4); // one check: SelfSubjectReview, discovery, the policy, its binding
    // and nothing was stopped: every pod is desired
    for (const name of POD_NAMES) expect((await session.getPod(`uid-${name}`))?.containersRunning).toBe(1);
  }, 30_000);

  it('stops a pod deleted in the API when the watch says so, long before the next interval', async () => {
    let stoppedAt = 0;
    const detach = observeRuntimeOperations((op) => {
      if (op.method === 'StopContainer' && stoppedAt === 0) stoppedAt = Date.now();
    });
    let deletedAt = 0;
    try {
      const steps = await runUntil({ intervalMs: 60_000 }, (s) => {
        if (s.length >= 1 && deletedAt === 0) {
          deletedAt = Date.now();
          server.deletePod('app', 'a', 3);
        }
        return stoppedAt > 0;
      });
      expect(stoppedAt).toBeGreaterThan(0);
      // one step at the start, one on the deletion's watch event: the 60 s interval never ran out
      expect(steps.length).toBeLessThanOrEqual(3);
      expect(stoppedAt - deletedAt).toBeLessThan(15_000);
      expect(server.eventsFor('app', 'a').some((e) => e.reason === 'Killing')).toBe(true);
      expect(count((r) => r.path === '/api/v1/pods' && !isWatch(r))).toBe(1);
    } finally {
      detach();
    }
  }, 30_000);

  it('stops a pod deleted in the API while a runtime listing is held, before that listing and the step it wakes end', async () => {
    // when the runtime is first asked to stop each container
    const stops = new Map<string, number>();
    const stop = sim.state.stopContainer.bind(sim.state);
    sim.state.stopContainer = (id, timeout, signal) => {
      if (!stops.has(id)) stops.set(id, Date.now());
      return stop(id, timeout, signal);
    };
    const cId = sim.state.listContainers(undefined).find((c) => c.labels?.['io.kubernetes.pod.uid'] === 'uid-c')?.id ?? '';
    let heldAt = 0;
    let deletedAt = 0;
    let released: Promise<number> | undefined;
    try {
      const steps = await runUntil({}, (s) => {
        if (s.length >= 3 && heldAt === 0) {
          // a relist in flight, held 4 s by the runtime (under the session's 5 s RPC bound)
          sim.faults.add({ method: 'ListContainers', delayMs: 4_000, count: 1 });
          released = session.listPods().then(() => Date.now());
          heldAt = Date.now();
        } else if (heldAt > 0 && deletedAt === 0 && Date.now() - heldAt >= 500) {
          // older than any listing a step accepts (its interval): the step the deletion wakes waits for the held one
          deletedAt = Date.now();
          server.deletePod('app', 'c', 30);
        }
        return deletedAt > 0 && stops.has(cId) && s.some((step) => step.full && step.at >= deletedAt);
      });
      const releasedAt = await released!;
      const stoppedAt = stops.get(cId) ?? Number.NaN;
      expect(stoppedAt).toBeGreaterThan(deletedAt);
      // acted on from the last listing: not behind the held one
      expect(stoppedAt).toBeLessThan(releasedAt);
      // and before the housekeeping step in flight at the deletion (or woken by it) ended: its listing waits for the held one
      const inFlight = steps.find((step) => step.full && step.at + step.ms >= deletedAt)!;
      expect(inFlight.at + inFlight.ms).toBeGreaterThan(stoppedAt);
      expect(server.eventsFor('app', 'c').some((e) => e.reason === 'Killing')).toBe(true);
    } finally {
      sim.state.stopContainer = stop;
      sim.setFaults([]);
    }
  }, 30_000);

  it("drains when the watched Node's annotation asks, without a GET of the Node", async () => {
    server.requests.length = 0;
    let asked = false;
    await runUntil({ intervalMs: 60_000 }, (s) => {
      if (s.length >= 1 && !asked) {
        asked = true;
        server.updateNode('node-1', (n) => (n.metadata.annotations = { 'podctl.io/drain': 'requested' }));
      }
      const drain = server.nodes.get('node-1')?.metadata.annotations?.['podctl.io/drain'];
      return drain === 'done' || drain === 'failed';
    });
    expect(['done', 'failed']).toContain(server.nodes.get('node-1')?.metadata.annotations?.['podctl.io/drain']);
    expect(count((r) => r.method === 'GET' && r.path === '/api/v1/nodes/node-1')).toBe(0);
  }, 40_000);
});
