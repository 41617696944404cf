/**
 * The packages the single executable carries apart from its main script (src/sea-assets.ts:
 * @kubernetes/client-node, yaml, grpc-js and the watch screen's React, Ink and yoga, compiled on first
 * use from the executable's own assets): through the commands a user types, `status` without an API
 * server, `status -o yaml`, `status` with a kubeconfig (client-node lists the node's pods from a
 * local API server), `simulator` (grpc-js serves its CRI) and `watch` in tmux. Nothing is read
 * from beside the executable (the host has no node_modules and no node).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';
import { writeKubeconfig } from '../kube/support.js';
import { until, waitFor } from '../support/wait.js';
import { createSeaHost, removeSeaHost, runSea, seaEnv, seaSkipReason, warnIfSeaSkipped, type SeaHost } from './support.js';

warnIfSeaSkipped('test/sea/assets.test.ts');
const skip = seaSkipReason !== undefined;
const hasTmux = spawnSync('tmux', ['-V']).status === 0;
const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

describe.skipIf(skip)(`the single executable's packages loaded on first use${skip ? ` (SKIPPED: ${seaSkipReason})` : ''}`, { timeout: 120_000 }, () => {
  let host: SeaHost;
  let sim: RunningSimulator;
  let server: KubeApiServer;
  let dir: string;
  let common: string[];

  beforeAll(async () => {
    host = createSeaHost();
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-sea-assets-'));
    sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), pods: [{ name: 'web-1', namespace: 'web', uid: 'uid-web-1' }] });
    server = await startKubeApiServer();
    server.token = 'x';
    server.addPod({
      metadata: { name: 'web-1', namespace: 'web', uid: 'uid-web-1', finalizers: ['example.com/hold'] },
      spec: { nodeName: 'node-7', containers: [{ name: 'c' }] },
      status: { phase: 'Running' },
    });
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state'), '--no-color'];
  });

  afterAll(async () => {
    await sim?.close();
    await server?.stop();
    removeSeaHost(host);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('status without an API server lists the runtime pod', async () => {
    const run = await runSea(host, ['status', ...common]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^web\/web-1\s/m);
  });

  it('status -o yaml renders through the yaml package it carries', async () => {
    const run = await runSea(host, ['status', '-o', 'yaml', ...common]);
    expect(run.code, run.stderr).toBe(0);
    const doc = parse(run.stdout) as { pods: { namespace: string; name: string }[] };
    expect(doc.pods.map((p) => `${p.namespace}/${p.name}`)).toEqual(['web/web-1']);
  });

  it('status with a kubeconfig lists the node’s pods from the API server through the client-node it carries', async () => {
    const kubeconfig = writeKubeconfig(dir, server.port, 't', 'x');
    const before = server.requests.length;
    const run = await runSea(host, ['status', '-o', 'json', '--kubeconfig', kubeconfig, '--node', 'node-7', ...common]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toMatch(/cannot list|going on without the API server|carries no/);
    const asked = server.requests.slice(before).filter((r) => r.method === 'GET' && r.path === '/api/v1/pods' && r.status === 200);
    expect(asked.length).toBeGreaterThan(0);
    const pods = (JSON.parse(run.stdout) as { pods: { name: string; finalizers?: string[] }[] }).pods;
    expect(pods.find((p) => p.name === 'web-1')).toBeDefined();
  });

  it('the simulator serves its CRI through the grpc-js it carries apart (compiled with its own code cache), and status lists that node', async () => {
    const socket = path.join(dir, 'sea-sim.sock');
    const simulator = spawn(host.exe, ['simulator', '--socket', socket, '--pods', '3', '--state-dir', path.join(dir, 'sea-sim')], {
      cwd: host.cwd,
      env: seaEnv(host, { NODE_DEBUG: 'podctl-sea' }),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    simulator.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      for (let waited = 0; !existsSync(socket); waited += 100) {
        if (waited > 60_000 || simulator.exitCode !== null) throw new Error(`the simulator did not start: ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(stderr).toMatch(/grpc-js\.cjs: code cache grpc-js\.v8 accepted/);
      const run = await runSea(host, ['status', '-o', 'name', '--runtime-endpoint', `unix://${socket}`, '--state-dir', path.join(dir, 'sea-sim-state')]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.trim().split('\n')).toHaveLength(3);
    } finally {
      simulator.kill('SIGTERM');
    }
  });

  it.skipIf(!hasTmux)("watch in a terminal draws through the watch screen's asset (React, Ink, yoga: compiled on first use) and quits on q", async () => {
    const server = `podctl-sea-assets-${process.pid}`;
    const tmux = (...args: string[]) => execFileSync('tmux', ['-L', server, ...args], { encoding: 'utf8' });
    const [log, exit] = [path.join(dir, 'watch.stderr'), path.join(dir, 'watch.exit')];
    const env = Object.entries(seaEnv(host, { NODE_DEBUG: 'podctl-sea' })).map(([k, v]) => `${k}=${shellQuote(v ?? '')}`);
    const command = `cd ${shellQuote(host.cwd)} && env ${env.join(' ')} ${shellQuote(host.exe)} watch ${common.map(shellQuote).join(' ')} 2>${shellQuote(log)}; echo $? >${shellQuote(exit)}`;
    tmux('new-session', '-d', '-x', '120', '-y', '30', command);
    try {
      const screen = () => tmux('capture-pane', '-p');
      await waitFor('the watch screen listing web/web-1', () => /web\/web-1\s+runtime/.test(screen()), { timeoutMs: 60_000, detail: screen });
      tmux('send-keys', 'q');
      await until('watch to exit after q', () => existsSync(exit), { timeoutMs: 30_000, detail: screen });
      expect(readFileSync(exit, 'utf8').trim(), readFileSync(log, 'utf8')).toBe('0');
      expect(readFileSync(log, 'utf8')).toMatch(/tui\.cjs: code cache tui\.v8 accepted/);
    } finally {
      // (the server is gone when watch and its shell have ended)
      spawnSync('tmux', ['-L', server, 'kill-server']);
    }
  });
});
