/**
 * The node's API side never blocks the node: writes the API server cannot take are recorded in the
 * state dir (one per pod and reason) and sent by a later run; final deletes wait while the pod runs.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeAgentKubeconfig } from '../../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../../support/kube-api-server.js';
import { connectKube } from '../../../src/kube/index.js';
import { ApiNode, terminatedOnNode } from '../../../src/services/api/api-node.js';
import type { PodInfo } from '../../../src/domain/session-api.js';

let server: KubeApiServer;
let kubeconfig: string;
beforeAll(async () => {
  server = await startKubeApiServer();
  kubeconfig = writeAgentKubeconfig(mkdtempSync(path.join(tmpdir(), 'podctl-apinode-')), server);
});
afterAll(() => server.stop());
// every request podctl made as the agent is one the shipped RBAC grants
afterEach(() => expect(server.denied().map((r) => `${r.method} ${r.path}`)).toEqual([]));

describe('ApiNode', () => {
  it('records what an unreachable API server cannot take (deduplicated) and replays it later; final deletes wait for the pod to stop', async () => {
    const stateDir = mkdtempSync(path.join(tmpdir(), 'podctl-apinode-state-'));
    const pod = server.addPod({ metadata: { name: 'a', namespace: 'web' }, spec: { nodeName: 'node-1', containers: [] }, status: { phase: 'Running' } });
    const ref = { namespace: 'web', name: 'a', uid: pod.metadata.uid };
    const kube = await connectKube({ kind: 'kubeconfig', path: kubeconfig }, { node: 'node-1', timeoutMs: 500, retry: { baseMs: 20, budgetMs: 500 } });
    const warnings: string[] = [];
    const reporter = { warn: (m: string) => warnings.push(m), info: () => {}, debug: () => {} } as never;

    await server.stop();
    const apiNode = new ApiNode(kube, { node: 'node-1', stateDir, reporter });
    expect(await apiNode.event(pod, 'Normal', 'Killing', "Stopping pod's containers with a grace period of 3s")).toBe('pending');
    expect(await new ApiNode(kube, { node: 'node-1', stateDir, reporter }).event(pod, 'Normal', 'Killing', 'again')).toBe('pending');
    expect(await apiNode.status(ref, { phase: 'Failed', reason: 'Evicted', message: 'm' })).toBe('pending');
    expect(await apiNode.finalDelete(ref)).toBe('pending');
    expect(readdirSync(path.join(stateDir, 'api-pending')).sort()).toEqual([`${ref.uid}-event-Killing.json`, `${ref.uid}-final-delete.json`, `${ref.uid}-status.json`]);
    expect(warnings[0]).toMatch(/cannot reach the API server.*recorded; the next podctl run with a kubeconfig sends it/);

    await server.start();
    // the pod still runs here: the final delete stays recorded
    const first = await new ApiNode(kube, { node: 'node-1', stateDir, reporter }).replayPending(async () => true);
    expect(first).toEqual({ done: 2, left: 1 });
    expect(server.eventsFor('web', 'a')).toEqual([expect.objectContaining({ reason: 'Killing', message: 'again' })]);
    expect(server.getPod('web', 'a')?.status).toMatchObject({ phase: 'Failed', reason: 'Evicted' });
    expect(server.getPod('web', 'a')).toBeDefined();

    const second = await new ApiNode(kube, { node: 'node-1', stateDir, reporter }).replayPending(async () => false);
    expect(second).toEqual({ done: 1, left: 0 });
    expect(server.getPod('web', 'a')).toBeUndefined();
    expect(readdirSync(path.join(stateDir, 'api-pending'))).toEqual([]);
  });

  it('terminatedOnNode: no runtime pod, or a terminated worker with no running container', () => {
    const info = (state: PodInfo['state'], running: number) => ({ state, containersRunning: running }) as PodInfo;
    expect(terminatedOnNode(undefined)).toBe(true);
    expect(terminatedOnNode(info('terminated', 0))).toBe(true);
    expect(terminatedOnNode(info('finished', 0))).toBe(true);
    expect(terminatedOnNode(info('terminated', 1))).toBe(false);
    expect(terminatedOnNode(info('terminating', 0))).toBe(false);
    expect(terminatedOnNode(info('sync', 0))).toBe(false);
  });
});
