/**
 * Every kill with the pod as the API server holds it (src/services/api/pod-specs.ts), through the built
 * CLI, the local API server (test/support/kube-api-server.ts) and the embedded simulator, whose
 * journal times each container's SIGTERM and exit:
 * - with an API server, `kill` hands the API's spec to the syncer: a sidecar (restartable init
 *   container) gets its SIGTERM only once the main container has exited;
 * - without one, the result says what podctl could not know (`ordering: parallel, no pod spec`), in
 *   the JSON and on the text output;
 * - `--via-api` on a pod already Terminating in the API, beside a running kubelet: left to it, a
 *   shorter grace asked for by a DELETE, never a CRI stop.
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
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');
const NODE = 'node-spec';

describe('kill with the pod as the API server holds it', { timeout: 90_000 }, () => {
  let server: KubeApiServer;
  let sim: RunningSimulator;
  let dir: string;
  let kubeconfig: string;

  const podctl = (args: string[], withApi = true): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      const common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state'), '--node', NODE, ...(withApi ? ['--kubeconfig', kubeconfig] : [])];
      execFile(process.execPath, [BIN, ...args, ...common], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' }, timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
      );
    });

  /** Each container's first SIGTERM, its exit, and whether it was asked to stop, from the simulator's journal. */
  const timesOf = (uid: string): Map<string, { sigterm?: number; exit?: number; stopped: boolean }> => {
    const byId = new Map<string, string>();
    for (const id of sim.state.containerIds()) {
      const c = sim.state.container(id);
      if (c?.labels?.['io.kubernetes.pod.uid'] === uid) byId.set(id, c.metadata?.name ?? id);
    }
    const times = new Map<string, { sigterm?: number; exit?: number; stopped: boolean }>([...byId.values()].map((n) => [n, { stopped: false }]));
    for (const r of sim.state.journal()) {
      const name = 'id' in r && r.id !== undefined ? byId.get(r.id) : undefined;
      if (name === undefined) continue;
      const t = times.get(name)!;
      if (r.kind === 'signal' && r.signal === 'SIGTERM') t.sigterm ??= r.at;
      if (r.kind === 'exit') t.exit ??= r.at;
      if (r.kind === 'rpc' && r.method === 'StopContainer') t.stopped = true;
    }
    return times;
  };

  beforeAll(async () => {
    if (!existsSync(path.join(ROOT, 'dist', 'commands', 'kill.js'))) throw new Error('dist/ is missing: run `npm run build` first');
    server = await startKubeApiServer();
    server.token = 'x';
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-kill-spec-'));
    kubeconfig = writeKubeconfig(dir, server.port, 't', 'x');
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.05,
      pods: [
        // main takes 40 (simulated) seconds after SIGTERM: 2 s of real time
        {
          name: 'sidecar',
          namespace: 'web',
          uid: 'uid-sidecar',
          containers: [
            { name: 'main', onSigterm: { exitAfterSeconds: 40 } },
            { name: 'proxy', onSigterm: 'exit' },
          ],
        },
        { name: 'blind', namespace: 'web', uid: 'uid-blind', containers: [{ name: 'main', onSigterm: 'exit' }] },
        { name: 'blind-text', namespace: 'web', uid: 'uid-blind-text', containers: [{ name: 'main', onSigterm: 'exit' }] },
        { name: 'deleting', namespace: 'web', uid: 'uid-deleting', containers: [{ name: 'main', onSigterm: 'exit' }] },
      ],
    });
  });

  afterAll(async () => {
    await sim?.close();
    await server?.stop();
  });

  it('with an API server, the sidecar gets its SIGTERM only after the main container exited; the result says sidecars last', async () => {
    server.addPod({
      metadata: { name: 'sidecar', namespace: 'web', uid: 'uid-sidecar' },
      spec: { nodeName: NODE, terminationGracePeriodSeconds: 30, initContainers: [{ name: 'proxy', image: 'i', restartPolicy: 'Always' }], containers: [{ name: 'main', image: 'i' }] },
      status: { phase: 'Running' },
    });
    const run = await podctl(['kill', 'web/sidecar', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ pods: [{ uid: 'uid-sidecar', outcome: 'terminated', ordering: 'sidecars last', handledBy: 'local' }] });
    const times = timesOf('uid-sidecar');
    const main = times.get('main')!;
    const proxy = times.get('proxy')!;
    expect(main.exit).toBeDefined();
    expect(proxy.sigterm).toBeDefined();
    // the main container took its time; the sidecar was signalled only once it had gone
    expect(main.exit! - main.sigterm!).toBeGreaterThanOrEqual(1_000);
    expect(proxy.sigterm!).toBeGreaterThanOrEqual(main.exit!);
  });

  it('without an API server the stop is parallel, and the JSON and the text output say so', async () => {
    const json = await podctl(['kill', 'web/blind', '--json'], false);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ pods: [{ uid: 'uid-blind', outcome: 'terminated', ordering: 'parallel, no pod spec' }] });
    const text = await podctl(['kill', 'web/blind-text'], false);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stderr).toMatch(/kill: 1 terminated; ordering: parallel, no pod spec \(/);
  });

  it('--via-api: a pod Terminating in the API is left to the running kubelet; a shorter grace is a DELETE, never a CRI stop', async () => {
    const healthz = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => healthz.listen(0, '127.0.0.1', r));
    const kubelet = `127.0.0.1:${(healthz.address() as AddressInfo).port}`;
    try {
      server.addPod({
        metadata: { name: 'deleting', namespace: 'web', uid: 'uid-deleting' },
        spec: { nodeName: NODE, terminationGracePeriodSeconds: 45, containers: [{ name: 'main', image: 'i' }] },
        status: { phase: 'Running' },
      });
      server.deletePod('web', 'deleting', 20);
      server.requests.length = 0;
      // nobody plays the kubelet: the wait ends at its bound
      const shorter = await podctl(['kill', 'web/deleting', '--via-api', '--grace', '3', '--timeout', '2s', '--kubelet-healthz', kubelet, '--json']);
      expect(shorter.code, shorter.stderr).toBe(3);
      expect(JSON.parse(shorter.stdout)).toMatchObject({
        pods: [
          {
            uid: 'uid-deleting',
            handledBy: 'api',
            gracePeriodSeconds: 3,
            outcome: 'timeout',
            note: 'already terminating in the API server (grace 20s): left to the kubelet, grace shortened to 3s by a delete',
          },
        ],
      });
      const deletes = server.requests.filter((r) => r.method === 'DELETE');
      expect(deletes.map((r) => r.body)).toEqual([expect.objectContaining({ gracePeriodSeconds: 3, preconditions: { uid: 'uid-deleting' } })]);

      // a longer grace than the deletion's asks nothing of anyone
      server.requests.length = 0;
      const longer = await podctl(['kill', 'web/deleting', '--via-api', '--grace', '30', '--timeout', '2s', '--kubelet-healthz', kubelet, '--json']);
      expect(longer.code, longer.stderr).toBe(3);
      expect(JSON.parse(longer.stdout)).toMatchObject({
        pods: [{ uid: 'uid-deleting', handledBy: 'api', gracePeriodSeconds: 3, note: 'already terminating in the API server (grace 3s): left to the kubelet' }],
      });
      expect(server.requests.filter((r) => r.method === 'DELETE')).toEqual([]);

      // no CRI stop at all: the kubelet's to finish
      expect(timesOf('uid-deleting').get('main')).toEqual({ stopped: false });
    } finally {
      healthz.close();
    }
  });
});

describe('drain with the pods as the API server holds them', { timeout: 90_000 }, () => {
  let server: KubeApiServer;
  let sim: RunningSimulator;
  let dir: string;
  let kubeconfig: string;

  beforeAll(async () => {
    if (!existsSync(path.join(ROOT, 'dist', 'commands', 'drain.js'))) throw new Error('dist/ is missing: run `npm run build` first');
    server = await startKubeApiServer();
    server.token = 'x';
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-drain-spec-'));
    kubeconfig = writeKubeconfig(dir, server.port, 't', 'x');
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.05,
      pods: [
        {
          name: 'sidecar',
          namespace: 'web',
          uid: 'uid-d-sidecar',
          containers: [
            { name: 'main', onSigterm: { exitAfterSeconds: 40 } },
            { name: 'proxy', onSigterm: 'exit' },
          ],
        },
        { name: 'unlisted', namespace: 'web', uid: 'uid-d-unlisted', containers: [{ name: 'main', onSigterm: 'exit' }] },
      ],
    });
  });

  afterAll(async () => {
    await sim?.close();
    await server?.stop();
  });

  it("drain hands each pod's API spec to the syncer (sidecar after main); a pod the API does not hold is stopped blind, and the result says so", async () => {
    server.addPod({
      metadata: { name: 'sidecar', namespace: 'web', uid: 'uid-d-sidecar' },
      spec: { nodeName: NODE, terminationGracePeriodSeconds: 30, initContainers: [{ name: 'proxy', image: 'i', restartPolicy: 'Always' }], containers: [{ name: 'main', image: 'i' }] },
      status: { phase: 'Running' },
    });
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const args = [
        'drain',
        '--yes',
        '--grace-period',
        '20',
        '--critical-grace-period',
        '5',
        '--json',
        '--runtime-endpoint',
        sim.endpoint,
        '--state-dir',
        path.join(dir, 'state'),
        '--node',
        NODE,
        '--kubeconfig',
        kubeconfig,
      ];
      execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' }, timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
      );
    });
    expect(run.code, run.stderr).toBe(0);
    const pods = (JSON.parse(run.stdout) as { groups: { pods: { uid: string; ordering: string | null }[] }[] }).groups.flatMap((g) => g.pods);
    expect(pods.map((p) => [p.uid, p.ordering]).sort()).toEqual([
      ['uid-d-sidecar', 'sidecars last'],
      ['uid-d-unlisted', 'parallel, no pod spec'],
    ]);
    const names = new Map<string, string>();
    for (const id of sim.state.containerIds()) {
      const c = sim.state.container(id);
      if (c?.labels?.['io.kubernetes.pod.uid'] === 'uid-d-sidecar') names.set(id, c.metadata?.name ?? id);
    }
    const at = (name: string, kind: 'signal' | 'exit'): number | undefined =>
      sim.state.journal().find((r) => r.kind === kind && names.get(r.id) === name && (r.kind !== 'signal' || r.signal === 'SIGTERM'))?.at;
    expect(at('main', 'exit')).toBeDefined();
    expect(at('proxy', 'signal')!).toBeGreaterThanOrEqual(at('main', 'exit')!);
  });
});
