/**
 * Every word true when the API server does not answer: each command given a kubeconfig whose server
 * accepts connections and never answers says which server did not answer within which bound, and
 * says it at that bound (never "The operation was aborted due to timeout", never one request's
 * deadline for the sum of its retries). Through the built CLI (`node bin/run.js`) on the embedded
 * simulator; the kubelet is down (nothing answers its healthz), so the API server is asked only for
 * the pods' specs and the reports. Needs `npm run build` first.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { writeKubeconfig } from '../kube/support.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');
/** What a loaded 2-core machine may add to a bound: the command's start-up and its other work. */
const MARGIN_MS = 25_000;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  elapsedMs: number;
}

describe('an API server that accepts and never answers', { timeout: 240_000 }, () => {
  let sim: RunningSimulator;
  let silent: net.Server;
  const sockets = new Set<net.Socket>();
  let dir: string;
  let kubeconfig: string;
  let server: string;

  const podctl = (args: string[], stateDir: string): Promise<Run> => {
    const started = Date.now();
    return new Promise((resolve) => {
      const all = [
        ...args,
        '--runtime-endpoint',
        sim.endpoint,
        '--state-dir',
        path.join(dir, stateDir),
        '--kubeconfig',
        kubeconfig,
        '--node',
        'node-1',
        '--kubelet-healthz',
        'http://127.0.0.1:9/healthz',
      ];
      execFile(process.execPath, [BIN, ...all], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' }, timeout: 90_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr, elapsedMs: Date.now() - started }),
      );
    });
  };

  beforeAll(async () => {
    if (!existsSync(path.join(ROOT, 'dist', 'commands', 'kill.js'))) throw new Error('dist/ is missing: run `npm run build` first');
    silent = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    server = `http://127.0.0.1:${port}`;
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-api-silent-'));
    kubeconfig = writeKubeconfig(dir, port, 't', 'x');
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.05,
      pods: [
        { name: 'killed', namespace: 'web', uid: 'uid-killed', containers: [{ name: 'c', onSigterm: 'exit' }] },
        { name: 'evicted', namespace: 'web', uid: 'uid-evicted', containers: [{ name: 'c', onSigterm: 'exit' }] },
        { name: 'kept', namespace: 'web', uid: 'uid-kept', containers: [{ name: 'c', onSigterm: 'exit' }] },
      ],
    });
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    silent?.close();
    await sim?.close();
  });

  const named = (bound: string): RegExp => new RegExp(`no answer from the API server ${server.replace(/[.]/g, '\\.')} within ${bound}\\b`);

  it('status, kill, evict and drain name the server and the bound, and end at it', async () => {
    // one after another: each command's time is its own
    const status = await podctl(['status'], 'status');
    const kill = await podctl(['kill', 'web/killed', '--grace', '1'], 'kill');
    const evict = await podctl(['evict', 'web/evicted', '--grace', '1'], 'evict');
    const drain = await podctl(['drain', '--dry-run'], 'drain');
    for (const [what, run] of Object.entries({ status, kill, evict, drain })) {
      expect(run.stderr, what).not.toMatch(/aborted due to timeout|operation was aborted/i);
      expect(run.code, `${what}: ${run.stderr}`).toBe(0);
    }
    // status waits 5 s for the node's pods in the API; the kill paths 2 s for their specs (kubelet down)
    expect(status.stderr).toMatch(new RegExp(`cannot list the node's pods from the API server: list pods: ${named('5s').source}`));
    expect(status.elapsedMs).toBeGreaterThanOrEqual(5_000);
    expect(status.elapsedMs).toBeLessThan(5_000 + MARGIN_MS);
    for (const [what, run] of Object.entries({ kill, evict, drain })) {
      expect(run.stderr, what).toMatch(new RegExp(`the API server's list failed: list pods: ${named('2s').source}`));
      expect(run.elapsedMs, what).toBeGreaterThanOrEqual(2_000);
    }
    // the eviction's Event and status are recorded for later after 2 s each, said with the server and that bound
    expect(evict.stderr).toMatch(new RegExp(`post event for web/evicted: ${named('2s').source}`));
    expect(evict.elapsedMs).toBeLessThan(2_000 + 2 * 2_000 + MARGIN_MS);
    expect(kill.elapsedMs).toBeLessThan(2_000 + MARGIN_MS);
    expect(drain.elapsedMs).toBeLessThan(2_000 + MARGIN_MS);
  });

  it('sync-known, which waits for the list with retries, says how many attempts of how long, and ends at their sum', async () => {
    const run = await podctl(['sync-known', '--dry-run'], 'sync');
    expect(run.code).toBe(1);
    expect(run.stderr).not.toMatch(/aborted due to timeout|operation was aborted/i);
    const said = new RegExp(`list pods: no answer from the API server ${server.replace(/[.]/g, '\\.')} in (\\d+) attempts of 10s each \\((\\d+)s in all\\)`).exec(run.stderr);
    expect(said, run.stderr).not.toBeNull();
    const [attempts, total] = [Number(said![1]), Number(said![2]) * 1000];
    expect(attempts).toBeGreaterThanOrEqual(2);
    // the total it states is the time it took: at least its attempts' deadlines, at most what the command took
    expect(total).toBeGreaterThanOrEqual(attempts * 10_000);
    expect(run.elapsedMs).toBeGreaterThanOrEqual(total);
    expect(run.elapsedMs).toBeLessThan(total + MARGIN_MS);
  });
});
