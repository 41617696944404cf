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
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeContainerd } from '../e2e/support/env.js';
import { writeAgentKubeconfig } from '../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';
import { useContainerd, usePrivateNode } from '../e2e/support/context.js';
import { collect, requireBuild, runPodctl, spawnPodctl } from '../e2e/support/cli.js';
import { exitInfo } from '../e2e/support/observe.js';
import { removeSandbox } from '../e2e/support/pods.js';
import { agentPodTemplate, importImage, noImage, removeImage, runAgentPod, sharedKubeletRoot } from './daemonset-pod.js';
import { until } from '../support/wait.js';
import { freePort } from '../support/free-port.js';

const skipReason = noImage;
if (skipReason && process.env.PODCTL_REQUIRE_SEA === '1') throw new Error(`agent pod: PODCTL_REQUIRE_SEA=1 but ${skipReason}`);
if (skipReason) console.warn(`${'#'.repeat(78)}\n# AGENT POD SKIPPED: test/sea/agent-pod.test.ts\n# ${skipReason}\n${'#'.repeat(78)}`);

async function healthz(port: number): Promise<number> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) })).status;
  } catch {
    return 0;
  }
}

describeContainerd(import.meta.url, 'podctl agent as a pod from the image', () => {
  const node = useContainerd();
  let scratch = '';
  let stateDir = '';
  let kubelet: { pods: string; release: () => void } | undefined;
  let sandboxId = '';
  let agentLog = (): string => '';
  let port = 0;

  beforeAll(async () => {
    if (skipReason) return;
    requireBuild();
    scratch = mkdtempSync(join(tmpdir(), 'podctl-agent-pod-'));
    stateDir = join(scratch, 'state');
    importImage(node.socket);
    port = await freePort();
    kubelet = sharedKubeletRoot(join(scratch, 'kubelet'));
    const pod = await runAgentPod(node, {
      uid: `agent-${process.pid}`,
      hostDirs: { state: stateDir, 'kubelet-pods': kubelet.pods, tmp: join(scratch, 'tmp') },
      extraArgs: ['--interval', '1s', '--metrics-addr', `127.0.0.1:${port}`],
    });
    sandboxId = pod.sandboxId;
    agentLog = pod.log;
  }, 180_000);

  afterAll(async () => {
    if (sandboxId) await removeSandbox(node.cri, sandboxId).catch(() => undefined);
    if (!skipReason) removeImage(node.socket);
    kubelet?.release();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it.skipIf(skipReason !== undefined)(
    'answers /healthz on the host, takes over a SIGKILLed host-side kill, and shows as its owner; never stops its own pod',
    async () => {
      await until('the agent pod is healthy', async () => (await healthz(port)) === 200, { timeoutMs: 60_000, everyMs: 100, detail: () => agentLog().slice(-400) });

      const pod = await node.pods.create({ name: 'host-kill', terminationGracePeriodSeconds: 8, containers: [{ name: 'stubborn', mode: 'ignore' }] });
      const endpoint = `unix://${node.socket}`;
      const kill = spawnPodctl(['kill', `${pod.namespace}/${pod.name}`], { endpoint, stateDir });
      const killRun = collect(kill, 30_000);
      await until('the host-side kill owns the pod', async () => (await runPodctl(['status', '--uid', pod.uid, '-o', 'json'], { endpoint, stateDir })).stdout.includes(`"ownerPid": ${kill.pid}`), {
        timeoutMs: 15_000,
        everyMs: 100,
      });
      kill.kill('SIGKILL');
      expect((await killRun).signal).toBe('SIGKILL');

      let owner = 0;
      await until(
        'the agent took the pod over',
        async () => {
          const status = JSON.parse((await runPodctl(['status', '--uid', pod.uid, '-o', 'json'], { endpoint, stateDir })).stdout) as {
            pods: { ownerPid: number | null; ownerAlive: boolean | null; state: string }[];
          };
          const row = status.pods[0];
          owner = row?.ownerPid ?? 0;
          return owner !== 0 && owner !== kill.pid && row?.ownerAlive === true;
        },
        { timeoutMs: 10_000, everyMs: 100, detail: () => agentLog().slice(-400) },
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
      await until('the agent finished the termination', async () => (await exitInfo(node.cri, pod.containers[0]!.id)).state !== 'running', { timeoutMs: 30_000, everyMs: 100 });

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

/** The agent's housekeeping steps so far (podctl_housekeeping_steps_total, every result). */
async function steps(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(2_000) })).text();
  return [...text.matchAll(/^podctl_housekeeping_steps_total\{[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

describeContainerd(import.meta.url, 'podctl agent as a pod drains its node on request, never its own pod', () => {
  const node = usePrivateNode('agentpod', skipReason);
  let server: KubeApiServer;
  let scratch = '';
  let kubelet: { pods: string; release: () => void } | undefined;

  beforeAll(async () => {
    if (skipReason) return;
    requireBuild();
    importImage(node.socket);
    server = await startKubeApiServer();
    server.addNode('node-1');
    server.installNodeRestriction(); // the agent writes only with its node restriction in force
    scratch = mkdtempSync(join(tmpdir(), 'podctl-agent-pod-drain-'));
    kubelet = sharedKubeletRoot(join(scratch, 'kubelet'));
  }, 180_000);
  afterAll(async () => {
    if (skipReason) return;
    try {
      // the agent's pod too (not the factory's): the node's own clean-up follows
      for (const s of await node.cri.listPodSandbox()) await removeSandbox(node.cri, s.id).catch(() => undefined);
    } finally {
      await server?.stop();
      kubelet?.release();
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    }
  }, 120_000);

  it.skipIf(skipReason !== undefined)(
    'drains the annotated node (kubelet down: over CRI), says done, and its own pod keeps running',
    async () => {
      const [work, gone] = [await node.pods.create({ name: 'work', terminationGracePeriodSeconds: 1 }), await node.pods.create({ name: 'gone', terminationGracePeriodSeconds: 1 })];
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
      const agent = await runAgentPod(node, {
        uid: `agent-${process.pid}-${Date.now().toString(36)}`,
        hostDirs: { state: stateDir, 'kubelet-pods': kubelet!.pods, tmp: join(scratch, 'tmp') },
        extraArgs: ['--interval', '500ms', '--metrics-addr', `127.0.0.1:${port}`, '--kubeconfig', inPod, '--kubelet-healthz', '127.0.0.1:1/healthz'],
      });
      const log = agent.log;
      await until('the agent pod is healthy', async () => (await healthz(port)) === 200, { timeoutMs: 60_000, everyMs: 100, detail: () => log().slice(-400) });
      // housekeeping ran a few times: the API does not list the agent's pod, yet it still runs
      await new Promise((r) => setTimeout(r, 2_000));
      expect((await node.cri.listPodSandbox({ id: agent.sandboxId }))[0]?.state).toBe(0);

      // a pod deleted in the API: stopped, its final delete waits while a volume is mounted under the
      // kubelet's pods directory on the host (seen in the pod through HostToContainer propagation),
      // and goes out once it is not (the directory was read in the pod: else it is withheld, unknown)
      const volume = join(kubelet!.pods, gone.uid, 'volumes', 'kubernetes.io~empty-dir', 'cache');
      mkdirSync(volume, { recursive: true });
      expect(spawnSync('mount', ['-t', 'tmpfs', 'tmpfs', volume]).status).toBe(0);
      try {
        server.deletePod(gone.namespace, gone.name, 1);
        await until('the deleted pod is stopped', async () => (await exitInfo(node.cri, gone.containers[0]!.id)).state !== 'running', {
          timeoutMs: 30_000,
          everyMs: 100,
          detail: () => log().slice(-600),
        });
        // three full steps after it stopped, the pod is still in the API: its final delete was withheld
        const after = (await steps(port)) + 3;
        await until('three more housekeeping steps', async () => (await steps(port)) >= after, { timeoutMs: 30_000, everyMs: 100 });
        expect(server.getPod(gone.namespace, gone.name)).toBeDefined();
        expect(server.requests.filter((r) => r.method === 'DELETE')).toEqual([]);
      } finally {
        spawnSync('umount', [volume]);
      }
      await until('the pod is finally deleted', () => server.getPod(gone.namespace, gone.name) === undefined, { timeoutMs: 30_000, everyMs: 100, detail: () => log().slice(-600) });

      // as kubectl annotate does: a change the agent's Node watch sees
      server.updateNode('node-1', (node) => (node.metadata.annotations = { 'podctl.io/drain': 'requested' }));
      await until('the drain is done', () => server.nodes.get('node-1')?.metadata?.annotations?.['podctl.io/drain'] === 'done', { timeoutMs: 60_000, everyMs: 100, detail: () => log().slice(-600) });
      expect((await exitInfo(node.cri, work.containers[0]!.id)).state).not.toBe('running');
      expect((await node.cri.listPodSandbox({ id: agent.sandboxId }))[0]?.state).toBe(0);
      expect(await healthz(port)).toBe(200);
      const events = [...server.events.values()].filter((e) => e.involvedObject?.kind === 'Node').map((e) => e.reason);
      expect(events).toEqual(expect.arrayContaining(['DrainStarted', 'DrainCompleted']));
      // every request the agent made is one the shipped RBAC grants
      expect(server.denied().map((r) => `${r.method} ${r.path}`)).toEqual([]);
    },
    180_000,
  );
});
