/** Following this node's pods in the API server during a long-running command (observe-only mode, as in watch). */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectKube } from '../../src/kube/index.js';
import { ApiNode } from '../../src/services/api-node.js';
import { ApiFollower } from '../../src/services/api-follow.js';
import type { NodeSession } from '../../src/domain/session-api.js';
import { writeAgentKubeconfig } from '../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';

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
