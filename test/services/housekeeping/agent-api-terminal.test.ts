/**
 * The agent with the API server as its desired source: a pod whose phase in the API is Failed while
 * its container runs on the node is terminated with its grace and a Killing Event, as the kubelet
 * stops a terminal pod, and never deleted.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RunningSimulator } from '../../../src/cri/simulator/index.js';
import { createMetrics } from '../../../src/metrics/registry.js';
import { runAgent } from '../../../src/services/housekeeping/agent.js';
import { type KubeApiServer } from '../../support/kube-api-server.js';
import { openAgentNode, startAgentWorld } from '../../support/agent-node.js';

let server: KubeApiServer;
let sim: RunningSimulator;
let dir: string;

beforeAll(async () => {
  ({ server, dir, sim } = await startAgentWorld('podctl-agent-terminal-', {
    timeScale: 1,
    pods: [
      { name: 'web', namespace: 'app', uid: 'uid-web', containers: [{ name: 'c', onSigterm: 'exit' }] },
      { name: 'job', namespace: 'app', uid: 'uid-job', containers: [{ name: 'c', onSigterm: 'exit' }] },
    ],
  }));
});
afterAll(async () => {
  await sim?.close();
  await server?.stop();
});

it('the agent stops a pod Failed in the API whose container runs (a Killing Event with its grace), never deletes it', async () => {
  server.addPod({ metadata: { name: 'web', namespace: 'app', uid: 'uid-web' }, spec: { nodeName: 'node-1', containers: [{ name: 'c' }] }, status: { phase: 'Running' } });
  server.addPod({
    metadata: { name: 'job', namespace: 'app', uid: 'uid-job' },
    spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 9, containers: [{ name: 'c' }] },
    status: { phase: 'Failed' },
  });
  const { api, session } = await openAgentNode(server, dir, sim);
  const controller = new AbortController();
  let steps = 0;
  try {
    const done = runAgent({
      session,
      source: { kind: 'api' },
      api,
      intervalMs: 200,
      stuckAfterMs: 60_000,
      metrics: createMetrics(),
      signal: controller.signal,
      onStep: () => {
        steps += 1;
        // a few steps after the Event: the pod is not killed (nor announced) again
        if (server.eventsFor('app', 'job').length > 0 && steps > 4) controller.abort(new DOMException('done', 'AbortError'));
      },
    });
    const bound = setTimeout(() => controller.abort(new DOMException('bound', 'AbortError')), 20_000);
    await done.finally(() => clearTimeout(bound));
    expect(server.eventsFor('app', 'job')).toEqual([expect.objectContaining({ type: 'Normal', reason: 'Killing', message: "Stopping pod's containers with a grace period of 9s" })]);
    expect((await session.getPod('uid-job'))?.containersRunning).toBe(0);
    expect((await session.getPod('uid-web'))?.containersRunning).toBe(1);
    expect(server.requests.filter((r) => r.method === 'DELETE')).toEqual([]);
    expect(server.getPod('app', 'job')).toBeDefined();
    expect(server.denied().map((r) => `${r.method} ${r.path}`)).toEqual([]);
  } finally {
    await session.close();
    api.close();
  }
}, 60_000);
