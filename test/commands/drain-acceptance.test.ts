/**
 * Issue 42's acceptance, through both doors a user has: a drain of a node carrying a static pod (and
 * its mirror pod in the API), a DaemonSet pod, a pod with an emptyDir volume (consented) and a pod a
 * PodDisruptionBudget protects ends `done`, with the static and DaemonSet pods still running —
 * asked by `podctl drain --kubeconfig`, and by annotating the Node `podctl.io/drain=requested` for
 * the agent. The node is the embedded simulator, the cluster the local API server
 * (test/support/kube-api-server.ts; the agent speaks under the RBAC shipped in deploy/), the kubelet
 * a healthz stand-in whose part the test plays: a pod deleted in the API is stopped in the runtime,
 * then removed from the API. The budget allows no disruption at first, and one a moment after the
 * first refusal (as when a replacement becomes ready elsewhere): the drain waits on it, then goes on.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { writeAgentKubeconfig, writeKubeconfig } from '../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');
const NODE = 'node-1';

/** The node's pods: [namespace, name, uid, what the API server holds beyond the basics]. */
const STATIC = { namespace: 'kube-system', name: `kas-${NODE}`, uid: 'uid-kas' };
const DAEMON = { namespace: 'kube-system', name: 'proxy-x1', uid: 'uid-proxy' };
const CACHE = { namespace: 'web', name: 'cache-0', uid: 'uid-cache' };
const DB = { namespace: 'data', name: 'db-0', uid: 'uid-db' };

interface Decision {
  uid: string;
  decision: string;
  reason: string;
}

describe("issue 42's acceptance: a node with a static, a DaemonSet, an emptyDir and a budgeted pod drains to done", { timeout: 120_000 }, () => {
  let server: KubeApiServer;
  let sim: RunningSimulator;
  let healthz: http.Server;
  let dir: string;
  let node: string[];
  let playing: NodeJS.Timeout | undefined;

  beforeEach(async () => {
    if (!existsSync(path.join(ROOT, 'dist', 'commands', 'agent.js'))) throw new Error('dist/ is missing: run `npm run build` first');
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-drain-acceptance-'));
    server = await startKubeApiServer();
    server.addNode(NODE);
    server.installNodeRestriction(); // the agent writes only with its node restriction in force
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.1,
      pods: [
        { ...STATIC, static: true, priority: 2_000_001_000, terminationGracePeriodSeconds: 30 },
        { ...DAEMON, terminationGracePeriodSeconds: 5 },
        { ...CACHE, terminationGracePeriodSeconds: 5 },
        { ...DB, labels: { app: 'db' }, terminationGracePeriodSeconds: 5 },
      ],
    });
    const owned = (kind: string, name: string): object => ({ ownerReferences: [{ apiVersion: 'apps/v1', kind, name, uid: `${name}-uid`, controller: true }] });
    const inApi = (pod: { namespace: string; name: string; uid?: string }, metadata: object, spec: object = {}): void => {
      server.addPod({
        metadata: { name: pod.name, namespace: pod.namespace, ...(pod.uid ? { uid: pod.uid } : {}), ...metadata },
        spec: { nodeName: NODE, terminationGracePeriodSeconds: 5, containers: [{ name: 'main', image: 'x' }], ...spec },
        status: { phase: 'Running' },
      });
    };
    // the mirror pod: the static pod's name, its own UID, the kubelet's mirror annotation
    inApi({ namespace: STATIC.namespace, name: STATIC.name }, { annotations: { 'kubernetes.io/config.mirror': 'hash', 'kubernetes.io/config.source': 'file' } });
    inApi(DAEMON, owned('DaemonSet', 'proxy'));
    inApi(CACHE, owned('StatefulSet', 'cache'), { volumes: [{ name: 'scratch', emptyDir: {} }] });
    inApi(DB, { labels: { app: 'db' }, ...owned('StatefulSet', 'db') });
    server.addPdb(DB.namespace, 'db-budget', { app: 'db' }, 0);
    // the budget allows a disruption a moment after its first refusal
    server.onAnswered = (request) => {
      if (request.status !== 429 || !request.path.endsWith(`/pods/${DB.name}/eviction`)) return;
      setTimeout(() => (server.pdbs.get(`${DB.namespace}/db-budget`)!.status.disruptionsAllowed = 1), 1_000);
    };
    healthz = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => healthz.listen(0, '127.0.0.1', resolve));
    node = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state'), '--node', NODE, '--kubelet-healthz', `127.0.0.1:${(healthz.address() as AddressInfo).port}/healthz`];
    playKubelet();
  });
  afterEach(async () => {
    const denied = server.denied().map((r) => `${r.method} ${r.path}`);
    clearInterval(playing);
    healthz.close();
    await sim.close();
    await server.stop();
    expect(denied).toEqual([]); // the agent asked nothing the shipped RBAC does not grant
  });

  /** Plays the kubelet: a pod marked deleted in the API is stopped in the runtime, then removed from the API. */
  function playKubelet(): void {
    playing = setInterval(() => {
      for (const pod of [DAEMON, CACHE, DB]) {
        if (!server.getPod(pod.namespace, pod.name)?.metadata?.deletionTimestamp) continue;
        const sandbox = sim.state.listPodSandbox(undefined).find((s) => s.metadata?.uid === pod.uid);
        if (sandbox) sim.state.stopPodSandbox(sandbox.id);
        server.deletePod(pod.namespace, pod.name, 0);
      }
    }, 100);
  }

  const runningContainers = (uid: string): number => {
    const sandbox = sim.state.listPodSandbox(undefined).find((s) => s.metadata?.uid === uid);
    return sandbox ? sim.state.containerIds(sandbox.id).filter((id) => sim.state.container(id)?.state === 1).length : 0;
  };

  /** What every drain must leave behind: the static and DaemonSet pods running, the others stopped, the node cordoned. */
  function expectDrained(): void {
    expect(runningContainers(STATIC.uid), 'the static pod runs').toBe(1);
    expect(runningContainers(DAEMON.uid), 'the DaemonSet pod runs').toBe(1);
    expect(runningContainers(CACHE.uid), 'the emptyDir pod stopped').toBe(0);
    expect(runningContainers(DB.uid), 'the budgeted pod stopped').toBe(0);
    expect(server.getPod(STATIC.namespace, STATIC.name), 'the mirror pod is left in the API').toBeDefined();
    expect(server.getPod(DAEMON.namespace, DAEMON.name), 'the DaemonSet pod is left in the API').toBeDefined();
    expect(server.nodes.get(NODE)?.spec?.unschedulable).toBe(true);
    const evicted = server.requests.filter((r) => r.path.endsWith('/eviction') && r.status === 201).map((r) => r.path.split('/')[6]);
    expect(evicted.sort()).toEqual([CACHE.name, DB.name].sort());
    const blocked = server.requests.filter((r) => r.path.endsWith(`/pods/${DB.name}/eviction`) && r.status === 429);
    expect(blocked.length, 'the budget held the eviction back first').toBeGreaterThanOrEqual(1);
  }

  it('podctl drain --kubeconfig --delete-emptydir-data: done (exit 0), the static and DaemonSet pods still running', async () => {
    const kubeconfig = writeKubeconfig(dir, server.port);
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        [BIN, 'drain', '--delete-emptydir-data', '--json', '--kubeconfig', kubeconfig, ...node],
        { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' }, timeout: 90_000 },
        (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
      ),
    );
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { status: string; viaApi: { uid: string; outcome: string }[]; decisions: Decision[] };
    expect(result.status).toBe('done');
    expect(result.viaApi.map((p) => [p.uid, p.outcome]).sort()).toEqual([
      [CACHE.uid, 'terminated'],
      [DB.uid, 'terminated'],
    ]);
    const verdict = (uid: string): string | undefined => result.decisions.filter((d) => d.uid === uid).map((d) => `${d.decision} ${d.reason}`)[0];
    expect(verdict(STATIC.uid)).toBe('skip static');
    expect(verdict(DAEMON.uid)).toBe('skip daemonset');
    expect(verdict(CACHE.uid)).toBe('evict evict');
    expect(run.stderr).toMatch(/data\/db-0: eviction held by PodDisruptionBudget db-budget \(0 disruption\(s\) allowed\)/);
    expectDrained();
  });

  it("the agent, asked by the Node's annotation (emptyDir data consented there): done, the static and DaemonSet pods still running", async () => {
    const kubeconfig = writeAgentKubeconfig(dir, server, NODE);
    const agent = spawn(process.execPath, [BIN, 'agent', '--interval', '500ms', '--metrics-addr', '127.0.0.1:0', '--kubeconfig', kubeconfig, ...node], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    agent.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => agent.on('exit', (code) => resolve(code)));
    const annotation = (): string | undefined => server.nodes.get(NODE)?.metadata?.annotations?.['podctl.io/drain'];
    try {
      // as kubectl annotate does: a change the agent's watch of its Node sees
      server.updateNode(NODE, (n) => (n.metadata.annotations = { 'podctl.io/drain': 'requested', 'podctl.io/drain-delete-emptydir-data': 'true' }));
      const until = Date.now() + 90_000;
      while (!['done', 'failed'].includes(annotation() ?? '') && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
      const events = [...server.events.values()].filter((e) => e.involvedObject?.kind === 'Node' && e.involvedObject?.name === NODE);
      expect(annotation(), `${log}\n${events.map((e) => `${e.reason}: ${e.message}`).join('\n')}`).toBe('done');
      // each references the Node by its UID, as the Node's controllers do
      expect(new Set(events.map((e) => e.involvedObject?.uid))).toEqual(new Set([server.nodes.get(NODE)?.metadata?.uid]));
      const reasons = events.map((e) => e.reason as string);
      expect(reasons).toEqual(expect.arrayContaining(['DrainStarted', 'DrainBlockedByPDB', 'DrainSkipped', 'DrainCompleted']));
      const skipped = events.find((e) => e.reason === 'DrainSkipped')?.message as string;
      expect(skipped).toContain(`${STATIC.namespace}/${STATIC.name} (static)`);
      expect(skipped).toContain(`${DAEMON.namespace}/${DAEMON.name} (daemonset)`);
      expect(events.find((e) => e.reason === 'DrainBlockedByPDB')?.message).toMatch(/data\/db-0 held by PodDisruptionBudget db-budget/);
      expectDrained();
    } finally {
      agent.kill('SIGTERM');
      expect(await exited, log).toBe(0);
    }
  });
});
