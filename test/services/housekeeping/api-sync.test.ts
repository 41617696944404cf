/**
 * sync-known with the API server as the source of desired pods (services/housekeeping/api-sync.ts), against the
 * CRI simulator and the local API server: a deleted pod's kill, its Killing and FailedKillPod
 * Events, the final delete once it stopped.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/cri/simulator/index.js';
import { connectKube } from '../../../src/kube/index.js';
import { ApiNode } from '../../../src/services/api/api-node.js';
import { openSession } from '../../../src/session/open.js';
import { syncKnown } from '../../../src/services/housekeeping/sync-known.js';
import { writeAgentKubeconfig } from '../../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../../support/kube-api-server.js';
import { TEST_KUBELET_ROOT } from '../../support/kubelet-root.js';

let server: KubeApiServer;
let sim: RunningSimulator;
let dir: string;

beforeAll(async () => {
  server = await startKubeApiServer();
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-api-sync-'));
  sim = await startSimulator({
    socketPath: path.join(dir, 'cri.sock'),
    timeScale: 0.05,
    pods: [
      { name: 'a', namespace: 'web', uid: 'uid-a', containers: [{ name: 'c', onSigterm: 'exit' }] },
      { name: 'b', namespace: 'web', uid: 'uid-b', containers: [{ name: 'c', onSigterm: 'exit' }] },
      { name: 'wedged', namespace: 'web', uid: 'uid-wedged', containers: [{ name: 'c', onSigterm: 'exit' }] },
    ],
    // UNKNOWN: a failure the engine retries (UNAVAILABLE would be retried by the client within the call)
    faults: [{ method: 'StopContainer', code: 2, details: 'runtime hiccup', count: 1 }],
  });
});
afterAll(async () => {
  await sim?.close();
  await server?.stop();
});
// every request podctl made as the agent is one the shipped RBAC grants
afterEach(() => expect(server.denied().map((r) => `${r.method} ${r.path}`)).toEqual([]));

describe('startApiSync through sync-known', () => {
  it('a deleted pod: Killing with the API grace, FailedKillPod for a failed stop, then the final delete; the other pod stays', async () => {
    for (const name of ['a', 'b', 'wedged']) {
      server.addPod({
        metadata: { name, namespace: 'web', uid: `uid-${name}` },
        spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 30, containers: [{ name: 'c' }] },
        status: { phase: 'Running' },
      });
    }
    server.deletePod('web', 'a', 2);
    const kube = await connectKube({ kind: 'kubeconfig', path: writeAgentKubeconfig(dir, server) }, { node: 'node-1', timeoutMs: 2_000 });
    const session = await openSession({ stateDir: path.join(dir, 'state'), runtimeEndpoint: sim.endpoint, rpcTimeoutMs: 5_000 });
    try {
      const result = await syncKnown({ session, source: { kind: 'api' }, kubeletRoot: TEST_KUBELET_ROOT, api: new ApiNode(kube, { node: 'node-1', stateDir: path.join(dir, 'state') }) });
      expect(result.api?.deleting).toEqual([{ uid: 'uid-a', namespace: 'web', name: 'a', gracePeriodSeconds: 2 }]);
      expect(result.api?.finallyDeleted.map((p) => p.uid)).toEqual(['uid-a']);
      expect(result.orphanedRuntimePods).toEqual([]);
      const events = server.eventsFor('web', 'a');
      expect(events.find((e) => e.reason === 'Killing')).toMatchObject({ type: 'Normal', message: "Stopping pod's containers with a grace period of 2s", count: 1 });
      expect(events.find((e) => e.reason === 'FailedKillPod')).toMatchObject({ type: 'Warning', source: { component: 'podctl' } });
      expect(events.find((e) => e.reason === 'FailedKillPod')?.message).toMatch(/^error killing pod: .*runtime hiccup/);
      expect(server.getPod('web', 'a')).toBeUndefined();
      expect(server.getPod('web', 'b')).toBeDefined();
      expect((await session.getPod('uid-b'))?.containersRunning).toBe(1);
    } finally {
      await session.close();
    }
  }, 60_000);

  it('a deleted pod the runtime cannot stop: ExceededGracePeriod past its bound, and no final delete while it runs', async () => {
    server.deletePod('web', 'wedged', 1);
    sim.setFaults([{ method: 'StopContainer', code: 14, details: 'runtime wedged' }]);
    const kube = await connectKube({ kind: 'kubeconfig', path: writeAgentKubeconfig(dir, server) }, { node: 'node-1', timeoutMs: 2_000 });
    const session = await openSession({ stateDir: path.join(dir, 'state'), runtimeEndpoint: sim.endpoint, rpcTimeoutMs: 5_000 });
    try {
      server.requests.length = 0;
      const result = await syncKnown({ session, source: { kind: 'api' }, kubeletRoot: TEST_KUBELET_ROOT, api: new ApiNode(kube, { node: 'node-1', stateDir: path.join(dir, 'state') }) });
      expect(result.api?.stillRunning.map((p) => p.uid)).toEqual(['uid-wedged']);
      expect(result.api?.finallyDeleted).toEqual([]);
      expect(server.requests.filter((r) => r.method === 'DELETE')).toEqual([]);
      expect(server.getPod('web', 'wedged')?.metadata?.deletionTimestamp).toBeDefined();
      const reasons = server
        .eventsFor('web', 'wedged')
        .map((e) => e.reason)
        .sort();
      expect(reasons).toEqual(['ExceededGracePeriod', 'FailedKillPod', 'Killing']);
      expect(server.eventsFor('web', 'wedged').find((e) => e.reason === 'ExceededGracePeriod')?.message).toBe('Container runtime did not kill the pod within specified grace period.');
    } finally {
      sim.setFaults([]);
      await session.close();
    }
  }, 90_000);
});
