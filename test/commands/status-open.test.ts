/**
 * What `podctl status` asks first: the runtime's listing goes out before the kubelet check, so the
 * check (healthz, then a /proc scan when refused) runs while the runtime answers — it does not wait
 * for the runtime's first answer (Version). Needs `npm run build`.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoNode, startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { startHealthz } from '../support/healthz.js';

const ROOT = process.cwd();

function podctl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(ROOT, 'bin', 'run.js'), ...args],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

let sim: RunningSimulator;
let healthz: { url: string; close(): void };
let dir: string;
/** The runtime calls the simulator had received when each healthz request came in. */
const seenAtHealthz: string[][] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-status-open-'));
  sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), pods: demoNode(6) });
  healthz = await startHealthz(() => seenAtHealthz.push(sim.state.journal().flatMap((r) => (r.kind === 'rpc' ? [r.method] : []))));
});
afterAll(async () => {
  healthz?.close();
  await sim?.close();
});

describe('podctl status', { timeout: 60_000 }, () => {
  it('asks the runtime for its listing before it asks the kubelet, and still reports the kubelet', async () => {
    const url = healthz.url;
    const run = await podctl(['status', '-o', 'json', '--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state'), '--kubelet-healthz', url]);
    expect(run.code, run.stderr).toBe(0);
    const json = JSON.parse(run.stdout) as { kubelet: { state: string; detail: string }; pods: unknown[] };
    expect(json.kubelet.state, json.kubelet.detail).toBe('running');
    expect(json.pods).toHaveLength(6);
    expect(seenAtHealthz).toHaveLength(1);
    expect(seenAtHealthz[0]).toEqual(expect.arrayContaining(['Version', 'ListPodSandbox']));
  });

  it('asks the kubelet while the runtime has not answered yet (Version held back 1 s)', async () => {
    const slow = await startSimulator({ socketPath: path.join(dir, 'slow.sock'), pods: demoNode(3), faults: [{ method: 'Version', delayMs: 1_000, proceed: true }] });
    const askedAt: number[] = [];
    const kubelet = await startHealthz(() => askedAt.push(Date.now()));
    try {
      const run = await podctl(['status', '-o', 'json', '--runtime-endpoint', slow.endpoint, '--state-dir', path.join(dir, 'state-slow'), '--kubelet-healthz', kubelet.url]);
      expect(run.code, run.stderr).toBe(0);
      expect((JSON.parse(run.stdout) as { pods: unknown[] }).pods).toHaveLength(3);
      const held = slow.state.journal().find((r) => r.kind === 'fault' && r.method === 'Version');
      expect(askedAt).toHaveLength(1);
      // the kubelet was asked before Version's answer went out (held ≥ 1 s from when it came in)
      expect(askedAt[0]!).toBeLessThan(held!.at + 1_000);
    } finally {
      kubelet.close();
      await slow.close();
    }
  });

  it("asks the kubelet before the runtime's first bytes come back (its connection answered 1.2 s late)", async () => {
    // a runtime slow to answer a connection at all: a proxy that holds each connection 1.2 s before
    // it passes it on to the simulator (within the 2 s connect bound)
    const socketPath = path.join(dir, 'late.sock');
    let forwarded = false;
    const proxy = net.createServer((client) => {
      client.pause();
      setTimeout(() => {
        forwarded = true;
        const upstream = net.connect(sim.socketPath, () => client.resume());
        client.pipe(upstream).pipe(client);
        upstream.on('error', () => client.destroy());
        client.on('error', () => upstream.destroy());
      }, 1_200);
    });
    await new Promise<void>((resolve) => proxy.listen(socketPath, resolve));
    const forwardedAtHealthz: boolean[] = [];
    const kubelet = await startHealthz(() => forwardedAtHealthz.push(forwarded));
    try {
      const run = await podctl(['status', '-o', 'json', '--runtime-endpoint', `unix://${socketPath}`, '--state-dir', path.join(dir, 'state-late'), '--kubelet-healthz', kubelet.url]);
      expect(run.code, run.stderr).toBe(0);
      expect((JSON.parse(run.stdout) as { pods: unknown[] }).pods).toHaveLength(6);
      expect(forwardedAtHealthz).toEqual([false]);
    } finally {
      kubelet.close();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});
