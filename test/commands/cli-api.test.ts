/**
 * The built CLI with an API server: `evict` reports to it and `sync-known` takes desired pods from
 * it. The API server is an in-process HTTP server; the node is the embedded simulator.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { writeKubeconfig } from '../kube/support.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');

interface Request {
  method: string;
  url: string;
  body: Record<string, unknown> | undefined;
}

describe('podctl with an API server', { timeout: 90_000 }, () => {
  const requests: Request[] = [];
  let desired: object[] = [];
  let server: http.Server;
  let sim: RunningSimulator;
  let common: string[];

  const podctl = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(process.execPath, [BIN, ...args, ...common], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' }, timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
      );
    });

  beforeAll(async () => {
    if (!existsSync(path.join(ROOT, 'dist', 'commands', 'evict.js'))) throw new Error('dist/ is missing: run `npm run build` first');
    server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        requests.push({ method: req.method ?? '', url: decodeURIComponent(req.url ?? ''), body: raw ? JSON.parse(raw) : undefined });
        res.setHeader('content-type', 'application/json');
        if (req.method === 'GET' && req.url?.startsWith('/api/v1/pods')) res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: desired }));
        else if (req.method === 'POST') res.end(raw);
        else if (req.method === 'PATCH') res.end(JSON.stringify({ metadata: {}, status: { phase: 'Failed' } }));
        else {
          res.statusCode = 404;
          res.end('{}');
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-cli-api-'));
    const kubeconfig = writeKubeconfig(dir, (server.address() as AddressInfo).port, 't', 'x');
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.05,
      pods: [
        { name: 'keep', namespace: 'web', uid: 'uid-keep', containers: [{ name: 'c', onSigterm: 'exit' }] },
        { name: 'stray', namespace: 'web', uid: 'uid-stray', containers: [{ name: 'c', onSigterm: 'exit' }] },
        { name: 'evictee', namespace: 'batch', uid: 'uid-evictee', containers: [{ name: 'c', onSigterm: 'exit' }] },
      ],
    });
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state'), '--kubeconfig', kubeconfig, '--node', 'node-7'];
  });

  afterAll(async () => {
    await sim?.close();
    server?.closeAllConnections();
    server?.close();
  });

  it('evict posts a Warning Event and marks the pod Failed/Evicted', async () => {
    const run = await podctl(['evict', 'batch/evictee', '--reason', 'DiskPressure', '--message', 'node is low on disk', '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ action: 'evict', apiServer: { eventsPosted: 1, statusPatched: 1, errors: [] }, pods: [{ outcome: 'terminated' }] });
    const event = requests.find((r) => r.method === 'POST' && r.url === '/api/v1/namespaces/batch/events');
    expect(event?.body).toMatchObject({ type: 'Warning', reason: 'DiskPressure', message: 'node is low on disk', involvedObject: { name: 'evictee', uid: 'uid-evictee' }, source: { host: 'node-7' } });
    const patch = requests.find((r) => r.method === 'PATCH' && r.url === '/api/v1/namespaces/batch/pods/evictee/status');
    expect(patch?.body).toEqual({ status: { phase: 'Failed', reason: 'DiskPressure', message: 'node is low on disk' } });
  });

  it('sync-known takes desired pods from the API server (this node only) and terminates the undesired runtime pod', async () => {
    desired = [{ metadata: { name: 'keep', namespace: 'web', uid: 'uid-keep' }, spec: { nodeName: 'node-7', containers: [{ name: 'c' }] } }];
    const run = await podctl(['sync-known', '--json']);
    expect(run.stderr).toContain('desired pod(s) from the API server');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result.source).toBe('api');
    expect(requests.some((r) => r.method === 'GET' && r.url.includes('fieldSelector=spec.nodeName=node-7'))).toBe(true);
    expect(result.orphanedRuntimePods.map((p: { name: string }) => p.name)).toContain('stray');
    expect(result.orphanedRuntimePods.map((p: { name: string }) => p.name)).not.toContain('keep');
  });
});
