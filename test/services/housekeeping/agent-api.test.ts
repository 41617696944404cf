/**
 * The agent with the API server as its desired source (the local API server, test/support; the CRI
 * simulator): a pod deleted in the API is terminated with the API's grace and finished; a mirror pod
 * is counted and its static pod kept; a pod stuck past grace + stuck-after gets one
 * PodStuckTerminating Event.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator } from '../../../src/cri/simulator/index.js';
import { createMetrics } from '../../../src/metrics/registry.js';
import { runAgent, type AgentStep } from '../../../src/services/housekeeping/agent.js';
import { type KubeApiServer } from '../../support/kube-api-server.js';
import { TEST_KUBELET_ROOT } from '../../support/kubelet-root.js';
import { openAgentNode, startAgentWorld } from '../../support/agent-node.js';

let server: KubeApiServer;
let sim: RunningSimulator;
let dir: string;

beforeAll(async () => {
  ({ server, dir, sim } = await startAgentWorld('podctl-agent-api-', {
    timeScale: 1,
    pods: [
      { name: 'web', namespace: 'app', uid: 'uid-web', containers: [{ name: 'c', onSigterm: 'exit' }] },
      { name: 'gone', namespace: 'app', uid: 'uid-gone', containers: [{ name: 'c', onSigterm: 'exit' }] },
      { name: 'wedged', namespace: 'app', uid: 'uid-wedged', terminationGracePeriodSeconds: 1, containers: [{ name: 'c', onSigterm: 'ignore' }] },
      { name: 'etcd-node-1', namespace: 'kube-system', uid: 'uid-etcd', static: true, containers: [{ name: 'etcd' }] },
    ],
    faults: [],
  }));
});
afterAll(async () => {
  await sim?.close();
  await server?.stop();
});
// every request podctl made as the agent is one the shipped RBAC grants
afterEach(() => expect(server.denied().map((r) => `${r.method} ${r.path}`)).toEqual([]));

describe('podctl agent with the API server', () => {
  it('finishes a deletion, keeps the static pod its mirror stands for, and posts one Event for a stuck pod', async () => {
    for (const name of ['web', 'gone', 'wedged']) {
      server.addPod({
        metadata: { name, namespace: 'app', uid: `uid-${name}` },
        spec: { nodeName: 'node-1', terminationGracePeriodSeconds: name === 'wedged' ? 1 : 30, containers: [{ name: 'c' }] },
        status: { phase: 'Running' },
      });
    }
    server.addPod({
      metadata: { name: 'etcd-node-1', namespace: 'kube-system', uid: 'mirror-etcd', annotations: { 'kubernetes.io/config.mirror': 'h', 'kubernetes.io/config.source': 'api' } },
      spec: { nodeName: 'node-1', containers: [{ name: 'etcd' }] },
      status: { phase: 'Running' },
    });
    server.deletePod('app', 'gone', 2);

    const { api, session } = await openAgentNode(server, dir, sim);
    const metrics = createMetrics();
    const controller = new AbortController();
    const steps: AgentStep[] = [];
    let goneFinished = false;
    try {
      const done = runAgent({
        session,
        source: { kind: 'api' },
        api,
        kubeletRoot: TEST_KUBELET_ROOT,
        intervalMs: 200,
        stuckAfterMs: 300,
        metrics,
        signal: controller.signal,
        onStep: (step) => {
          steps.push(step);
          if (!goneFinished && server.getPod('app', 'gone') === undefined) {
            goneFinished = true;
            // then the wedged pod is deleted too, but its container cannot be stopped
            sim.setFaults([{ method: 'StopContainer', code: 2, details: 'device busy' }]);
            server.deletePod('app', 'wedged', 1);
          }
          const stuckEvents = server.eventsFor('app', 'wedged').filter((e) => e.reason === 'PodStuckTerminating');
          if (goneFinished && stuckEvents.length > 0 && steps.length > 3) controller.abort(new DOMException('done', 'AbortError'));
        },
      });
      const bound = setTimeout(() => controller.abort(new DOMException('bound', 'AbortError')), 20_000);
      await done.finally(() => clearTimeout(bound));
      expect(goneFinished).toBe(true); // the final delete once nothing ran
      expect((await session.getPod('uid-web'))?.containersRunning).toBe(1);
      expect((await session.getPod('uid-etcd'))?.containersRunning).toBe(1);
      const stuck = server.eventsFor('app', 'wedged').filter((e) => e.reason === 'PodStuckTerminating');
      expect(stuck).toHaveLength(1);
      expect(stuck[0]?.type).toBe('Warning');
      const text = await metrics.exposition();
      expect(text).toMatch(/^podctl_mirror_pods 1$/m);
      expect(text.split('\n').filter((l) => /^podctl_stuck_pods\{reason="[a-z-]+"\} 1$/.test(l))).toHaveLength(1);
      expect(text).toMatch(/^podctl_desired_pods\{static="true"\} 1$/m);
      expect(text).toMatch(/^podctl_runtime_operations_errors_total\{operation_type="stop_container"\} [1-9]/m);
    } finally {
      sim.setFaults([]);
      await session.close();
      api.close();
    }
  }, 60_000);
});
