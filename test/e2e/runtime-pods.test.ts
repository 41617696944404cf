/**
 * Pods as the kubelet writes them into a real containerd, read back the way podctl reads them.
 *
 * podctl works from the runtime alone when there is no API server: these tests write pods with the
 * kubelet's labels and annotations (test/e2e/support/pods.ts, written independently of podctl's own
 * builders) and check that podctl's rebuild from ListPodSandbox/ListContainers recovers the pod.
 */
import { expect, it } from 'vitest';
import { groupRuntimePods, toV1Pod } from '../../src/cri/cache/pods.js';
import { isStaticPod } from '../../src/engine/index.js';
import { describeContainerd } from './support/env.js';
import { useContainerd } from './support/context.js';
import { readContainerLog } from './support/pods.js';
import { GrpcStatus } from '../../src/cri/client/errors.js';
import { Http2Channel } from '../../src/cri/client/channel.js';
import * as proto from '../../src/cri/client/generated/runtime_v1.js';
import { BufferReader } from '../../src/cri/client/reader.js';

describeContainerd(import.meta.url, 'kubelet-style pods on containerd', () => {
  const node = useContainerd();

  async function rebuild(uid: string) {
    const [sandboxes, containers] = await Promise.all([
      node.cri.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': uid } }),
      node.cri.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } }),
    ]);
    return groupRuntimePods(sandboxes, containers).get(uid);
  }

  it('rebuilds name, namespace, UID, containers and grace period from labels and annotations', async () => {
    const preStop = { exec: { command: ['/pause', 'nonsense'] } };
    const real = await node.pods.create({
      name: 'rebuild',
      namespace: 'team-a',
      terminationGracePeriodSeconds: 17,
      labels: { tier: 'web' },
      containers: [
        { name: 'app', mode: 'ignore', preStop },
        { name: 'sidecar', mode: 'default' },
      ],
    });

    const rebuilt = await rebuild(real.uid);
    expect(rebuilt).toBeDefined();
    expect(rebuilt!.name).toBe(real.name);
    expect(rebuilt!.namespace).toBe('team-a');
    expect(rebuilt!.terminationGracePeriodSeconds).toBe(17);
    expect(rebuilt!.static).toBe(false);
    expect(rebuilt!.labels.tier).toBe('web');
    expect(rebuilt!.sandboxes.map((s) => s.state)).toEqual(['ready']);
    expect(rebuilt!.containers.map((c) => [c.name, c.state]).sort()).toEqual([
      ['app', 'running'],
      ['sidecar', 'running'],
    ]);

    const pod = toV1Pod(rebuilt!);
    expect(pod.metadata?.uid).toBe(real.uid);
    expect(pod.spec?.terminationGracePeriodSeconds).toBe(17);
    expect(pod.spec?.containers.find((c) => c.name === 'app')?.lifecycle?.preStop).toEqual(preStop);
    expect(isStaticPod(pod)).toBe(false);
  });

  it('recognises a static pod by its kubernetes.io/config.source annotation', async () => {
    const real = await node.pods.create({ name: 'static', configSource: 'file' });
    const rebuilt = await rebuild(real.uid);
    expect(rebuilt?.configSource).toBe('file');
    expect(rebuilt?.static).toBe(true);
    expect(isStaticPod(toV1Pod(rebuilt!))).toBe(true);
  });

  it('runs host-network pods (empty hostname) next to pod-network ones', async () => {
    const [host, podNet] = await Promise.all([node.pods.create({ name: 'hostnet', hostNetwork: true }), node.pods.create({ name: 'podnet' })]);
    for (const real of [host, podNet]) {
      const status = await node.cri.podSandboxStatus(real.sandboxId);
      expect(status.status?.state).toBe(0); // SANDBOX_READY
    }
  });

  it('the test image logs SIGTERM, then exits per its mode (fixture check)', async () => {
    const real = await node.pods.create({
      name: 'modes',
      containers: [
        { name: 'quits', mode: 'default' },
        { name: 'ignores', mode: 'ignore' },
      ],
    });
    const [quits, ignores] = real.containers;
    await Promise.all([node.cri.stopContainer(quits!.id, 5), node.cri.stopContainer(ignores!.id, 1)]);

    const q = (await node.cri.containerStatus(quits!.id)).status!;
    const i = (await node.cri.containerStatus(ignores!.id)).status!;
    expect([q.state, q.exitCode]).toEqual([2, 0]); // EXITED, exit 0
    expect([i.state, i.exitCode]).toEqual([2, 137]); // EXITED, SIGKILL
    expect((await readContainerLog(quits!)).map((l) => l.message)).toEqual([
      expect.stringContaining('started mode=default'),
      expect.stringContaining('received SIGTERM'),
      expect.stringContaining('exiting 0'),
    ]);
    expect((await readContainerLog(ignores!)).map((l) => l.message)).toEqual([expect.stringContaining('started mode=ignore'), expect.stringContaining('received SIGTERM, ignoring it')]);
  });
  it("reads containerd's container event stream: Unimplemented before 1.7, else each event naming its container, its pod and the container's new state", async () => {
    const { runtimeVersion } = await node.cri.version();
    const [major, minor] = runtimeVersion.split('.').map((n) => Number.parseInt(n, 10));
    const ac = new AbortController();
    const seen: { containerId: string; type: number; podUid: string | undefined; state: number | undefined; exitCode: number | undefined }[] = [];
    const reading = (async () => {
      for await (const e of node.cri.containerEvents(ac.signal))
        seen.push({ containerId: e.containerId, type: e.containerEventType, podUid: e.podUid, state: e.status?.state, exitCode: e.status?.exitCode });
    })().catch((error: unknown) => error);
    if (major! === 1 && minor! < 7) {
      // containerd 1.6 (Debian 12's) has no container events: podctl then relists on a timer
      expect(await reading).toMatchObject({ method: 'GetContainerEvents', code: GrpcStatus.UNIMPLEMENTED });
      return;
    }
    try {
      const real = await node.pods.create({ name: 'events', containers: [{ name: 'main', mode: 'default' }] });
      const [main] = real.containers;
      await node.cri.stopContainer(main!.id, 5);
      const deadline = Date.now() + 10_000;
      while (!seen.some((e) => e.containerId === main!.id && e.type === 2) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const mine = seen.filter((e) => e.containerId === main!.id);
      // CONTAINER_CREATED_EVENT, CONTAINER_STARTED_EVENT, CONTAINER_STOPPED_EVENT, in that order
      expect(mine.map((e) => e.type)).toEqual([0, 1, 2]);
      for (const e of mine) expect(e.podUid).toBe(real.uid);
      expect(mine[2]).toMatchObject({ state: 2, exitCode: 0 }); // EXITED, exit 0
    } finally {
      ac.abort();
      expect(await reading).toBeUndefined();
    }
  });

  it("decodes containerd's answers with the client's reader exactly as the generated decoders do (listings, verbose statuses)", async () => {
    const real = await node.pods.create({ name: 'reader', annotations: { 'example.com/note': 'équipe 名前 😀' } });
    const channel = new Http2Channel({ socketPath: node.socket, maxMessageBytes: 16 << 20 });
    try {
      const call = (method: string, message: Uint8Array) => channel.unary(method, `/runtime.v1.RuntimeService/${method}`, message, Date.now() + 10_000);
      const answers: [Buffer, { decode(input: BufferReader | Uint8Array): unknown }][] = [
        [await call('ListPodSandbox', proto.ListPodSandboxRequest.encode({ filter: undefined }).finish()), proto.ListPodSandboxResponse],
        [await call('ListContainers', proto.ListContainersRequest.encode({ filter: undefined }).finish()), proto.ListContainersResponse],
        [await call('PodSandboxStatus', proto.PodSandboxStatusRequest.encode({ podSandboxId: real.sandboxId, verbose: true }).finish()), proto.PodSandboxStatusResponse],
        [await call('ContainerStatus', proto.ContainerStatusRequest.encode({ containerId: real.containers[0]!.id, verbose: true }).finish()), proto.ContainerStatusResponse],
      ];
      for (const [bytes, type] of answers) expect(type.decode(new BufferReader(bytes))).toStrictEqual(type.decode(bytes));
      const listed = proto.ListPodSandboxResponse.decode(new BufferReader(answers[0]![0])).items.find((s) => s.id === real.sandboxId);
      expect(listed?.annotations['example.com/note']).toBe('équipe 名前 😀');
    } finally {
      channel.close();
    }
  });
});
