/**
 * The drain's waits in the API server, journaled where status and the report read them: a drain
 * beside a running kubelet (a healthz that answers ok; the test removes each pod the drain evicted
 * from the API server, as the kubelet would) whose eviction of web/guarded a PodDisruptionBudget
 * refuses (429 naming the budget in its DisruptionBudget cause) until the budget allows it, and whose
 * eviction of web/free is throttled (429 without that cause, Retry-After 1 s) twice. Through the built
 * CLI (`node bin/run.js`) on the embedded simulator and the local API server. Needs `npm run build`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { writeKubeconfig } from '../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';
import { requireBuilt, runPodctl, type CliRun as Run, BIN, ROOT } from '../support/cli.js';
import { until } from '../support/wait.js';

describe('a drain that waits on a PodDisruptionBudget', { timeout: 240_000 }, () => {
  let server: KubeApiServer;
  let sim: RunningSimulator;
  let healthz: http.Server;
  let kubeletLoop: NodeJS.Timeout;
  let dir: string;
  let common: string[];

  const podctl = (args: string[], flags = common): Promise<Run> => runPodctl([...args, ...flags], {}, 90_000);

  beforeAll(async () => {
    requireBuilt('drain');
    server = await startKubeApiServer();
    server.token = 'x';
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-api-waits-'));
    const kubeconfig = writeKubeconfig(dir, server.port, 't', 'x');
    healthz = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => healthz.listen(0, '127.0.0.1', r));
    const kubelet = `127.0.0.1:${(healthz.address() as AddressInfo).port}`;
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.05,
      pods: [
        { name: 'guarded', namespace: 'web', uid: 'uid-guarded', containers: [{ name: 'c', onSigterm: 'exit' }] },
        { name: 'free', namespace: 'web', uid: 'uid-free', containers: [{ name: 'c', onSigterm: 'exit' }] },
      ],
    });
    server.addNode('node-1');
    const owner = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'rs-1', controller: true }];
    for (const [name, app] of [
      ['guarded', 'guarded'],
      ['free', 'free'],
    ] as const) {
      server.addPod({
        metadata: { name, namespace: 'web', uid: `uid-${name}`, labels: { app }, ownerReferences: owner },
        spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 2, containers: [{ name: 'c' }] },
        status: { phase: 'Running' },
      });
    }
    server.addPdb('web', 'pdb', { app: 'guarded' }, 0);
    server.inject({ method: 'POST', path: /\/pods\/free\/eviction$/, status: 429, retryAfter: 1, count: 2 });
    // the kubelet's part: a pod deleted in the API server is stopped in the runtime, then removed
    kubeletLoop = setInterval(() => {
      for (const pod of [...server.pods.values()]) {
        if (!pod.metadata.deletionTimestamp) continue;
        const sandbox = sim.state.listPodSandbox(undefined).find((s) => s.metadata?.uid === pod.metadata.uid);
        if (sandbox) sim.state.stopPodSandbox(sandbox.id);
        server.deletePod(pod.metadata.namespace, pod.metadata.name, 0);
      }
    }, 200);
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state'), '--kubeconfig', kubeconfig, '--node', 'node-1', '--kubelet-healthz', kubelet];
  });

  afterAll(async () => {
    clearInterval(kubeletLoop);
    await sim?.close();
    await server?.stop();
    healthz?.close();
  });

  it('status shows the budget holding the pod and since when; the report draws the hold naming it, and the kubelet waits; a throttling 429 waits its Retry-After and is not drawn', async () => {
    const page = path.join(dir, 'report.html');
    const drain = spawn(process.execPath, [BIN, 'drain', '--report', page, '--timeout', '2m', '--json', ...common], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' } });
    let drainOut = '';
    let drainErr = '';
    drain.stdout.on('data', (c: Buffer) => (drainOut += c.toString()));
    drain.stderr.on('data', (c: Buffer) => (drainErr += c.toString()));
    const ended = new Promise<number>((resolve) => drain.on('close', (code) => resolve(code ?? 1)));
    try {
      const refusals = (): number => server.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/pods/guarded/eviction') && r.status === 429).length;
      await until('the budget refused the eviction of web/guarded', () => refusals() >= 1, { timeoutMs: 60_000, everyMs: 100 });
      const firstRefusal = server.requests.find((r) => r.path.endsWith('/pods/guarded/eviction'))!.at;

      // while it holds: status names the budget and since when, in the table, in JSON and in --explain
      let held: Record<string, any> | undefined;
      await until(
        'status shows the hold',
        async () => {
          const status = await podctl(['status', 'web/guarded', '-o', 'json']);
          held = (JSON.parse(status.stdout).pods as Record<string, any>[]).find((p) => p.name === 'guarded')?.evictionHeld ?? undefined;
          return held !== undefined && held !== null;
        },
        { timeoutMs: 60_000, everyMs: 100 },
      );
      expect(held).toMatchObject({ budget: 'PodDisruptionBudget web/pdb', pid: drain.pid });
      expect(Math.abs(Date.parse(held!.since) - firstRefusal)).toBeLessThan(5_000);
      expect(held!.detail).toMatch(/disruption budget pdb/);
      const table = await podctl(['status', 'web/guarded']);
      expect(table.stdout).toMatch(/web\/guarded .*eviction held by PodDisruptionBud/);
      const explain = await podctl(['status', 'web/guarded', '--explain']);
      expect(explain.stdout).toMatch(
        new RegExp(
          `eviction: +eviction held by PodDisruptionBudget web/pdb since ${held!.since.replace(/[.]/g, '\\.')} \\(\\d+s; podctl pid ${drain.pid} retries it\\): 0 disruption\\(s\\) allowed: `,
        ),
      );

      // the budget allows one disruption: the next try (every 5 s) evicts the pod
      const refusedBefore = refusals();
      server.pdbs.get('web/pdb')!.status.disruptionsAllowed = 1;
      const code = await ended;
      expect(code, drainErr).toBe(0);
      expect(JSON.parse(drainOut).viaApi).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'guarded', outcome: 'terminated' })]));
      expect(refusals()).toBeGreaterThanOrEqual(refusedBefore);

      // status no longer shows a hold
      const after = await podctl(['status', '-o', 'json']);
      expect((JSON.parse(after.stdout).pods as Record<string, any>[]).every((p) => p.evictionHeld === null)).toBe(true);

      // the throttled eviction waited the Retry-After (1 s) between its tries
      const freeTries = server.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/pods/free/eviction')).map((r) => r.at);
      expect(freeTries.length).toBe(3);
      for (let i = 1; i < freeTries.length; i += 1) expect(freeTries[i]! - freeTries[i - 1]!).toBeGreaterThanOrEqual(1_000);

      // the report: the hold drawn with the budget's name, and the waits for the kubelet
      const json = await podctl(['report', '-o', 'json'], common.slice(0, 4));
      expect(json.code, json.stderr).toBe(0);
      const report = JSON.parse(json.stdout) as {
        wallMs: number;
        pods: { name: string; via: string; segments: { kind: string; label: string; outcome: string; durationMs: number; start: string }[] }[];
      };
      const guarded = report.pods.find((p) => p.name === 'guarded')!;
      const free = report.pods.find((p) => p.name === 'free')!;
      expect(guarded.via).toBe('api');
      const hold = guarded.segments.filter((s) => s.kind === 'eviction-wait');
      expect(hold).toEqual([expect.objectContaining({ label: 'PodDisruptionBudget web/pdb', outcome: 'waited' })]);
      expect(Math.abs(Date.parse(hold[0]!.start) - firstRefusal)).toBeLessThan(5_000);
      expect(hold[0]!.durationMs).toBeGreaterThan(0);
      // the drain's wall time counts its evictions through the API server
      expect(report.wallMs).toBeGreaterThanOrEqual(hold[0]!.durationMs);
      expect(guarded.segments.filter((s) => s.kind === 'kubelet-wait')).toEqual([expect.objectContaining({ label: 'kubelet', outcome: 'waited' })]);
      expect(free.segments.map((s) => s.kind)).toEqual(['kubelet-wait']);
      // the page drawn by drain --report names the budget too
      expect(readFileSync(page, 'utf8')).toContain('PodDisruptionBudget web/pdb');
    } finally {
      if (drain.exitCode === null) drain.kill('SIGKILL');
    }
  });
});
