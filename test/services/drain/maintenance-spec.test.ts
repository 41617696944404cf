/**
 * The agent's maintenance drain hands each pod it stops over CRI to the syncer as the API server
 * holds it (src/services/api/pod-specs.ts): the kill carries the API's spec, and the drain's result
 * ordering follows it.
 */
import { describe, expect, it } from 'vitest';
import type { ApiNode } from '../../../src/services/api/api-node.js';
import { checkMaintenance } from '../../../src/services/drain/maintenance.js';
import { FakeSession } from '../fake-session.js';

describe('the maintenance drain (kubelet down: over CRI)', () => {
  it("hands each pod's API spec with its kill", async () => {
    const session = new FakeSession([{ namespace: 'web', name: 'shop', behaviour: 'exits' }]);
    const uid = session.uidOf('web', 'shop');
    const apiPod = { metadata: { name: 'shop', namespace: 'web', uid }, spec: { nodeName: 'node-1', containers: [{ name: 'main' }], initContainers: [{ name: 'proxy', restartPolicy: 'Always' }] } };
    const kube = {
      getNode: async () => ({ annotations: { 'podctl.io/drain': 'requested' } }),
      annotateNode: async () => undefined,
      postNodeEvent: async () => undefined,
      setUnschedulable: async () => undefined,
      listNodePods: async () => [apiPod],
    };
    const outcome = await checkMaintenance({ session, api: { kube } as unknown as ApiNode, kubelet: { state: 'down', via: 'healthz', detail: 'no answer' } as never, node: 'node-1' });
    expect(outcome).toMatchObject({ action: 'drained' });
    expect(session.kills).toEqual([expect.objectContaining({ uid, pod: apiPod })]);
  });
});
