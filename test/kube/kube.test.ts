/**
 * The API-server client against the local API server (test/support/kube-api-server.ts), which
 * follows the real REST conventions: Status errors, resourceVersion, DeleteOptions preconditions,
 * 409/429, strategic-merge patches.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { writeKubeconfig } from './support.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';
import { KubeError, connectKube, detectKube, IN_CLUSTER_TOKEN, type KubeClient } from '../../src/kube/index.js';

let server: KubeApiServer;
let kubeconfig: string;
let agentToken: string;
const connect = (options: { timeoutMs?: number; budgetMs?: number } = {}): Promise<KubeClient> =>
  connectKube({ kind: 'kubeconfig', path: kubeconfig }, { node: 'node-1', timeoutMs: options.timeoutMs ?? 2_000, retry: { baseMs: 50, budgetMs: options.budgetMs ?? 5_000 } });

const podOn = (name: string, node = 'node-1', extra: Record<string, unknown> = {}) => ({
  metadata: { name, namespace: 'web', labels: { app: name } },
  spec: { nodeName: node, terminationGracePeriodSeconds: 30, containers: [{ name: 'main', image: 'x' }] },
  status: { phase: 'Running' },
  ...extra,
});

beforeAll(async () => {
  server = await startKubeApiServer();
  // the client speaks as the agent: podctl's ServiceAccount under the RBAC shipped in deploy/
  agentToken = server.addAgent({ node: 'node-1' });
  kubeconfig = writeKubeconfig(mkdtempSync(path.join(tmpdir(), 'podctl-kube-')), server.port, 'test', agentToken);
});
afterAll(() => server.stop());
afterEach(() => {
  // every call the client made is one the shipped RBAC grants
  expect(server.denied().map((r) => `${r.method} ${r.path}`)).toEqual([]);
});
beforeEach(() => {
  server.pods.clear();
  server.events.clear();
  server.requests.length = 0;
  server.forbidden.clear();
});

describe('detectKube', () => {
  it('--kubeconfig, then $KUBECONFIG (first entry), then in-cluster; else none', () => {
    expect(detectKube('/a', { KUBECONFIG: '/b' })).toEqual({ kind: 'kubeconfig', path: '/a' });
    expect(detectKube(undefined, { KUBECONFIG: '/b:/c' })).toEqual({ kind: 'kubeconfig', path: '/b' });
    const inCluster = { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };
    expect(detectKube(undefined, inCluster, (p) => p === IN_CLUSTER_TOKEN)).toEqual({ kind: 'in-cluster' });
    expect(detectKube(undefined, inCluster, () => false)).toBeUndefined();
    expect(detectKube(undefined, {})).toBeUndefined();
    expect(detectKube(undefined, { KUBECONFIG: '' })).toBeUndefined();
  });
});

describe('connectKube against the local API server', () => {
  it("lists only this node's pods (fieldSelector spec.nodeName) with the list's resourceVersion", async () => {
    const mine = server.addPod(podOn('a'));
    server.addPod(podOn('b', 'node-2'));
    const kube = await connect();
    const list = await kube.listNodePodsVersioned();
    expect(list.pods.map((p) => p.metadata?.uid)).toEqual([mine.metadata.uid]);
    expect(list.resourceVersion).toBe(server.resourceVersion);
    const request = server.requests.find((r) => r.method === 'GET' && r.path === '/api/v1/pods');
    expect(request?.query.get('fieldSelector')).toBe('spec.nodeName=node-1');
  });

  it('Events: component podctl, one Event per pod and reason, written with create alone (the RBAC grants no other verb on events)', async () => {
    const pod = server.addPod(podOn('a'));
    const kube = await connect();
    await kube.postEvent(pod, 'Normal', 'Killing', "Stopping pod's containers with a grace period of 3s");
    // a second report of the same pod and reason (a retry, another podctl process): the Event is there already
    await (await connect()).postEvent(pod, 'Normal', 'Killing', "Stopping pod's containers with a grace period of 2s");
    await kube.postEvent(pod, 'Warning', 'FailedKillPod', 'error killing pod: x');
    const events = server.eventsFor('web', 'a');
    expect(events).toHaveLength(2);
    expect(server.requests.filter((r) => r.path.includes('/events')).map((r) => `${r.method} ${r.status}`)).toEqual(['POST 201', 'POST 409', 'POST 201']);
    const killing = events.find((e) => e.reason === 'Killing');
    expect(killing).toMatchObject({
      type: 'Normal',
      count: 1,
      message: "Stopping pod's containers with a grace period of 3s",
      involvedObject: { kind: 'Pod', name: 'a', namespace: 'web', uid: pod.metadata.uid },
      source: { component: 'podctl', host: 'node-1' },
    });
  });

  it('eviction status: strategic-merge patch of phase, reason, message and the DisruptionTarget condition', async () => {
    const pod = server.addPod(podOn('a', 'node-1', { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } }));
    const kube = await connect();
    await kube.markEvicted(pod, 'The node was low on resource: memory.');
    const patch = server.requests.find((r) => r.method === 'PATCH');
    expect(patch?.contentType).toBe('application/strategic-merge-patch+json');
    expect(patch?.path).toBe('/api/v1/namespaces/web/pods/a/status');
    const status = server.getPod('web', 'a')?.status;
    expect(status).toMatchObject({ phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory.' });
    expect(status?.conditions).toEqual([
      { type: 'Ready', status: 'True' },
      expect.objectContaining({ type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', message: 'The node was low on resource: memory.' }),
    ]);
  });

  it('a status patch that meets a conflict (the pod changed meanwhile) reads the pod again and retries', async () => {
    const pod = server.addPod(podOn('a'));
    const kube = await connect();
    // another client changes the pod between podctl's GET and its PATCH (resourceVersion precondition → 409)
    server.requests.length = 0;
    let changed = false;
    server.onAnswered = (r) => {
      if (!changed && r.method === 'GET' && r.path.endsWith('/pods/a')) {
        changed = true;
        server.updatePod('web', 'a', (p) => (p.metadata.labels.touched = 'yes'));
      }
    };
    try {
      expect(await kube.patchStatus({ namespace: 'web', name: 'a', uid: pod.metadata.uid }, { phase: 'Failed', reason: 'Terminated', message: 'm' })).toBe('patched');
    } finally {
      server.onAnswered = undefined;
    }
    const patches = server.requests.filter((r) => r.method === 'PATCH');
    expect(patches.map((p) => p.status)).toEqual([409, 200]);
    expect(server.getPod('web', 'a')?.status?.phase).toBe('Failed');
  });

  it('a status patch for a pod replaced under the same name (another UID) is not applied', async () => {
    server.addPod(podOn('a'));
    const kube = await connect();
    expect(await kube.patchStatus({ namespace: 'web', name: 'a', uid: 'an-older-uid' }, { phase: 'Failed', reason: 'Evicted', message: 'm' })).toBe('uid-changed');
    expect(server.getPod('web', 'a')?.status?.phase).toBe('Running');
    expect(await kube.patchStatus({ namespace: 'web', name: 'gone', uid: 'u' }, { phase: 'Failed', reason: 'Evicted', message: 'm' })).toBe('gone');
  });

  it('the final delete: DELETE with gracePeriodSeconds 0 and preconditions.uid; 409 and 404 are answers, not errors', async () => {
    const pod = server.addPod(podOn('a'));
    const kube = await connect();
    expect(await kube.finalDelete({ namespace: 'web', name: 'a', uid: 'another-uid' })).toBe('uid-changed');
    expect(server.getPod('web', 'a')).toBeDefined();
    expect(await kube.finalDelete({ namespace: 'web', name: 'a', uid: pod.metadata.uid })).toBe('deleted');
    expect(server.getPod('web', 'a')).toBeUndefined();
    expect(await kube.finalDelete({ namespace: 'web', name: 'a', uid: pod.metadata.uid })).toBe('gone');
    const deletes = server.requests.filter((r) => r.method === 'DELETE');
    expect(deletes.map((d) => d.status)).toEqual([409, 200, 404]);
    expect(deletes[1]?.body).toEqual({ kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0, preconditions: { uid: pod.metadata.uid } });
  });

  it("429 waits the server's Retry-After before retrying", async () => {
    server.addPod(podOn('a'));
    server.inject({ method: 'GET', path: /\/pods\/a$/, status: 429, retryAfter: 1 });
    const kube = await connect();
    const started = Date.now();
    expect((await kube.getPod('web', 'a'))?.metadata?.name).toBe('a');
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(server.requests.filter((r) => r.path.endsWith('/pods/a')).map((r) => r.status)).toEqual([429, 200]);
  });

  it('5xx and dropped connections back off and retry; past the budget the last error is reported', async () => {
    server.addPod(podOn('a'));
    server.inject({ method: 'GET', path: /\/pods\/a$/, status: 503 });
    server.inject({ method: 'GET', path: /\/pods\/a$/, drop: true });
    const kube = await connect();
    expect((await kube.getPod('web', 'a'))?.metadata?.name).toBe('a');
    expect(server.requests.filter((r) => r.path.endsWith('/pods/a')).map((r) => r.status)).toEqual([503, -1, 200]);

    server.inject({ method: 'GET', path: /\/pods\/a$/, status: 500, count: 100 });
    const error = await kube.getPod('web', 'a').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubeError);
    expect((error as KubeError).message).toMatch(/^get pod failed \(HTTP 500 InternalError\)/);
    expect(server.requests.filter((r) => r.status === 500).length).toBe(4); // attempts bound
  });

  it('401 and 403 are one line naming what is missing', async () => {
    server.addPod(podOn('a'));
    server.forbidden.add('delete pods');
    const kube = await connect();
    const forbidden = await kube.finalDelete({ namespace: 'web', name: 'a', uid: 'x' }).catch((e: unknown) => e);
    expect((forbidden as Error).message).toMatch(/^final delete of pod: forbidden \(HTTP 403\): the identity of kubeconfig .* lacks RBAC verb "delete" on resource "pods" in namespace web; grant it/);
    expect((forbidden as Error).message).not.toContain('\n');
    const agent = server.users.get(agentToken)!;
    server.users.delete(agentToken);
    try {
      const denied = await kube.listNodePods().catch((e: unknown) => e);
      expect((denied as Error).message).toMatch(/^list pods: the API server refused the credentials of kubeconfig .* \(HTTP 401 Unauthorized\)/);
    } finally {
      server.users.set(agentToken, agent);
    }
  });

  it('every request has a deadline', async () => {
    const silent = await import('node:http').then((http) => http.createServer(() => {}));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    const quiet = await connectKube({ kind: 'kubeconfig', path: writeKubeconfig(mkdtempSync(path.join(tmpdir(), 'podctl-kube-')), port) }, { node: 'n', timeoutMs: 200, retry: { budgetMs: 300 } });
    try {
      await expect(quiet.listNodePods()).rejects.toThrow(/no answer from the API server http:\/\/127\.0\.0\.1:\d+ within 200ms/);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  it('eviction: a PodDisruptionBudget with no disruption left answers 429 (blocked-by-pdb, naming it), another 429 is throttling, else the pod is deleted gracefully', async () => {
    server.addPod(podOn('guarded'));
    server.addPod(podOn('free'));
    server.addPdb('web', 'pdb', { app: 'guarded' }, 0);
    const kube = await connect();
    const blocked = await kube.evictPod({ namespace: 'web', name: 'guarded' }, 5);
    expect(blocked).toMatchObject({ outcome: 'blocked-by-pdb', retryAfterMs: 1000, budget: 'pdb', disruptionsAllowed: 0 });
    // a 429 whose Status names no disruption budget (API Priority and Fairness): throttling, not a budget
    server.inject({ method: 'POST', path: /\/pods\/free\/eviction$/, status: 429, retryAfter: 2 });
    expect(await kube.evictPod({ namespace: 'web', name: 'free' }, 5)).toMatchObject({ outcome: 'throttled', retryAfterMs: 2000 });
    expect(await kube.evictPod({ namespace: 'web', name: 'free' }, 5)).toEqual({ outcome: 'accepted' });
    expect(server.getPod('web', 'free')?.metadata).toMatchObject({ deletionGracePeriodSeconds: 5 });
    expect(server.getPod('web', 'guarded')?.metadata?.deletionTimestamp).toBeUndefined();
  });

  it('cordons the node and reads its Lease', async () => {
    server.addNode('node-1');
    const renewed = new Date(Date.now() - 5_000);
    server.setLease('node-1', renewed);
    const kube = await connect();
    await kube.setUnschedulable(true);
    expect(server.nodes.get('node-1')?.spec).toEqual({ unschedulable: true });
    expect((await kube.nodeLeaseRenewedAt())?.getTime()).toBe(renewed.getTime());
    server.leases.clear();
    expect(await kube.nodeLeaseRenewedAt()).toBeUndefined();
  });

  it('a missing kubeconfig is one clear error', async () => {
    await expect(connectKube({ kind: 'kubeconfig', path: '/nonexistent/kubeconfig' }, { node: 'n' })).rejects.toThrow(/cannot load kubeconfig \/nonexistent\/kubeconfig.*--kubeconfig/);
  });
});
