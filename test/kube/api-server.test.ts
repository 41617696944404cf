/**
 * The local API server the tests use in place of a kube-apiserver (none can be installed on these
 * machines): its answers follow the real REST conventions, and where kubectl is installed a few of
 * them are cross-checked with it.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { writeKubeconfig } from './support.js';
import { mergePatch, startKubeApiServer, strategicMergePatch, type KubeApiServer } from '../support/kube-api-server.js';
import { attributesOf, authorize, loadShippedRbac } from '../support/rbac.js';

let server: KubeApiServer;

beforeAll(async () => {
  server = await startKubeApiServer();
});
afterAll(() => server.stop());
beforeEach(() => {
  server.pods.clear();
  server.token = 'abc';
});

function request(method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port: server.port,
        method,
        path: pathname,
        headers: { authorization: 'Bearer abc', ...(data ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(data)) } : {}), ...headers },
      },
      (res) => {
        let raw = '';
        res.on('data', (c: Buffer) => (raw += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: raw ? JSON.parse(raw) : undefined }));
      },
    );
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

const pod = (name: string, extra: Record<string, unknown> = {}) => ({
  metadata: { name, namespace: 'web' },
  spec: { nodeName: 'n1', terminationGracePeriodSeconds: 30, containers: [{ name: 'm', image: 'x' }] },
  status: { phase: 'Running' },
  ...extra,
});

describe('the local API server', () => {
  it('errors are Status objects; every object and list has a resourceVersion that rises', async () => {
    const missing = await request('GET', '/api/v1/namespaces/web/pods/nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'pods "nope" not found',
      reason: 'NotFound',
      details: { name: 'nope', kind: 'pods' },
      code: 404,
    });
    const a = server.addPod(pod('a'));
    const list = await request('GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1');
    expect(list.body.metadata.resourceVersion).toBe(a.metadata.resourceVersion);
    const b = server.addPod(pod('b'));
    expect(Number(b.metadata.resourceVersion)).toBeGreaterThan(Number(a.metadata.resourceVersion));
    expect((await request('GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dother')).body.items).toEqual([]);
    expect((await request('GET', '/api/v1/pods', undefined, { authorization: 'Bearer wrong' })).status).toBe(401);
  });

  it('graceful deletion: grace > 0 sets deletionTimestamp and deletionGracePeriodSeconds (only shrinking); grace 0 removes; a UID precondition mismatch is 409', async () => {
    const a = server.addPod(pod('a'));
    const first = await request('DELETE', '/api/v1/namespaces/web/pods/a', { gracePeriodSeconds: 10 });
    expect(first.status).toBe(200);
    expect(first.body.metadata.deletionGracePeriodSeconds).toBe(10);
    const at = Date.parse(first.body.metadata.deletionTimestamp);
    expect(at - Date.now()).toBeGreaterThan(8_000);
    expect((await request('DELETE', '/api/v1/namespaces/web/pods/a', { gracePeriodSeconds: 20 })).body.metadata.deletionGracePeriodSeconds).toBe(10);
    expect((await request('DELETE', '/api/v1/namespaces/web/pods/a', { gracePeriodSeconds: 3 })).body.metadata.deletionGracePeriodSeconds).toBe(3);
    const conflict = await request('DELETE', '/api/v1/namespaces/web/pods/a', { gracePeriodSeconds: 0, preconditions: { uid: 'not-it' } });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({ kind: 'Status', reason: 'Conflict', code: 409, message: `Precondition failed: UID in precondition: not-it, UID in object meta: ${a.metadata.uid}` });
    expect((await request('DELETE', '/api/v1/namespaces/web/pods/a', { gracePeriodSeconds: 0, preconditions: { uid: a.metadata.uid } })).status).toBe(200);
    expect(server.getPod('web', 'a')).toBeUndefined();
  });

  it('patches: merge and strategic-merge (conditions by type); other patch types are 415', async () => {
    server.addPod(pod('a'));
    const jsonPatch = await request('PATCH', '/api/v1/namespaces/web/pods/a/status', [{ op: 'replace', path: '/status/phase', value: 'Failed' }], { 'content-type': 'application/json-patch+json' });
    expect(jsonPatch.status).toBe(415);
    expect(jsonPatch.body).toMatchObject({ kind: 'Status', reason: 'UnsupportedMediaType', code: 415 });
    const base = { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } };
    expect(mergePatch(base, { status: { conditions: [{ type: 'X', status: 'True' }] } }).status.conditions).toEqual([{ type: 'X', status: 'True' }]);
    expect(
      strategicMergePatch(base, {
        status: {
          phase: 'Failed',
          conditions: [
            { type: 'Ready', status: 'False' },
            { type: 'X', status: 'True' },
          ],
        },
      }).status,
    ).toEqual({
      phase: 'Failed',
      conditions: [
        { type: 'Ready', status: 'False' },
        { type: 'X', status: 'True' },
      ],
    });
  });

  it('watch: events after the resourceVersion, bookmarks, and 410 Expired for a compacted one', async () => {
    const a = server.addPod(pod('a'));
    const from = a.metadata.resourceVersion;
    server.updatePod('web', 'a', (p) => (p.metadata.labels = { x: 'y' }));
    server.deletePod('web', 'a', 0);
    const lines: any[] = [];
    await new Promise<void>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port: server.port, path: `/api/v1/pods?watch=1&resourceVersion=${from}&allowWatchBookmarks=true`, headers: { authorization: 'Bearer abc' } }, (res) => {
        res.on('data', (c: Buffer) => {
          for (const l of c.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
          if (lines.length === 2) server.bookmark();
          if (lines.length === 3) {
            req.destroy();
            resolve();
          }
        });
      });
    });
    expect(lines.map((l) => l.type)).toEqual(['MODIFIED', 'DELETED', 'BOOKMARK']);
    expect(lines[2].object.metadata.resourceVersion).toBe(server.resourceVersion);
    server.compact();
    const expired = await new Promise<any>((resolve) => {
      http.get({ host: '127.0.0.1', port: server.port, path: `/api/v1/pods?watch=1&resourceVersion=${from}`, headers: { authorization: 'Bearer abc' } }, (res) => {
        let raw = '';
        res.on('data', (c: Buffer) => (raw += c.toString()));
        res.on('end', () => resolve(JSON.parse(raw.trim())));
      });
    });
    expect(expired).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
  });

  it('fault injection: 429 with Retry-After, then the normal answer', async () => {
    server.inject({ path: /\/pods$/, status: 429, retryAfter: 2 });
    const limited = await request('GET', '/api/v1/pods');
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('2');
    expect(limited.body).toMatchObject({ kind: 'Status', reason: 'TooManyRequests', code: 429 });
    expect((await request('GET', '/api/v1/pods')).status).toBe(200);
  });
});

describe('podctl as the agent: the RBAC shipped in deploy/', () => {
  const as = (token: string) => ({ authorization: `Bearer ${token}` });

  it('grants what deploy/ grants and answers 403 worded as RBAC to the rest (a planted request is noticed)', async () => {
    const token = server.addAgent({ node: 'n1' });
    server.requests.length = 0;
    server.addPod(pod('a'));
    expect((await request('GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1', undefined, as(token))).status).toBe(200);
    expect((await request('POST', '/api/v1/namespaces/web/events', { metadata: { name: 'e1' }, reason: 'Killing' }, as(token))).status).toBe(201);
    expect((await request('GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1', undefined, as(token))).status).toBe(404); // granted; none there
    expect(server.denied()).toEqual([]);
    // planted: calls the shipped RBAC does not grant
    const listEvents = await request('GET', '/api/v1/namespaces/web/events', undefined, as(token));
    expect(listEvents.status).toBe(403);
    expect(listEvents.body).toMatchObject({
      kind: 'Status',
      reason: 'Forbidden',
      code: 403,
      message: 'events is forbidden: User "system:serviceaccount:podctl-system:podctl" cannot list resource "events" in API group "" in the namespace "web"',
    });
    const patchEvent = await request('PATCH', '/api/v1/namespaces/web/events/e1', { count: 2 }, { ...as(token), 'content-type': 'application/merge-patch+json' });
    expect(patchEvent.body.message).toBe('events "e1" is forbidden: User "system:serviceaccount:podctl-system:podctl" cannot patch resource "events" in API group "" in the namespace "web"');
    const otherLease = await request('GET', '/apis/coordination.k8s.io/v1/namespaces/default/leases/n1', undefined, as(token));
    expect(otherLease.body.message).toBe(
      'leases.coordination.k8s.io "n1" is forbidden: User "system:serviceaccount:podctl-system:podctl" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "default"',
    );
    const pdbs = await request('GET', '/apis/policy/v1/poddisruptionbudgets', undefined, as(token));
    expect(pdbs.body.message).toBe(
      'poddisruptionbudgets.policy is forbidden: User "system:serviceaccount:podctl-system:podctl" cannot list resource "poddisruptionbudgets" in API group "policy" at the cluster scope',
    );
    expect(server.denied().map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /api/v1/namespaces/web/events',
      'PATCH /api/v1/namespaces/web/events/e1',
      'GET /apis/coordination.k8s.io/v1/namespaces/default/leases/n1',
      'GET /apis/policy/v1/poddisruptionbudgets',
    ]);
    // the admin token is not bound by it
    expect((await request('GET', '/api/v1/namespaces/web/events')).status).toBe(200);
  });

  it("the agent's pod list and watch must name its node (fieldSelector spec.nodeName)", async () => {
    const token = server.addAgent({ node: 'n1' });
    const all = await request('GET', '/api/v1/pods', undefined, as(token));
    expect(all.status).toBe(403);
    expect(all.body.message).toMatch(/cannot list resource "pods" in API group "" at the cluster scope: podctl's agent reads only the pods of its node \(fieldSelector spec.nodeName=n1\)$/);
    expect((await request('GET', '/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn2', undefined, as(token))).status).toBe(403);
    expect((await request('GET', '/api/v1/namespaces/web/pods?fieldSelector=metadata.name%3Da', undefined, as(token))).status).toBe(403);
  });

  it('the rules are read from deploy/: a grant removed there is refused', () => {
    const copy = mkdtempSync(path.join(tmpdir(), 'podctl-deploy-'));
    for (const file of readdirSync('deploy').filter((f) => f.endsWith('.yaml'))) {
      const text = readFileSync(path.join('deploy', file), 'utf8');
      writeFileSync(path.join(copy, file), file === 'clusterrole.yaml' ? text.replace(/resources: \["events"\]\n(\s+)verbs: \["create"\]/, 'resources: ["events"]\n$1verbs: ["get"]') : text);
    }
    const create = attributesOf('POST', '/api/v1/namespaces/web/events', new URLSearchParams());
    expect(authorize(loadShippedRbac('deploy'), create)).toBe(true);
    expect(authorize(loadShippedRbac(copy), create)).toBe(false);
    // a Role's rules hold only in its namespace
    expect(authorize(loadShippedRbac('deploy'), attributesOf('GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1', new URLSearchParams()))).toBe(true);
    expect(authorize(loadShippedRbac('deploy'), attributesOf('GET', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/n1', new URLSearchParams()))).toBe(false);
  });
});

const kubectl = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((p) => existsSync(p));

describe.skipIf(!kubectl)('cross-checked with kubectl', () => {
  it('kubectl reads, lists by field selector, deletes gracefully and reports NotFound against the local server', async () => {
    server.token = ''; // kubectl sends no bearer token over plain HTTP
    const kubeconfig = writeKubeconfig(mkdtempSync(path.join(tmpdir(), 'podctl-kubectl-')), server.port);
    const run = async (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
      try {
        const { stdout, stderr } = await promisify(execFile)(kubectl!, ['--kubeconfig', kubeconfig, ...args], { timeout: 20_000 });
        return { code: 0, stdout, stderr };
      } catch (error) {
        const e = error as { code?: number; stdout?: string; stderr?: string };
        return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
      }
    };
    const a = server.addPod(pod('a'));
    server.addPod({ ...pod('elsewhere'), spec: { ...pod('x').spec, nodeName: 'n2' } });
    expect((await run('get', 'pod', 'a', '-n', 'web', '-o', 'jsonpath={.metadata.uid} {.metadata.resourceVersion}')).stdout).toBe(`${a.metadata.uid} ${a.metadata.resourceVersion}`);
    expect((await run('get', 'pods', '-A', '--field-selector', 'spec.nodeName=n1', '-o', 'name')).stdout.trim()).toBe('pod/a');
    const missing = await run('get', 'pod', 'nope', '-n', 'web');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('Error from server (NotFound): pods "nope" not found');
    expect((await run('delete', 'pod', 'a', '-n', 'web', '--grace-period=7', '--wait=false')).stdout).toContain('pod "a" deleted');
    expect(server.getPod('web', 'a')?.metadata?.deletionGracePeriodSeconds).toBe(7);
  }, 60_000);
});
