/**
 * The image really runs on a node: dist/podctl-image.oci.tar is imported into the test containerd's
 * CRI namespace and `podctl agent` runs *as a pod through CRI*, as the DaemonSet (deploy/) runs it:
 * host PID and host network, the CRI socket's directory and the state directory mounted from the
 * host, a read-only root filesystem, root. From outside: /healthz answers on the host's loopback;
 * a host-side `podctl kill` SIGKILLed mid-grace is taken over by the agent in its pod, and host-side
 * `podctl status` names the agent's (host) PID as the owner; the agent never stops its own pod.
 * And on a private node with the local API server: the agent in its pod, whose own pod the API does
 * not list (an orphan to anyone else), drains the node when it is annotated
 * `podctl.io/drain=requested`, and neither housekeeping nor the drain stops its own pod (self).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { NamespaceModeCode as NamespaceMode } from '../../src/cri/client/codes.js';
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
  let stateDir = '';
  let sandboxId = '';
  let logFile = '';
  let port = 0;

  beforeAll(async () => {
    if (skipReason) return;
    requireBuild();
    stateDir = mkdtempSync(join(tmpdir(), 'podctl-agent-pod-'));
    const imported = ctr('images', 'import', ARCHIVE);
    if (imported.status !== 0) throw new Error(`ctr images import: ${imported.stderr}`);
    port = await freePort();
    const uid = `agent-${process.pid}`;
    const logDirectory = join(requireNodeDir(), 'logs', 'pods', `podctl-system_podctl-agent_${uid}`);
    // as deploy/daemonset.yaml: host PID and network, the CRI socket's directory, the state directory
    const namespaceOptions = { network: NamespaceMode.NODE, pid: NamespaceMode.NODE, ipc: NamespaceMode.POD };
    const sandboxConfig = {
      metadata: { name: 'podctl-agent', uid, namespace: 'podctl-system', attempt: 0 },
      hostname: '',
      logDirectory,
      labels: { 'io.kubernetes.pod.name': 'podctl-agent', 'io.kubernetes.pod.namespace': 'podctl-system', 'io.kubernetes.pod.uid': uid },
      annotations: { 'kubernetes.io/config.source': 'api' },
      linux: { cgroupParent: '', securityContext: { namespaceOptions } },
    };
    sandboxId = await node.cri.runPodSandbox(sandboxConfig, { timeoutMs: 60_000 });
    const socketDir = dirname(node.socket);
    const containerConfig = {
      metadata: { name: 'agent', attempt: 0 },
      image: { image: IMAGE },
      args: ['agent', '--interval', '1s', '--metrics-addr', `127.0.0.1:${port}`, '--runtime-endpoint', `unix:///run/podctl-cri/${node.socket.slice(socketDir.length + 1)}`, '--state-dir', stateDir],
      logPath: 'agent/0.log',
      labels: { 'io.kubernetes.pod.name': 'podctl-agent', 'io.kubernetes.pod.namespace': 'podctl-system', 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': 'agent' },
      annotations: { 'io.kubernetes.container.restartCount': '0', 'io.kubernetes.pod.terminationGracePeriod': '10' },
      mounts: [
        { containerPath: '/run/podctl-cri', hostPath: socketDir },
        { containerPath: stateDir, hostPath: stateDir },
      ],
      linux: { securityContext: { namespaceOptions, readonlyRootfs: true, runAsUser: { value: 0 } } },
    };
    const id = await node.cri.createContainer(sandboxId, containerConfig, sandboxConfig, { timeoutMs: 60_000 });
    await node.cri.startContainer(id, { timeoutMs: 60_000 });
    logFile = join(logDirectory, 'agent', '0.log');
  }, 180_000);

  afterAll(async () => {
    if (sandboxId) await removeSandbox(node.cri, sandboxId).catch(() => undefined);
    if (!skipReason) ctr('images', 'rm', IMAGE);
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
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
      // the owner is the agent in its pod, seen through the shared host PID namespace
      expect(readFileSync(`/proc/${owner}/cmdline`, 'utf8').split('\0')).toEqual(expect.arrayContaining(['agent']));
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

/** Runs `podctl agent` from the image as a pod through CRI, as deploy/daemonset.yaml does. */
async function runAgentPod(cri: CriClient, nodeDir: string, socket: string, args: string[], shared: string[]): Promise<{ sandboxId: string; logFile: string }> {
  const uid = `agent-${process.pid}-${Date.now().toString(36)}`;
  const logDirectory = join(nodeDir, 'logs', 'pods', `podctl-system_podctl-agent_${uid}`);
  const namespaceOptions = { network: NamespaceMode.NODE, pid: NamespaceMode.NODE, ipc: NamespaceMode.POD };
  const sandboxConfig = {
    metadata: { name: 'podctl-agent', uid, namespace: 'podctl-system', attempt: 0 },
    hostname: '',
    logDirectory,
    labels: { 'io.kubernetes.pod.name': 'podctl-agent', 'io.kubernetes.pod.namespace': 'podctl-system', 'io.kubernetes.pod.uid': uid },
    annotations: { 'kubernetes.io/config.source': 'api' },
    linux: { cgroupParent: '', securityContext: { namespaceOptions } },
  };
  const sandboxId = await cri.runPodSandbox(sandboxConfig, { timeoutMs: 60_000 });
  const socketDir = dirname(socket);
  const containerConfig = {
    metadata: { name: 'agent', attempt: 0 },
    image: { image: IMAGE },
    args: ['agent', ...args, '--runtime-endpoint', `unix:///run/podctl-cri/${socket.slice(socketDir.length + 1)}`],
    logPath: 'agent/0.log',
    labels: { 'io.kubernetes.pod.name': 'podctl-agent', 'io.kubernetes.pod.namespace': 'podctl-system', 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': 'agent' },
    annotations: { 'io.kubernetes.container.restartCount': '0', 'io.kubernetes.pod.terminationGracePeriod': '10' },
    mounts: [{ containerPath: '/run/podctl-cri', hostPath: socketDir }, ...shared.map((dir) => ({ containerPath: dir, hostPath: dir }))],
    linux: { securityContext: { namespaceOptions, readonlyRootfs: true, runAsUser: { value: 0 } } },
  };
  const id = await cri.createContainer(sandboxId, containerConfig, sandboxConfig, { timeoutMs: 60_000 });
  await cri.startContainer(id, { timeoutMs: 60_000 });
  return { sandboxId, logFile: join(logDirectory, 'agent', '0.log') };
}

describeContainerd(import.meta.url, 'podctl agent as a pod drains its node on request, never its own pod', () => {
  const privateNode = new PrivateNode(`/tmp/podctl-e2e-agentpod-${process.pid}`);
  let cri: CriClient;
  let pods: PodFactory;
  let server: KubeApiServer;
  let stateDir = '';

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
    stateDir = mkdtempSync(join(tmpdir(), 'podctl-agent-pod-drain-'));
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
      if (stateDir) rmSync(stateDir, { recursive: true, force: true });
    }
  }, 120_000);

  it.skipIf(skipReason !== undefined)(
    'drains the annotated node (kubelet down: over CRI), says done, and its own pod keeps running',
    async () => {
      const work = await pods.create({ name: 'work', terminationGracePeriodSeconds: 1 });
      server.addPod({
        metadata: { name: work.name, namespace: work.namespace, uid: work.uid },
        spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'x' }] },
        status: { phase: 'Running' },
      });
      const kubeconfig = writeAgentKubeconfig(stateDir, server);
      const port = await freePort();
      const agent = await runAgentPod(
        cri,
        privateNode.nodeDir,
        privateNode.socket,
        ['--interval', '500ms', '--metrics-addr', `127.0.0.1:${port}`, '--state-dir', stateDir, '--kubeconfig', kubeconfig, '--node', 'node-1', '--kubelet-healthz', '127.0.0.1:1/healthz'],
        [stateDir],
      );
      const log = (): string => (existsSync(agent.logFile) ? readFileSync(agent.logFile, 'utf8') : '');
      await waitFor(async () => (await healthz(port)) === 200, 60_000, `the agent pod is healthy (log: ${log().slice(-400)})`);
      // housekeeping ran a few times: the API does not list the agent's pod, yet it still runs
      await new Promise((r) => setTimeout(r, 2_000));
      expect((await cri.listPodSandbox({ id: agent.sandboxId }))[0]?.state).toBe(0);

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
