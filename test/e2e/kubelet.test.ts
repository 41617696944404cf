/**
 * Beside a running kubelet (docs/operator-guide.md, "podctl and the kubelet"), end to end on a
 * private containerd node, with the local API server (test/support; not a kube-apiserver) and a
 * stand-in kubelet healthz on a test port. The test plays the kubelet where one is needed: when the
 * API server marks a pod deleted, it stops the pod's containers over CRI and finishes the deletion.
 *
 * - a kill of a pod the kubelet desires is refused while it runs (exit 2, naming --force) and
 *   allowed once it is down; --force stops it over CRI;
 * - with a kubeconfig the kill is a delete through the API with the grace, and podctl waits;
 * - eviction honours a PodDisruptionBudget (429 → blocked-by-pdb), --ignore-pdb deletes instead;
 * - drain cordons the node before the first eviction and says how to uncordon;
 * - an orphan is left alone until a fresh GET says it is gone and the kubelet's cleanup time passed;
 * - the final delete is withheld while a tmpfs is mounted at the pod's volume path, issued after;
 * - a pod held by a finalizer is explained, never patched;
 * - a 60 s agent run beside the running kubelet stops nothing the kubelet desires;
 * - maintenance through Kubernetes: `podctl.io/drain=requested` on the Node makes the agent drain
 *   it (through the API beside the kubelet, over CRI without it), with Events on the Node and
 *   `done` at the end; `podctl.io/drain=uncordon` uncordons.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { writeAgentKubeconfig, writeKubeconfig } from '../kube/support.js';
import { freePort } from '../support/free-port.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';
import { describeContainerd } from './support/env.js';
import { collect, requireBuild, runPodctl, spawnPodctl } from './support/cli.js';
import { usePrivateNode } from './support/context.js';
import { exitInfo } from './support/observe.js';
import { removeSandbox, type PodInput, type RealPod } from './support/pods.js';
import { until } from '../support/wait.js';

/** A stand-in for the kubelet's healthz: "ok" while `up`. */
class StandInKubelet {
  #server: http.Server | undefined;
  port = 0;
  async up(): Promise<void> {
    this.#server = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => this.#server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.#server.address() as AddressInfo).port;
  }
  async down(): Promise<void> {
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
    this.#server?.closeAllConnections();
    this.#server = undefined;
  }
  get healthz(): string {
    return `127.0.0.1:${this.port}/healthz`;
  }
}

describeContainerd(import.meta.url, 'beside a running kubelet (containerd, local API server)', () => {
  beforeAll(() => requireBuild());
  const node = usePrivateNode('kubelet');
  const kubelet = new StandInKubelet();
  let server: KubeApiServer;
  let stateDir: string;
  let kubeconfig: string;
  /** The agent's: podctl's ServiceAccount under the RBAC shipped in deploy/. */
  let agentKubeconfig: string;
  let kubeletRoot: string;
  let playing: NodeJS.Timeout | undefined;

  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-kubelet-'));
    kubeletRoot = join(stateDir, 'kubelet');
    server = await startKubeApiServer();
    server.addNode('node-1');
    server.installNodeRestriction(); // the agent writes only with its node restriction in force
    kubeconfig = writeKubeconfig(stateDir, server.port);
    agentKubeconfig = writeAgentKubeconfig(stateDir, server);
    await kubelet.up();
  });
  afterEach(async () => {
    // every request the agent made is one the shipped RBAC grants (checked after the clean-up)
    const denied = server.denied().map((r) => `${r.method} ${r.path}`);
    if (playing) clearInterval(playing);
    playing = undefined;
    await kubelet.down();
    await server.stop();
    await node.pods.removeAll();
    await rm(stateDir, { recursive: true, force: true });
    expect(denied).toEqual([]);
  });

  const podctl = (args: string[], api = true) =>
    runPodctl([...args, '--kubelet-healthz', kubelet.healthz, '--node', 'node-1', ...(api ? ['--kubeconfig', kubeconfig] : [])], {
      endpoint: `unix://${node.socket}`,
      stateDir,
      timeoutMs: 90_000,
    });
  // a container the played kubelet removed is not running either
  const running = async (pod: RealPod): Promise<boolean> => (await exitInfo(node.cri, pod.containers[0]!.id).catch(() => ({ state: 'removed' }))).state === 'running';

  /**
   * A pod in the runtime and, bound to node-1, in the API server (the same UID); managed by a
   * ReplicaSet unless `controller` says otherwise (null: a bare pod).
   */
  async function apiPod(
    input: PodInput & { finalizers?: string[]; controller?: { kind: string; name: string } | null; volumes?: object[]; apiAnnotations?: Record<string, string> } = {},
  ): Promise<RealPod> {
    const pod = await node.pods.create({ terminationGracePeriodSeconds: 5, ...input });
    const controller = input.controller === undefined ? { kind: 'ReplicaSet', name: `${input.name ?? 'e2e'}-rs` } : input.controller;
    server.addPod({
      metadata: {
        name: pod.name,
        namespace: pod.namespace,
        uid: pod.uid,
        labels: input.labels ?? {},
        ...(input.apiAnnotations ? { annotations: input.apiAnnotations } : {}),
        ...(input.finalizers ? { finalizers: input.finalizers } : {}),
        ...(controller ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: controller.kind, name: controller.name, uid: `${controller.name}-uid`, controller: true }] } : {}),
      },
      spec: {
        nodeName: 'node-1',
        terminationGracePeriodSeconds: input.terminationGracePeriodSeconds ?? 5,
        containers: [{ name: 'main', image: 'x' }],
        ...(input.volumes ? { volumes: input.volumes } : {}),
      },
      status: { phase: 'Running' },
    });
    return pod;
  }

  /** A static pod in the runtime (config.source file) and its mirror pod in the API server. */
  async function staticPod(name: string): Promise<RealPod> {
    const pod = await node.pods.create({ name, namespace: 'kube-system', configSource: 'file', terminationGracePeriodSeconds: 1 });
    server.addPod({
      metadata: { name: pod.name, namespace: pod.namespace, annotations: { 'kubernetes.io/config.mirror': 'hash', 'kubernetes.io/config.source': 'file' } },
      spec: { nodeName: 'node-1', containers: [{ name: 'main', image: 'x' }] },
      status: { phase: 'Running' },
    });
    return pod;
  }

  /** Plays the kubelet: a pod marked deleted in the API is stopped over CRI, then its deletion finished. */
  function playKubelet(real: RealPod[]): void {
    playing = setInterval(() => {
      for (const pod of real) {
        const inApi = server.getPod(pod.namespace, pod.name);
        if (inApi?.metadata?.deletionTimestamp) {
          void removeSandbox(node.cri, pod.sandboxId)
            .then(() => server.deletePod(pod.namespace, pod.name, 0))
            .catch(() => undefined);
        }
      }
    }, 200);
  }

  it('a kill of a pod the kubelet desires: refused while it runs (exit 2, naming --force), allowed once it is down; --force stops it over CRI', async () => {
    const etcd = await node.pods.create({ name: 'etcd', namespace: 'kube-system', configSource: 'file', terminationGracePeriodSeconds: 1 });
    const refused = await podctl(['kill', `${etcd.namespace}/${etcd.name}`, '--yes'], false);
    expect(refused.code).toBe(2);
    expect(
      refused.stderr
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('error:')),
    ).toHaveLength(1);
    expect(refused.stderr).toMatch(/kubelet is running .*--force/);
    expect(await running(etcd)).toBe(true);

    const forced = await podctl(['kill', `${etcd.namespace}/${etcd.name}`, '--yes', '--force', '--json'], false);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stderr).toMatch(/--force: stopping .* over CRI .* it may start them again/);
    expect((JSON.parse(forced.stdout) as { kubelet: { state: string } }).kubelet.state).toBe('running');
    expect(await running(etcd)).toBe(false);

    const other = await node.pods.create({ name: 'scheduler', namespace: 'kube-system', configSource: 'file', terminationGracePeriodSeconds: 1 });
    await kubelet.down();
    const allowed = await podctl(['kill', `${other.namespace}/${other.name}`, '--yes', '--json'], false);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect((JSON.parse(allowed.stdout) as { kubelet: { state: string } }).kubelet.state).toBe('down');
    expect(await running(other)).toBe(false);
  });

  it('with a kubeconfig the kill is a delete through the API with the grace, and podctl waits for the kubelet', async () => {
    const pod = await apiPod({ name: 'web', terminationGracePeriodSeconds: 20 });
    playKubelet([pod]);
    const run = await podctl(['kill', `${pod.namespace}/${pod.name}`, '--grace', '3', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { pods: { uid: string; outcome: string; handledBy: string; gracePeriodSeconds: number }[]; kubelet: { state: string; action: string } };
    expect(result.kubelet).toMatchObject({ state: 'running', action: 'via-api' });
    expect(result.pods).toEqual([expect.objectContaining({ uid: pod.uid, outcome: 'terminated', handledBy: 'api', gracePeriodSeconds: 3 })]);
    const deletes = server.requests.filter((r) => r.method === 'DELETE' && r.path.endsWith(`/pods/${pod.name}`));
    expect(deletes[0]?.body).toMatchObject({ gracePeriodSeconds: 3, preconditions: { uid: pod.uid } });
    expect(server.getPod(pod.namespace, pod.name)).toBeUndefined();
  });

  it('evict honours a PodDisruptionBudget (429 → blocked-by-pdb, exit 3); --ignore-pdb deletes instead', async () => {
    const pod = await apiPod({ name: 'db', labels: { app: 'db' } });
    server.addPdb(pod.namespace, 'db', { app: 'db' }, 0);
    const blocked = await podctl(['evict', `${pod.namespace}/${pod.name}`, '--timeout', '3s', '--json']);
    expect(blocked.code).toBe(3);
    const result = JSON.parse(blocked.stdout) as { pods: { outcome: string; error?: string }[] };
    expect(result.pods[0]).toMatchObject({ outcome: 'blocked-by-pdb' });
    expect(result.pods[0]?.error).toMatch(/disruption budget/);
    expect(server.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/eviction')).length).toBeGreaterThanOrEqual(2); // retried within the bound
    expect(await running(pod)).toBe(true);

    playKubelet([pod]);
    const ignored = await podctl(['evict', `${pod.namespace}/${pod.name}`, '--ignore-pdb', '--json']);
    expect(ignored.code, ignored.stderr).toBe(0);
    expect(server.requests.some((r) => r.method === 'DELETE' && r.path.endsWith(`/pods/${pod.name}`))).toBe(true);
    expect(await running(pod)).toBe(false);
  });

  it('drain cordons the node before the first eviction, evicts what the kubelet desires, and says how to uncordon', async () => {
    const a = await apiPod({ name: 'drain-a', labels: { drain: 'me' } });
    const b = await apiPod({ name: 'drain-b', labels: { drain: 'me' } });
    playKubelet([a, b]);
    const run = await podctl(['drain', '-l', 'drain=me', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { cordoned: { node: string; uncordon: string }; viaApi: { uid: string; outcome: string }[]; kubelet: { state: string } };
    expect(result.cordoned).toEqual({ node: 'node-1', uncordon: 'kubectl uncordon node-1' });
    expect(result.viaApi.map((p) => p.outcome).sort()).toEqual(['terminated', 'terminated']);
    const writes = server.requests.filter((r) => r.method === 'PATCH' || (r.method === 'POST' && r.path.endsWith('/eviction')));
    expect(writes[0]).toMatchObject({ method: 'PATCH', path: '/api/v1/nodes/node-1', body: { spec: { unschedulable: true } } });
    expect(writes.filter((r) => r.path.endsWith('/eviction'))).toHaveLength(2);
    expect(run.stderr).toContain('kubectl uncordon node-1');
  });

  it("drain applies kubectl drain's filters: static and DaemonSet pods skipped, terminal pods left, emptyDir and bare pods refused (naming them) unless consented; the dry run shows every verdict", async () => {
    const kas = await staticPod('kas');
    const ds = await apiPod({ name: 'proxy', controller: { kind: 'DaemonSet', name: 'proxy' } });
    const cache = await apiPod({ name: 'cache', volumes: [{ name: 'scratch', emptyDir: {} }] });
    const bare = await apiPod({ name: 'bare', controller: null });
    const web = await apiPod({ name: 'web' });
    const done = await apiPod({ name: 'job' });
    server.updatePod(done.namespace, done.name, (p) => (p.status = { phase: 'Succeeded' }));
    playKubelet([ds, cache, bare, web, done]);
    type Decision = { uid: string; decision: string; reason: string; message: string };
    const plan = await podctl(['drain', '--dry-run', '--json']);
    expect(plan.code, plan.stderr).toBe(2); // the drain would be refused
    const decisions = (JSON.parse(plan.stdout) as { decisions: Decision[] }).decisions;
    const verdict = (pod: RealPod): string | undefined => {
      const d = decisions.find((x) => x.uid === pod.uid);
      return d && `${d.decision} ${d.reason}`;
    };
    expect(verdict(kas)).toBe('skip static');
    expect(verdict(ds)).toBe('skip daemonset');
    expect(verdict(done)).toBe('skip terminal');
    expect(verdict(cache)).toBe('refuse emptydir');
    expect(verdict(bare)).toBe('refuse unmanaged');
    expect(verdict(web)).toBe('evict evict');
    expect(decisions.filter((d) => d.message.includes('config.mirror'))).toEqual([]); // the mirror is the static pod's row, not a second one
    const table = await podctl(['drain', '--dry-run']);
    for (const pod of [kas, ds, done, cache, bare, web]) expect(table.stdout).toContain(`${pod.namespace}/${pod.name}`);
    expect(table.stdout).toMatch(/API eviction +e2e\/web-/);
    expect(table.stdout).toMatch(/refused .*emptydir: emptyDir scratch/);

    const refused = await podctl(['drain']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${cache.namespace}/${cache.name}`);
    expect(refused.stderr).toContain(`${bare.namespace}/${bare.name}`);
    expect(refused.stderr).toContain('--delete-emptydir-data');
    expect(refused.stderr).toContain('--delete-unmanaged');
    expect(server.requests.filter((r) => r.method === 'PATCH' || r.path.endsWith('/eviction'))).toEqual([]); // refused before the cordon

    const run = await podctl(['drain', '--delete-emptydir-data', '--delete-unmanaged', '--json']);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    const result = JSON.parse(run.stdout) as { status: string; viaApi: { uid: string; outcome: string }[] };
    expect(result.status).toBe('done');
    expect(result.viaApi.map((p) => p.uid).sort()).toEqual([cache.uid, bare.uid, web.uid].sort());
    expect(await running(kas)).toBe(true);
    expect(await running(ds)).toBe(true);
    expect(await running(web)).toBe(false);
  }, 120_000);

  it('never a fight with the kubelet: a DaemonSet pod recreated under a new UID, a pod that arrives after the plan and a runtime pod the API does not have keep running', async () => {
    const ds = await apiPod({ name: 'agent', controller: { kind: 'DaemonSet', name: 'agent' } });
    const web = await apiPod({ name: 'web', terminationGracePeriodSeconds: 1 });
    const orphan = await node.pods.create({ name: 'orphan', terminationGracePeriodSeconds: 1 });
    const arrived: RealPod[] = [];
    let recreating: Promise<void> | undefined;
    // right after the first eviction: the DaemonSet's pod comes back under a new UID (as its
    // controller, which ignores the cordon, would recreate it) and another pod arrives
    server.onAnswered = (request) => {
      if (recreating || !request.path.endsWith('/eviction') || request.status !== 201) return;
      recreating = (async () => {
        await removeSandbox(node.cri, ds.sandboxId);
        server.deletePod(ds.namespace, ds.name, 0);
        arrived.push(await apiPod({ name: 'agent', controller: { kind: 'DaemonSet', name: 'agent' } }));
        arrived.push(await apiPod({ name: 'late' }));
      })();
    };
    playKubelet([web]);
    const run = await podctl(['drain', '--json']);
    expect(run.code, run.stderr).toBe(0);
    await recreating;
    expect(arrived).toHaveLength(2);
    expect(await running(web)).toBe(false);
    for (const pod of arrived) expect(await running(pod), `${pod.name} runs`).toBe(true);
    expect(await running(orphan)).toBe(true);
    const decisions = (JSON.parse(run.stdout) as { decisions: { uid: string; decision: string; reason: string }[] }).decisions;
    expect(decisions.find((d) => d.uid === orphan.uid)).toMatchObject({ decision: 'skip', reason: 'orphan' });
    expect(decisions.find((d) => d.uid === ds.uid)).toMatchObject({ decision: 'skip', reason: 'daemonset' });
    expect(decisions.some((d) => arrived.some((p) => p.uid === d.uid))).toBe(false); // in no plan
  }, 120_000);

  it("issue 42's acceptance: a static pod (its mirror in the API), a DaemonSet pod, an emptyDir pod (consented) and a budgeted pod drain to done through podctl drain --kubeconfig; the static and DaemonSet pods keep running", async () => {
    const kas = await staticPod('kas');
    const ds = await apiPod({ name: 'proxy', controller: { kind: 'DaemonSet', name: 'proxy' } });
    const cache = await apiPod({ name: 'cache', volumes: [{ name: 'scratch', emptyDir: {} }] });
    const db = await apiPod({ name: 'db', labels: { app: 'db' } });
    server.addPdb(db.namespace, 'db-budget', { app: 'db' }, 0);
    // the budget allows a disruption a moment after its first refusal (a replacement ready elsewhere)
    server.onAnswered = (request) => {
      if (request.status !== 429 || !request.path.endsWith(`/pods/${db.name}/eviction`)) return;
      setTimeout(() => (server.pdbs.get(`${db.namespace}/db-budget`)!.status.disruptionsAllowed = 1), 1_000);
    };
    playKubelet([ds, cache, db]);
    const run = await podctl(['drain', '--delete-emptydir-data', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { status: string; viaApi: { uid: string; outcome: string }[] };
    expect(result.status).toBe('done');
    expect(result.viaApi.map((p) => `${p.uid} ${p.outcome}`).sort()).toEqual([`${cache.uid} terminated`, `${db.uid} terminated`].sort());
    expect(server.requests.filter((r) => r.path.endsWith(`/pods/${db.name}/eviction`) && r.status === 429).length).toBeGreaterThanOrEqual(1);
    expect(await running(kas)).toBe(true);
    expect(await running(ds)).toBe(true);
    expect(await running(cache)).toBe(false);
    expect(await running(db)).toBe(false);
  }, 120_000);

  it('a PodDisruptionBudget block is retried every 5 s, said once naming the budget; a 429 without a budget is throttling, retried and evicted', async () => {
    const db = await apiPod({ name: 'db', labels: { app: 'db' } });
    const web = await apiPod({ name: 'web' });
    server.addPdb(db.namespace, 'db-budget', { app: 'db' }, 0);
    server.inject({ method: 'POST', path: new RegExp(`/pods/${web.name}/eviction$`), status: 429, retryAfter: 1 });
    playKubelet([db, web]);
    const run = await podctl(['drain', '--timeout', '12s', '--json']);
    expect(run.code).not.toBe(0);
    const result = JSON.parse(run.stdout) as { viaApi: { uid: string; outcome: string; error?: string }[] };
    expect(result.viaApi.find((p) => p.uid === web.uid)?.outcome).toBe('terminated');
    expect(result.viaApi.find((p) => p.uid === db.uid)).toMatchObject({ outcome: 'blocked-by-pdb' });
    const lines = run.stderr.split('\n').filter((l) => l.includes(db.name) && /PodDisruptionBudget/.test(l));
    expect(lines[0]).toMatch(/held by PodDisruptionBudget db-budget \(0 disruption\(s\) allowed\); trying every 5s, gives up in/);
    expect(lines).toHaveLength(2); // held, then the end: not a line per retry
    const attempts = server.requests.filter((r) => r.path.endsWith(`/pods/${db.name}/eviction`)).length;
    expect(attempts).toBeGreaterThanOrEqual(2);
    expect(attempts).toBeLessThanOrEqual(4); // every 5 s within 12 s, not every second
    expect(await running(db)).toBe(true);
  }, 120_000);

  it("an orphan is left alone until a fresh GET says it is gone and the kubelet's cleanup time passed, then terminated", async () => {
    const desired = await apiPod({ name: 'desired' });
    const orphan = await node.pods.create({ name: 'orphan', terminationGracePeriodSeconds: 1 });
    const first = await podctl(['sync-known', '--json']);
    expect(first.code, first.stderr).toBe(0);
    const kept = JSON.parse(first.stdout) as { waitingForKubelet: { uid: string; reason: string; waitSeconds: number }[]; orphanedRuntimePods: { uid: string }[] };
    expect(kept.waitingForKubelet.map((o) => o.uid)).toEqual([orphan.uid]);
    expect(kept.waitingForKubelet[0]?.reason).toMatch(/^orphan, waiting for the kubelet \(\d s\)$/);
    expect(kept.orphanedRuntimePods).toEqual([]);
    expect(server.requests.some((r) => r.method === 'GET' && r.path.endsWith(`/pods/${orphan.name}`))).toBe(true); // the fresh GET
    expect(await running(orphan)).toBe(true);
    // 2 × housekeeping (2 s) + its grace (1 s)
    await new Promise((r) => setTimeout(r, 5_200));
    const second = await podctl(['sync-known', '--json']);
    expect(second.code, second.stderr).toBe(0);
    expect((JSON.parse(second.stdout) as { orphanedRuntimePods: { uid: string }[] }).orphanedRuntimePods.map((p) => p.uid)).toEqual([orphan.uid]);
    await until('the orphan stopped', async () => !(await running(orphan)), { timeoutMs: 20_000, everyMs: 100 });
    expect(await running(desired)).toBe(true);
  });

  it("the final delete is withheld while a volume is mounted at the pod's volume path, issued once it is unmounted; a finalizer is explained, never patched", async () => {
    await kubelet.down(); // the kubelet failed to finish: podctl does
    const pod = await apiPod({ name: 'mounted', terminationGracePeriodSeconds: 1 });
    const held = await apiPod({ name: 'held', terminationGracePeriodSeconds: 1, finalizers: ['example.com/keep'] });
    const volume = join(kubeletRoot, 'pods', pod.uid, 'volumes', 'kubernetes.io~empty-dir', 'cache');
    mkdirSync(volume, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', volume]);
    try {
      server.deletePod(pod.namespace, pod.name, 1);
      server.deletePod(held.namespace, held.name, 1);
      const first = await podctl(['sync-known', '--kubelet-root', kubeletRoot, '--json']);
      expect(first.code, first.stderr).toBe(0);
      await until('the deleted pods stopped', async () => !(await running(pod)) && !(await running(held)), { timeoutMs: 20_000, everyMs: 100 });
      const again = await podctl(['sync-known', '--kubelet-root', kubeletRoot, '--json']);
      const report = (JSON.parse(again.stdout) as { api: { withheld: { uid: string; reason: string }[]; finalizers: { uid: string; explanation: string }[] } }).api;
      expect(report.withheld).toEqual([expect.objectContaining({ uid: pod.uid, reason: `withheld: volume still mounted at ${volume}` })]);
      expect(server.getPod(pod.namespace, pod.name)).toBeDefined();
      expect(server.requests.filter((r) => r.method === 'DELETE' && r.path.endsWith(`/pods/${pod.name}`))).toEqual([]);
      const explain = await podctl(['status', '--uid', pod.uid, '--explain', '--kubelet-root', kubeletRoot]);
      expect(explain.stdout).toContain(`final delete: withheld: volume still mounted at ${volume}`);
      expect(report.finalizers).toEqual([expect.objectContaining({ uid: held.uid, explanation: 'waiting on finalizer example.com/keep, which podctl does not own' })]);
    } finally {
      execFileSync('umount', [volume]);
    }
    const after = await podctl(['sync-known', '--kubelet-root', kubeletRoot, '--json']);
    expect(after.code, after.stderr).toBe(0);
    expect(server.getPod(pod.namespace, pod.name), after.stdout + after.stderr).toBeUndefined();
    expect(server.requests.filter((r) => r.method === 'DELETE' && r.path.endsWith(`/pods/${pod.name}`)).map((r) => r.body?.gracePeriodSeconds)).toEqual([0]);
    // the finalizer: never edited
    expect(server.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith(`/pods/${held.name}`))).toEqual([]);
    expect(server.getPod(held.namespace, held.name)?.metadata?.finalizers).toEqual(['example.com/keep']);
  });

  it('a 60 s agent run beside the running kubelet stops nothing the kubelet desires', async () => {
    const a = await apiPod({ name: 'steady-a' });
    const b = await apiPod({ name: 'steady-b' });
    // deleted in the API with a long grace: the kubelet's to finish, not the agent's
    const c = await apiPod({ name: 'steady-deleted', terminationGracePeriodSeconds: 120 });
    server.deletePod(c.namespace, c.name, 120);
    const port = await freePort();
    const agent = spawnPodctl(['agent', '--interval', '1s', '--metrics-addr', `127.0.0.1:${port}`, '--kubelet-healthz', kubelet.healthz, '--node', 'node-1', '--kubeconfig', agentKubeconfig], {
      endpoint: `unix://${node.socket}`,
      stateDir,
    });
    const done = collect(agent, 120_000);
    let metrics = '';
    let unanswered: unknown;
    try {
      await new Promise((r) => setTimeout(r, 60_000));
      metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    } catch (error) {
      unanswered = error; // told after the agent's own exit and output, which say why
    } finally {
      agent.kill('SIGTERM');
    }
    const run = await done;
    expect(run.code, run.stderr).toBe(0);
    expect(unanswered, `the agent's /metrics on 127.0.0.1:${port}; its output: ${run.stderr}`).toBeUndefined();
    expect(metrics).toMatch(/^podctl_kubelet_up 1$/m);
    expect(metrics).toMatch(/^podctl_runtime_operations_total\{operation_type="stop_container"\} 0$/m);
    expect(metrics).toMatch(/^podctl_runtime_operations_total\{operation_type="stop_podsandbox"\} 0$/m);
    expect(await running(a)).toBe(true);
    expect(await running(b)).toBe(true);
    expect(await running(c)).toBe(true);
  }, 120_000);

  // as kubectl annotate does: a change the agent's watch of its Node sees
  const annotate = (value: string, more: Record<string, string> = {}): void => {
    server.updateNode('node-1', (node) => (node.metadata.annotations = { ...(node.metadata.annotations ?? {}), ...more, 'podctl.io/drain': value }));
  };
  const annotation = (): string | undefined => server.nodes.get('node-1')?.metadata?.annotations?.['podctl.io/drain'];
  const nodeEvents = (): string[] => [...server.events.values()].filter((e) => e.involvedObject?.kind === 'Node' && e.involvedObject?.name === 'node-1').map((e) => e.reason as string);

  async function withAgent<T>(body: () => Promise<T>): Promise<T> {
    const agent = spawnPodctl(['agent', '--interval', '500ms', '--metrics-addr', '127.0.0.1:0', '--kubelet-healthz', kubelet.healthz, '--node', 'node-1', '--kubeconfig', agentKubeconfig], {
      endpoint: `unix://${node.socket}`,
      stateDir,
    });
    const done = collect(agent, 120_000);
    try {
      return await body();
    } finally {
      agent.kill('SIGTERM');
      const run = await done;
      expect(run.code, run.stderr).toBe(0);
    }
  }

  it('maintenance through Kubernetes beside a running kubelet: the annotated node is cordoned, its pods evicted through the API, done; uncordon after', async () => {
    const a = await apiPod({ name: 'maint-a' });
    const b = await apiPod({ name: 'maint-b' });
    playKubelet([a, b]);
    await withAgent(async () => {
      annotate('requested');
      await until('the drain is done', () => annotation() === 'done', { timeoutMs: 60_000, everyMs: 100, detail: () => `annotation ${annotation()}` });
      expect(await running(a)).toBe(false);
      expect(await running(b)).toBe(false);
      const writes = server.requests.filter((r) => (r.method === 'PATCH' && r.path === '/api/v1/nodes/node-1' && r.body?.spec) || r.path.endsWith('/eviction'));
      expect(writes[0]).toMatchObject({ method: 'PATCH', body: { spec: { unschedulable: true } } });
      expect(writes.filter((r) => r.path.endsWith('/eviction')).length).toBe(2);
      expect(nodeEvents()).toEqual(expect.arrayContaining(['DrainStarted', 'DrainCompleted']));
      annotate('uncordon');
      await until('the uncordon is done', () => annotation() === undefined, { timeoutMs: 20_000, everyMs: 100 });
      expect(server.nodes.get('node-1')?.spec?.unschedulable).toBe(false);
      expect(nodeEvents()).toContain('Uncordoned');
    });
  }, 120_000);

  it('maintenance honours a PodDisruptionBudget (failed, naming it) unless podctl.io/drain-ignore-pdb=true', async () => {
    const db = await apiPod({ name: 'maint-db', labels: { app: 'maint-db' } });
    server.addPdb(db.namespace, 'maint-db', { app: 'maint-db' }, 0);
    playKubelet([db]);
    await withAgent(async () => {
      annotate('requested', { 'podctl.io/drain-timeout': '8s' });
      await until('the drain gives up on the budget', () => annotation() === 'failed', { timeoutMs: 90_000, everyMs: 100, detail: () => `annotation ${annotation()}` });
      expect(await running(db)).toBe(true);
      const blocked = [...server.events.values()].filter((e) => e.involvedObject?.kind === 'Node' && e.reason === 'DrainBlockedByPDB');
      expect(blocked).toHaveLength(1); // once per pod, not per retry
      expect(blocked[0]?.message).toMatch(/maint-db.* held by PodDisruptionBudget maint-db \(0 disruption\(s\) allowed\)/);
      const failed = [...server.events.values()].find((e) => e.involvedObject?.kind === 'Node' && e.reason === 'DrainFailed');
      expect(failed?.message).toMatch(/held back: .*maint-db.*blocked-by-pdb/);
      expect(failed?.message).toMatch(/next: .*podctl.io\/drain-ignore-pdb=true/);
      annotate('requested', { 'podctl.io/drain-ignore-pdb': 'true' });
      await until('the drain is done with the budget ignored', () => annotation() === 'done', {
        timeoutMs: 60_000,
        everyMs: 100,
        detail: () => `annotation ${annotation()}; events ${JSON.stringify([...server.events.values()].map((e) => e.message))}`,
      });
      expect(await running(db)).toBe(false);
      expect(server.requests.some((r) => r.method === 'DELETE' && r.path.endsWith(`/pods/${db.name}`))).toBe(true);
    });
  }, 180_000);

  it('maintenance with the kubelet down: the agent drains the node over CRI and says done', async () => {
    await kubelet.down();
    const a = await apiPod({ name: 'local-a', terminationGracePeriodSeconds: 1 });
    await withAgent(async () => {
      annotate('requested');
      await until('the drain is done', () => annotation() === 'done', { timeoutMs: 60_000, everyMs: 100, detail: () => `annotation ${annotation()}` });
      expect(await running(a)).toBe(false);
      expect(server.requests.filter((r) => r.path.endsWith('/eviction'))).toEqual([]);
      expect(nodeEvents()).toEqual(expect.arrayContaining(['DrainStarted', 'DrainCompleted']));
    });
  }, 120_000);
});
