/**
 * The image really runs on a node: dist/podctl-image.oci.tar is imported into the test containerd's
 * CRI namespace and `podctl agent` runs *as a pod through CRI*, as the DaemonSet (deploy/) runs it:
 * host PID and host network, the CRI socket's directory and the state directory mounted from the
 * host, a read-only root filesystem, root. From outside: /healthz answers on the host's loopback;
 * a host-side `podctl kill` SIGKILLed mid-grace is taken over by the agent in its pod, and host-side
 * `podctl status` names the agent's (host) PID as the owner; the agent never stops its own pod.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NamespaceModeCode as NamespaceMode } from '../../src/cri/codes.js';
import { describeContainerd, requireNodeDir } from '../e2e/support/env.js';
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
    const id = await node.cri.createContainer(sandboxId, containerConfig as never, sandboxConfig as never, { timeoutMs: 60_000 });
    await node.cri.startContainer(id, { timeoutMs: 60_000 });
    logFile = join(logDirectory, 'agent', '0.log');
  }, 180_000);

  afterAll(async () => {
    if (sandboxId) await removeSandbox(node.cri, sandboxId).catch(() => undefined);
    if (!skipReason) ctr('images', 'rm', IMAGE);
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  const agentLog = (): string => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');

  it.skipIf(skipReason !== undefined)('answers /healthz on the host, takes over a SIGKILLed host-side kill, and shows as its owner; never stops its own pod', async () => {
    await waitFor(async () => (await healthz(port)) === 200, 60_000, `the agent pod is healthy (log: ${agentLog().slice(-400)})`);

    const pod = await node.pods.create({ name: 'host-kill', terminationGracePeriodSeconds: 8, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const endpoint = `unix://${node.socket}`;
    const kill = spawnPodctl(['kill', `${pod.namespace}/${pod.name}`], { endpoint, stateDir });
    const killRun = collect(kill, 30_000);
    await waitFor(async () => (await runPodctl(['status', '--uid', pod.uid, '-o', 'json'], { endpoint, stateDir })).stdout.includes(`"ownerPid": ${kill.pid}`), 15_000, 'the host-side kill owns the pod');
    kill.kill('SIGKILL');
    expect((await killRun).signal).toBe('SIGKILL');

    let owner = 0;
    await waitFor(async () => {
      const status = JSON.parse((await runPodctl(['status', '--uid', pod.uid, '-o', 'json'], { endpoint, stateDir })).stdout) as { pods: { ownerPid: number | null; ownerAlive: boolean | null; state: string }[] };
      const row = status.pods[0];
      owner = row?.ownerPid ?? 0;
      return owner !== 0 && owner !== kill.pid && row?.ownerAlive === true;
    }, 10_000, `the agent took the pod over (log: ${agentLog().slice(-400)})`);
    // the owner is the agent in its pod, seen through the shared host PID namespace
    expect(readFileSync(`/proc/${owner}/cmdline`, 'utf8').split('\0')).toEqual(expect.arrayContaining(['agent']));
    await waitFor(async () => (await exitInfo(node.cri, pod.containers[0]!.id)).state !== 'running', 30_000, 'the agent finished the termination');

    // its own pod still runs
    expect(await healthz(port)).toBe(200);
    const sandboxes = await node.cri.listPodSandbox({ id: sandboxId });
    expect(sandboxes[0]?.state).toBe(0); // SANDBOX_READY
    expect(agentLog()).toMatch(/took over .*host-kill/);
  }, 120_000);
});
