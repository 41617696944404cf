/** Following this node's pods in the API server during a long-running command (observe-only mode, as in watch). */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectKube } from '../../../src/kube/index.js';
import { ApiNode } from '../../../src/services/api/api-node.js';
import { ApiFollower } from '../../../src/services/api/api-follow.js';
import type { KillRequest, NodeSession, PodInfo } from '../../../src/domain/session-api.js';
import { writeAgentKubeconfig } from '../../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../../support/kube-api-server.js';

let server: KubeApiServer;
let dir: string;
beforeAll(async () => {
  server = await startKubeApiServer();
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-follow-'));
});
afterAll(() => server.stop());
// every request podctl made as the agent is one the shipped RBAC grants
afterEach(() => expect(server.denied().map((r) => `${r.method} ${r.path}`)).toEqual([]));

describe('ApiFollower without act', () => {
  it('reports deletions (and only shorter graces again), never kills nor deletes', async () => {
    server.addPod({ metadata: { name: 'a', namespace: 'web' }, spec: { nodeName: 'node-1', containers: [] }, status: { phase: 'Running' } });
    const kube = await connectKube({ kind: 'kubeconfig', path: writeAgentKubeconfig(dir, server) }, { node: 'node-1', timeoutMs: 2_000 });
    const notes: string[] = [];
    const session = { requestKill: () => Promise.reject(new Error('must not kill')), getPod: () => Promise.resolve(undefined) } as unknown as NodeSession;
    const follower = new ApiFollower({ session, api: new ApiNode(kube, { node: 'node-1', stateDir: dir }), act: false, onNote: (_l, m) => notes.push(m) });
    follower.start();
    await follower.source.synced();
    server.deletePod('web', 'a', 10);
    server.deletePod('web', 'a', 4);
    const end = Date.now() + 5_000;
    while (notes.length < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    const report = await follower.stop();
    expect(notes).toEqual(['API server: web/a deleted (grace 10s)', 'API server: web/a deleted (grace 4s)']);
    expect(report.deletionsHonoured).toEqual([expect.objectContaining({ name: 'a', gracePeriodSeconds: 4 })]);
    expect(report.finallyDeleted).toEqual([]);
    expect(server.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  });
});

describe('ApiFollower with act (the drain, the agent)', () => {
  it('kills a pod deleted in the API with its grace and the pod as the API server holds it (its spec orders the stop)', async () => {
    server.addPod({
      metadata: { name: 'b', namespace: 'web', uid: 'uid-follow-b' },
      spec: { nodeName: 'node-1', containers: [{ name: 'main' }], initContainers: [{ name: 'proxy', restartPolicy: 'Always' }] },
      status: { phase: 'Running' },
    });
    const kube = await connectKube({ kind: 'kubeconfig', path: writeAgentKubeconfig(dir, server) }, { node: 'node-1', timeoutMs: 2_000 });
    const kills: KillRequest[] = [];
    const running = { uid: 'uid-follow-b', namespace: 'web', name: 'b', state: 'sync', containersRunning: 1 } as unknown as PodInfo;
    const session = {
      requestKill: (request: KillRequest) => (kills.push(request), Promise.resolve({ uid: request.uid, handledBy: 'local', ownerPid: process.pid })),
      getPod: () => Promise.resolve(running),
    } as unknown as NodeSession;
    const follower = new ApiFollower({ session, api: new ApiNode(kube, { node: 'node-1', stateDir: dir }), act: true });
    follower.start();
    await follower.source.synced();
    server.deletePod('web', 'b', 6);
    const end = Date.now() + 5_000;
    while (!kills.some((k) => k.uid === 'uid-follow-b') && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    await follower.stop();
    expect(kills.filter((k) => k.uid === 'uid-follow-b')).toEqual([
      expect.objectContaining({
        uid: 'uid-follow-b',
        gracePeriodSeconds: 6,
        pod: expect.objectContaining({ spec: expect.objectContaining({ initContainers: [{ name: 'proxy', restartPolicy: 'Always' }] }) }),
      }),
    ]);
  });
});
