/**
 * The image really runs on a node: dist/podctl-image.oci.tar is imported into the test containerd's
 * CRI namespace and `podctl agent` runs *as a pod through CRI*, with the pod deploy/daemonset.yaml
 * declares, read from it (test/sea/daemonset-pod.ts): host PID and host network, root with every
 * capability dropped, the runtime's default seccomp profile, a read-only root filesystem, no
 * privilege escalation, the CRI socket's directory, the state directory and the kubelet's pods
 * directory (HostToContainer) mounted from the host. From outside: /healthz answers on the host's loopback;
 * a host-side `podctl kill` SIGKILLed mid-grace is taken over by the agent in its pod, and host-side
 * `podctl status` names the agent's (host) PID as the owner; the agent never stops its own pod.
 * And on a private node with the local API server: the agent in its pod, whose own pod the API does
 * not list (an orphan to anyone else), drains the node when it is annotated
 * `podctl.io/drain=requested`, finally deletes the evicted pod (the kubelet's pods directory was
 * read), and neither housekeeping nor the drain stops its own pod (self).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeContainerd, requireNodeDir } from '../e2e/support/env.js';
import { PrivateNode } from '../e2e/support/node.js';
import { connectCri, type CriClient } from '../../src/cri/client/client.js';
import { PodFactory } from '../e2e/support/pods.js';
import { writeAgentKubeconfig } from '../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';
import { useContainerd } from '../e2e/support/context.js';
import { collect, requireBuild, runPodctl, spawnPodctl } from '../e2e/support/cli.js';
import { waitFor as waitForValue } from '../e2e/support/engine.js';
import { exitInfo } from '../e2e/support/observe.js';
import { removeSandbox } from '../e2e/support/pods.js';
import { PACKAGE_VERSION, REPO_ROOT } from './support.js';
import { agentPodConfigs, agentPodTemplate, sharedKubeletRoot } from './daemonset-pod.js';

const ARCHIVE = join(REPO_ROOT, 'dist', 'podctl-image.oci.tar');
const IMAGE = `localhost/podctl:${PACKAGE_VERSION}`;
const skipReason = existsSync(ARCHIVE) ? undefined : `${ARCHIVE} is not built (run \`npm run image\`; \`npm test\` builds it)`;
if (skipReason && process.env.PODCTL_REQUIRE_SEA === '1') throw new Error(`agent pod: PODCTL_REQUIRE_SEA=1 but ${skipReason}`);
if (skipReason) console.warn(`${'#'.repeat(78)}\n# AGENT POD SKIPPED: test/sea/agent-pod.test.ts\n# ${skipReason}\n${'#'.repeat(78)}`);

function waitFor(probe: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<true> {
  return waitForValue(what, async () => ((await probe()) ? true : undefined), timeoutMs, 100);
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

async function healthz(port: number): Promise<number> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) })).status;
  } catch {
    return 0;
  }
}

describeContainerd(import.meta.url, 'podctl agent as a pod from the image', () => {
  const node = useContainerd();
  const ctr = (...args: string[]) => spawnSync('ctr', ['--connect-timeout', '5s', '-a', node.socket, '-n', 'k8s.io', ...args], { encoding: 'utf8', timeout: 120_000 });
  let scratch = '';
  let stateDir = '';
  let kubelet: { pods: string; release: () => void } | undefined;
  let sandboxId = '';
  let logFile = '';
  let port = 0;

  beforeAll(async () => {
    if (skipReason) return;
    requireBuild();
    scratch = mkdtempSync(join(tmpdir(), 'podctl-agent-pod-'));
    stateDir = join(scratch, 'state');
    const imported = ctr('images', 'import', ARCHIVE);
    if (imported.status !== 0) throw new Error(`ctr images import: ${imported.stderr}`);
    port = await freePort();
    const uid = `agent-${process.pid}`;
    const logDirectory = join(requireNodeDir(), 'logs', 'pods', `podctl-system_podctl-agent_${uid}`);
    kubelet = sharedKubeletRoot(join(scratch, 'kubelet'));
    const { sandboxConfig, containerConfig } = agentPodConfigs({
      uid,
      image: IMAGE,
      logDirectory,
      hostDirs: { 'cri-socket': dirname(node.socket), state: stateDir, 'kubelet-pods': kubelet.pods, tmp: join(scratch, 'tmp') },
      env: { NODE_NAME: 'node-1', NODE_IP: '127.0.0.1' },
      extraArgs: ['--interval', '1s', '--metrics-addr', `127.0.0.1:${port}`, ...socketArgs(node.socket)],
    });
    sandboxId = await node.cri.runPodSandbox(sandboxConfig, { timeoutMs: 60_000 });
    const id = await node.cri.createContainer(sandboxId, containerConfig, sandboxConfig, { timeoutMs: 60_000 });
    await node.cri.startContainer(id, { timeoutMs: 60_000 });
    logFile = join(logDirectory, 'agent', '0.log');
  }, 180_000);

  afterAll(async () => {
    if (sandboxId) await removeSandbox(node.cri, sandboxId).catch(() => undefined);
    if (!skipReason) ctr('images', 'rm', IMAGE);
    kubelet?.release();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const agentLog = (): string => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');

  it.skipIf(skipReason !== undefined)(
    'answers /healthz on the host, takes over a SIGKILLed host-side kill, and shows as its owner; never stops its own pod',
    async () => {
      await waitFor(async () => (await healthz(port)) === 200, 60_000, `the agent pod is healthy (log: ${agentLog().slice(-400)})`);

      const pod = await node.pods.create({ name: 'host-kill', terminationGracePeriodSeconds: 8, containers: [{ name: 'stubborn', mode: 'ignore' }] });
      const endpoint = `unix://${node.socket}`;
      const kill = spawnPodctl(['kill', `${pod.namespace}/${pod.name}`], { endpoint, stateDir });
      const killRun = collect(kill, 30_000);
      await waitFor(
        async () => (await runPodctl(['status', '--uid', pod.uid, '-o', 'json'], { endpoint, stateDir })).stdout.includes(`"ownerPid": ${kill.pid}`),
        15_000,
        'the host-side kill owns the pod',
      );
      kill.kill('SIGKILL');
      expect((await killRun).signal).toBe('SIGKILL');

      let owner = 0;
      await waitFor(
        async () => {
          const status = JSON.parse((await runPodctl(['status', '--uid', pod.uid, '-o', 'json'], { endpoint, stateDir })).stdout) as {
            pods: { ownerPid: number | null; ownerAlive: boolean | null; state: string }[];
          };
          const row = status.pods[0];
          owner = row?.ownerPid ?? 0;
          return owner !== 0 && owner !== kill.pid && row?.ownerAlive === true;
        },
        10_000,
        `the agent took the pod over (log: ${agentLog().slice(-400)})`,
      );
      // the owner is the agent in its pod, seen through the shared host PID namespace, and it runs as
      // the DaemonSet says: no capability, the runtime's seccomp filter, no privilege escalation
      expect(readFileSync(`/proc/${owner}/cmdline`, 'utf8').split('\0')).toEqual(expect.arrayContaining(['agent']));
      const status = Object.fromEntries(
        readFileSync(`/proc/${owner}/status`, 'utf8')
          .split('\n')
          .map((line) => line.split(/:\s+/)),
      );
      expect(agentPodTemplate().container.securityContext).toMatchObject({ capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' }, allowPrivilegeEscalation: false });
      expect(status).toMatchObject({ CapPrm: '0000000000000000', CapEff: '0000000000000000', CapBnd: '0000000000000000', Seccomp: '2', NoNewPrivs: '1' });
      await waitFor(async () => (await exitInfo(node.cri, pod.containers[0]!.id)).state !== 'running', 30_000, 'the agent finished the termination');

      // its own pod still runs
      expect(await healthz(port)).toBe(200);
      const sandboxes = await node.cri.listPodSandbox({ id: sandboxId });
      expect(sandboxes[0]?.state).toBe(0); // SANDBOX_READY
      expect(agentLog()).toMatch(/took over .*host-kill/);
    },
    120_000,
  );
});

/** Where the DaemonSet mounts a volume in the agent's container. */
function mountPathOf(volume: string): string {
  return (agentPodTemplate().container.volumeMounts as { name: string; mountPath: string }[]).find((m) => m.name === volume)!.mountPath;
}

/** The DaemonSet's endpoint names containerd.sock in the CRI socket's directory; a test node's socket of another name is named. */
function socketArgs(socket: string): string[] {
  return basename(socket) === 'containerd.sock' ? [] : ['--runtime-endpoint', `unix:///run/containerd/${basename(socket)}`];
}

/** Runs `podctl agent` from the image as a pod through CRI, as deploy/daemonset.yaml declares it. */
async function runAgentPod(cri: CriClient, nodeDir: string, socket: string, hostDirs: Record<string, string>, extraArgs: string[]): Promise<{ sandboxId: string; logFile: string }> {
  const uid = `agent-${process.pid}-${Date.now().toString(36)}`;
  const logDirectory = join(nodeDir, 'logs', 'pods', `podctl-system_podctl-agent_${uid}`);
  const { sandboxConfig, containerConfig } = agentPodConfigs({
    uid,
    image: IMAGE,
    logDirectory,
    hostDirs: { 'cri-socket': dirname(socket), ...hostDirs },
    env: { NODE_NAME: 'node-1', NODE_IP: '127.0.0.1' },
    extraArgs: [...extraArgs, ...socketArgs(socket)],
  });
  const sandboxId = await cri.runPodSandbox(sandboxConfig, { timeoutMs: 60_000 });
  const id = await cri.createContainer(sandboxId, containerConfig, sandboxConfig, { timeoutMs: 60_000 });
  await cri.startContainer(id, { timeoutMs: 60_000 });
  return { sandboxId, logFile: join(logDirectory, 'agent', '0.log') };
}

/** The agent's housekeeping steps so far (podctl_housekeeping_steps_total, every result). */
async function steps(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(2_000) })).text();
  return [...text.matchAll(/^podctl_housekeeping_steps_total\{[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

describeContainerd(import.meta.url, 'podctl agent as a pod drains its node on request, never its own pod', () => {
  const privateNode = new PrivateNode(`/tmp/podctl-e2e-agentpod-${process.pid}`);
  let cri: CriClient;
  let pods: PodFactory;
  let server: KubeApiServer;
  let scratch = '';
  let kubelet: { pods: string; release: () => void } | undefined;

  beforeAll(async () => {
    if (skipReason) return;
    requireBuild();
    await privateNode.up();
    cri = await connectCri({ endpoint: privateNode.socket, timeoutMs: 30_000 });
    pods = new PodFactory(cri, join(privateNode.nodeDir, 'logs', 'pods'));
    const imported = spawnSync('ctr', ['--connect-timeout', '5s', '-a', privateNode.socket, '-n', 'k8s.io', 'images', 'import', ARCHIVE], { encoding: 'utf8', timeout: 120_000 });
    if (imported.status !== 0) throw new Error(`ctr images import: ${imported.stderr}`);
    server = await startKubeApiServer();
    server.addNode('node-1');
    server.installNodeRestriction(); // the agent writes only with its node restriction in force
    scratch = mkdtempSync(join(tmpdir(), 'podctl-agent-pod-drain-'));
    kubelet = sharedKubeletRoot(join(scratch, 'kubelet'));
  }, 180_000);
  afterAll(async () => {
    if (skipReason) return;
    try {
      await pods?.removeAll();
      for (const s of await cri.listPodSandbox()) await removeSandbox(cri, s.id).catch(() => undefined);
    } finally {
      cri?.close();
      await server?.stop();
      await privateNode.down();
      rmSync(`${privateNode.nodeDir}.lock`, { force: true });
      kubelet?.release();
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    }
  }, 120_000);

  it.skipIf(skipReason !== undefined)(
    'drains the annotated node (kubelet down: over CRI), says done, and its own pod keeps running',
    async () => {
      const [work, gone] = [await pods.create({ name: 'work', terminationGracePeriodSeconds: 1 }), await pods.create({ name: 'gone', terminationGracePeriodSeconds: 1 })];
      for (const pod of [work, gone]) {
        server.addPod({
          metadata: { name: pod.name, namespace: pod.namespace, uid: pod.uid },
          spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'x' }] },
          status: { phase: 'Running' },
        });
      }
      // the state directory as the DaemonSet mounts it; the kubeconfig stands for the projected token
      const stateDir = join(scratch, 'state');
      mkdirSync(stateDir);
      const inPod = join(mountPathOf('state'), basename(writeAgentKubeconfig(stateDir, server)));
      const port = await freePort();
      const agent = await runAgentPod(cri, privateNode.nodeDir, privateNode.socket, { state: stateDir, 'kubelet-pods': kubelet!.pods, tmp: join(scratch, 'tmp') }, [
        '--interval',
        '500ms',
        '--metrics-addr',
        `127.0.0.1:${port}`,
        '--kubeconfig',
        inPod,
        '--kubelet-healthz',
        '127.0.0.1:1/healthz',
      ]);
      const log = (): string => (existsSync(agent.logFile) ? readFileSync(agent.logFile, 'utf8') : '');
      await waitFor(async () => (await healthz(port)) === 200, 60_000, `the agent pod is healthy (log: ${log().slice(-400)})`);
      // housekeeping ran a few times: the API does not list the agent's pod, yet it still runs
      await new Promise((r) => setTimeout(r, 2_000));
      expect((await cri.listPodSandbox({ id: agent.sandboxId }))[0]?.state).toBe(0);

      // a pod deleted in the API: stopped, its final delete waits while a volume is mounted under the
      // kubelet's pods directory on the host (seen in the pod through HostToContainer propagation),
      // and goes out once it is not (the directory was read in the pod: else it is withheld, unknown)
      const volume = join(kubelet!.pods, gone.uid, 'volumes', 'kubernetes.io~empty-dir', 'cache');
      mkdirSync(volume, { recursive: true });
      expect(spawnSync('mount', ['-t', 'tmpfs', 'tmpfs', volume]).status).toBe(0);
      try {
        server.deletePod(gone.namespace, gone.name, 1);
        await waitFor(async () => (await exitInfo(cri, gone.containers[0]!.id)).state !== 'running', 30_000, `the deleted pod is stopped (log: ${log().slice(-600)})`);
        // three full steps after it stopped, the pod is still in the API: its final delete was withheld
        const after = (await steps(port)) + 3;
        await waitFor(async () => (await steps(port)) >= after, 30_000, 'three more housekeeping steps');
        expect(server.getPod(gone.namespace, gone.name)).toBeDefined();
        expect(server.requests.filter((r) => r.method === 'DELETE')).toEqual([]);
      } finally {
        spawnSync('umount', [volume]);
      }
      await waitFor(() => server.getPod(gone.namespace, gone.name) === undefined, 30_000, `the pod is finally deleted (log: ${log().slice(-600)})`);

      // as kubectl annotate does: a change the agent's Node watch sees
      server.updateNode('node-1', (node) => (node.metadata.annotations = { 'podctl.io/drain': 'requested' }));
      await waitFor(() => server.nodes.get('node-1')?.metadata?.annotations?.['podctl.io/drain'] === 'done', 60_000, `the drain is done (log: ${log().slice(-600)})`);
      expect((await exitInfo(cri, work.containers[0]!.id)).state).not.toBe('running');
      expect((await cri.listPodSandbox({ id: agent.sandboxId }))[0]?.state).toBe(0);
      expect(await healthz(port)).toBe(200);
      const events = [...server.events.values()].filter((e) => e.involvedObject?.kind === 'Node').map((e) => e.reason);
      expect(events).toEqual(expect.arrayContaining(['DrainStarted', 'DrainCompleted']));
      // every request the agent made is one the shipped RBAC grants
      expect(server.denied().map((r) => `${r.method} ${r.path}`)).toEqual([]);
    },
    180_000,
  );
});
