/**
 * The API-server wrapper against a real in-process HTTP server standing in for the API server.
 */
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeKubeconfig } from './support.js';
import { KubeError, connectKube, detectKube, IN_CLUSTER_TOKEN } from '../../src/kube/index.js';

interface Seen {
  method: string;
  url: string;
  contentType: string | undefined;
  body: unknown;
}

const seen: Seen[] = [];
let server: http.Server;
let kubeconfig: string;
let slow = false;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', contentType: req.headers['content-type'], body: raw ? JSON.parse(raw) : undefined });
      if (slow) return; // never answers
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET' && req.url?.startsWith('/api/v1/pods')) {
        res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [{ metadata: { name: 'a', namespace: 'web', uid: 'u1' }, spec: { nodeName: 'node-1', containers: [] } }] }));
      } else if (req.method === 'POST' && req.url === '/api/v1/namespaces/web/events') {
        res.statusCode = 201;
        res.end(raw);
      } else if (req.method === 'PATCH' && req.url === '/api/v1/namespaces/web/pods/a/status') {
        res.end(JSON.stringify({ metadata: { name: 'a', namespace: 'web' }, status: { phase: 'Failed' } }));
      } else if (req.method === 'PATCH') {
        res.statusCode = 403;
        res.end(JSON.stringify({ kind: 'Status', status: 'Failure', message: 'forbidden', code: 403 }));
      } else {
        res.statusCode = 404;
        res.end('{}');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const dir = mkdtempSync(path.join(tmpdir(), 'podctl-kube-'));
  kubeconfig = writeKubeconfig(dir, port);
});

afterAll(() => {
  server?.closeAllConnections();
  server?.close();
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

describe('connectKube against an HTTP API server', () => {
  it('lists this node\'s pods with fieldSelector spec.nodeName', async () => {
    const kube = await connectKube({ kind: 'kubeconfig', path: kubeconfig }, { node: 'node-1' });
    const pods = await kube.listNodePods();
    expect(pods.map((p) => p.metadata?.uid)).toEqual(['u1']);
    const request = seen.find((s) => s.method === 'GET');
    expect(decodeURIComponent(request?.url ?? '')).toContain('fieldSelector=spec.nodeName=node-1');
  });

  it('posts a pod Event and merge-patches the status to Failed/Evicted', async () => {
    const kube = await connectKube({ kind: 'kubeconfig', path: kubeconfig }, { node: 'node-1' });
    const pod = { metadata: { name: 'a', namespace: 'web', uid: 'u1' } };
    await kube.postEvent(pod, 'Warning', 'DiskPressure', 'low disk');
    await kube.markEvicted(pod, { reason: 'DiskPressure', message: 'low disk' });
    const event = seen.find((s) => s.method === 'POST');
    expect(event?.body).toMatchObject({
      type: 'Warning',
      reason: 'DiskPressure',
      message: 'low disk',
      involvedObject: { kind: 'Pod', name: 'a', namespace: 'web', uid: 'u1' },
      source: { component: 'podctl', host: 'node-1' },
    });
    const patch = seen.find((s) => s.method === 'PATCH');
    expect(patch?.contentType).toBe('application/merge-patch+json');
    expect(patch?.body).toEqual({ status: { phase: 'Failed', reason: 'DiskPressure', message: 'low disk' } });
  });

  it('an API error becomes a KubeError naming the call and the kubeconfig', async () => {
    const kube = await connectKube({ kind: 'kubeconfig', path: kubeconfig }, { node: 'node-1' });
    const error = await kube.markEvicted({ metadata: { name: 'other', namespace: 'web' } }, { reason: 'Evicted', message: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubeError);
    expect((error as KubeError).message).toMatch(/^patch pod status failed \(HTTP 403\).*kubeconfig .*config/);
  });

  it('every request has a deadline', async () => {
    slow = true;
    try {
      const kube = await connectKube({ kind: 'kubeconfig', path: kubeconfig }, { node: 'node-1', timeoutMs: 200 });
      await expect(kube.listNodePods()).rejects.toThrow(/no answer from the API server within 200 ms/);
    } finally {
      slow = false;
    }
  });

  it('a missing kubeconfig is one clear error', async () => {
    await expect(connectKube({ kind: 'kubeconfig', path: '/nonexistent/kubeconfig' }, { node: 'n' })).rejects.toThrow(/cannot load kubeconfig \/nonexistent\/kubeconfig.*--kubeconfig/);
  });
});
