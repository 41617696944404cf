/**
 * `podctl drain --kubeconfig` beside a running kubelet, through the built CLI: the embedded simulator
 * is the node, the local API server the cluster (test/support/kube-api-server.ts), a healthz
 * stand-in the kubelet, and the test plays the kubelet's part where one is needed (a pod deleted in
 * the API is stopped in the runtime, then removed from the API).
 *
 * - "terminated" means the runtime says the containers stopped: a pod whose API object is gone
 *   while its containers still run is `kubelet-finishing` ("deleted in the API, kubelet finishing");
 * - a PodDisruptionBudget's block is said once per pod in a pipe, and counted down on one live line
 *   on a terminal.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import type { SimPodSpec } from '../../src/cri/simulator/types.js';
import { createStyler, renderTable } from '../../src/lib/output.js';
import { drainTable } from '../../src/services/drain/output.js';
import { writeKubeconfig } from '../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');
const NODE = 'node-1';
const hasScript = (() => {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Simulator pods, each also in the API server (same UID), managed by a ReplicaSet unless said otherwise. */
const PODS: (SimPodSpec & { uid: string; namespace: string })[] = [
  { name: 'honest', namespace: 'web', uid: 'uid-honest', labels: { case: 'truth' }, terminationGracePeriodSeconds: 5 },
  { name: 'liar', namespace: 'web', uid: 'uid-liar', labels: { case: 'truth' }, terminationGracePeriodSeconds: 5 },
  { name: 'db', namespace: 'data', uid: 'uid-db', labels: { case: 'pdb', app: 'db' }, terminationGracePeriodSeconds: 5 },
];

describe('podctl drain beside a running kubelet (simulator, local API server)', { timeout: 90_000 }, () => {
  let server: KubeApiServer;
  let sim: RunningSimulator;
  let healthz: http.Server;
  let common: string[];
  let playing: NodeJS.Timeout | undefined;
  /** Pods whose API object the played kubelet removes without stopping their containers. */
  const lying = new Set<string>();

  beforeAll(async () => {
    if (!existsSync(path.join(ROOT, 'dist', 'commands', 'drain.js'))) throw new Error('dist/ is missing: run `npm run build` first');
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-drain-kubelet-'));
    server = await startKubeApiServer();
    server.addNode(NODE);
    sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), timeScale: 0.1, pods: PODS });
    for (const pod of PODS) {
      server.addPod({
        metadata: {
          name: pod.name,
          namespace: pod.namespace,
          uid: pod.uid,
          labels: pod.labels ?? {},
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${pod.name}-rs`, uid: `${pod.name}-rs-uid`, controller: true }],
        },
        spec: { nodeName: NODE, terminationGracePeriodSeconds: pod.terminationGracePeriodSeconds, containers: [{ name: 'main', image: 'x' }] },
        status: { phase: 'Running' },
      });
    }
    healthz = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => healthz.listen(0, '127.0.0.1', resolve));
    const kubeconfig = writeKubeconfig(dir, server.port);
    common = [
      '--runtime-endpoint',
      sim.endpoint,
      '--state-dir',
      path.join(dir, 'state'),
      '--kubeconfig',
      kubeconfig,
      '--node',
      NODE,
      '--kubelet-healthz',
      `127.0.0.1:${(healthz.address() as AddressInfo).port}/healthz`,
    ];
    playKubelet();
  });
  afterEach(() => {
    server.onAnswered = undefined;
  });
  afterAll(async () => {
    clearInterval(playing);
    healthz?.close();
    await sim?.close();
    await server?.stop();
  });

  /** Plays the kubelet: a pod marked deleted in the API is stopped in the runtime, then removed (a lying one only removed). */
  function playKubelet(): void {
    playing = setInterval(() => {
      for (const pod of PODS) {
        if (!server.getPod(pod.namespace, pod.name)?.metadata?.deletionTimestamp) continue;
        if (!lying.has(pod.uid)) {
          const sandbox = sim.state.listPodSandbox(undefined).find((s) => s.metadata?.uid === pod.uid);
          if (sandbox) sim.state.stopPodSandbox(sandbox.id);
        }
        server.deletePod(pod.namespace, pod.name, 0);
      }
    }, 100);
  }

  const podctl = (args: string[]): Promise<Run> =>
    new Promise((resolve) => {
      execFile(process.execPath, [BIN, ...args, ...common], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' }, timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
      );
    });

  /** The same on a pseudo-terminal (stdin and stderr are TTYs): everything it wrote, stdout and stderr together. */
  const onTerminal = (args: string[]): Promise<{ code: number; output: string }> =>
    new Promise((resolve) => {
      const command = [process.execPath, BIN, ...args, ...common].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
      const child = execFile('script', ['-qec', command, '/dev/null'], { env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' }, timeout: 60_000 }, (error, stdout) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, output: stdout }),
      );
      child.stdin?.end();
    });

  const runningContainers = (uid: string): number => {
    const sandbox = sim.state.listPodSandbox(undefined).find((s) => s.metadata?.uid === uid);
    return sandbox ? sim.state.containerIds(sandbox.id).filter((id) => sim.state.container(id)?.state === 1).length : 0;
  };

  it('a pod is terminated only when the runtime says its containers stopped: gone from the API but still running, it is "deleted in the API, kubelet finishing" (JSON, decisions, table)', async () => {
    lying.add('uid-liar');
    const run = await podctl(['drain', '-l', 'case=truth', '--timeout', '4s', '-o', 'json']);
    expect(run.code, run.stderr).toBe(5); // partial: one pod did not finish
    const result = JSON.parse(run.stdout) as { status: string; viaApi: { uid: string; outcome: string; error?: string | null }[]; decisions: { uid: string; reason: string; message: string }[] };
    expect(result.status).toBe('partial');
    expect(result.viaApi.find((p) => p.uid === 'uid-honest')).toMatchObject({ outcome: 'terminated' });
    expect(result.viaApi.find((p) => p.uid === 'uid-liar')).toMatchObject({
      outcome: 'kubelet-finishing',
      error: 'deleted in the API, kubelet finishing: 1 container(s) still run in the runtime',
    });
    expect(result.decisions.find((d) => d.uid === 'uid-liar')).toMatchObject({ reason: 'kubelet-finishing', message: expect.stringContaining('deleted in the API, kubelet finishing') });
    expect(server.getPod('web', 'liar')).toBeUndefined();
    expect(runningContainers('uid-liar')).toBe(1); // the truth the result now tells
    expect(runningContainers('uid-honest')).toBe(0);
    expect(run.stderr).toMatch(/drain partial: 1\/2 evicted and stopped by the kubelet/);
    expect(run.stderr).toMatch(/next: check the kubelet, which has not stopped their containers .*then run podctl drain again.*kubectl uncordon node-1 to give up/);
    // the table of the same result (what `podctl drain` prints without -o json)
    const table = await renderTable(drainTable(result as never, createStyler(false)), createStyler(false));
    expect(table).toMatch(/API eviction +web\/liar .*kubelet-finishing deleted in the API, kubelet finishing: 1 container\(s\) still run/);
    expect(table).toMatch(/API eviction +web\/honest .*terminated/);
  });

  it('a PodDisruptionBudget block is said once per pod in a pipe (no line per retry, no countdown lines)', async () => {
    server.addPdb('data', 'db-budget', { app: 'db' }, 0);
    const run = await podctl(['drain', '-l', 'case=pdb', '--timeout', '7s', '--json']);
    expect(run.code).not.toBe(0);
    expect(JSON.parse(run.stdout).viaApi).toEqual([expect.objectContaining({ uid: 'uid-db', outcome: 'blocked-by-pdb' })]);
    const lines = run.stderr.split('\n').filter((l) => l.includes('data/db'));
    expect(lines.filter((l) => /held by PodDisruptionBudget db-budget \(0 disruption\(s\) allowed\); trying every 5s, gives up in/.test(l))).toHaveLength(1);
    expect(run.stderr).not.toMatch(/next try in/);
    expect(run.stderr).toMatch(/next: wait for the budget to allow a disruption, or pass --ignore-pdb, then run podctl drain again/);
    expect(runningContainers('uid-db')).toBe(1);
  });

  it.skipIf(!hasScript)('on a terminal, a PodDisruptionBudget block is counted down on one live line: the next try and the time left to --timeout', async () => {
    const run = await onTerminal(['drain', '-l', 'case=pdb', '--timeout', '7s']);
    expect(run.code).not.toBe(0);
    const frames = run.output.split(/\r|\n/).filter((l) => l.includes('held by PodDisruptionBudget · data/db (db-budget)'));
    const left = frames.map((l) => /gives up in (\d+)s/.exec(l)?.[1]).filter((s): s is string => s !== undefined);
    expect(new Set(left).size, run.output).toBeGreaterThanOrEqual(3); // redrawn as the seconds pass
    expect(Number(left.at(-1))).toBeLessThan(Number(left[0]));
    expect(frames.some((l) => /next try in \ds/.test(l))).toBe(true);
    expect(run.output).toMatch(/\u001b\[2K/); // rewritten in place, not one line per second
    expect(runningContainers('uid-db')).toBe(1);
  });
});
