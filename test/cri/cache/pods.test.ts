import { describe, expect, it } from 'vitest';
import type { Container, PodSandbox } from '../../../src/cri/client/client.js';
import { groupRuntimePods, latestContainers, parseContainerHash, podPhaseOf, toPodStatus, toRunningPod, toV1Pod } from '../../../src/cri/cache/pods.js';
import { kubeletContainerConfig, kubeletSandboxConfig } from '../../../src/cri/client/kubelet-labels.js';
import { useSimulator } from '../support.js';

const MS = 1_000_000n;

function sandbox(over: Partial<PodSandbox> & { id: string }): PodSandbox {
  return {
    metadata: { name: 'web-1', uid: 'uid-1', namespace: 'shop', attempt: 0 },
    state: 0,
    createdAt: 1_000n * MS,
    labels: {
      'io.kubernetes.pod.name': 'web-1',
      'io.kubernetes.pod.namespace': 'shop',
      'io.kubernetes.pod.uid': 'uid-1',
      app: 'web',
    },
    annotations: { 'kubernetes.io/config.source': 'api', team: 'a' },
    runtimeHandler: '',
    ...over,
  };
}

function container(over: Partial<Container> & { id: string; name: string }): Container {
  const { name, ...rest } = over;
  return {
    podSandboxId: 'sb-1',
    metadata: { name, attempt: 0 },
    image: { image: 'nginx:1', annotations: {}, userSpecifiedImage: '', runtimeHandler: '' },
    imageRef: 'sha256:abc',
    state: 1,
    createdAt: 2_000n * MS,
    labels: {
      'io.kubernetes.pod.name': 'web-1',
      'io.kubernetes.pod.namespace': 'shop',
      'io.kubernetes.pod.uid': 'uid-1',
      'io.kubernetes.container.name': name,
    },
    annotations: {},
    imageId: '',
    ...rest,
  };
}

describe('pod rebuild from kubelet labels and annotations', () => {
  it('groups sandboxes and containers by pod UID and reads the pod identity', () => {
    const pods = groupRuntimePods(
      [sandbox({ id: 'sb-1' }), sandbox({ id: 'sb-9', metadata: { name: 'db', uid: 'uid-9', namespace: 'data', attempt: 0 }, labels: {} })],
      [container({ id: 'c-1', name: 'nginx' }), container({ id: 'c-9', name: 'pg', podSandboxId: 'sb-9', labels: {} })],
    );
    expect([...pods.keys()].sort()).toEqual(['uid-1', 'uid-9']);
    const web = pods.get('uid-1')!;
    expect([web.name, web.namespace]).toEqual(['web-1', 'shop']);
    expect(web.labels).toEqual({ app: 'web' }); // the kubelet's own labels are not pod labels
    // a container without kubelet labels belongs to its sandbox's pod, named by its metadata
    const db = pods.get('uid-9')!;
    expect([db.name, db.namespace]).toEqual(['db', 'data']);
    expect(db.containers.map((c) => c.name)).toEqual(['pg']);
  });

  it('skips objects that carry no pod UID at all', () => {
    const pods = groupRuntimePods([sandbox({ id: 'x', metadata: undefined, labels: {} })], [container({ id: 'y', name: 'n', podSandboxId: 'unknown', labels: {} })]);
    expect(pods.size).toBe(0);
  });

  it('reads grace periods, restart count, preStop handler and the hash as a uint64 BigInt', () => {
    const preStop = { exec: { command: ['/bin/sh', '-c', 'sleep 5'] } };
    const pods = groupRuntimePods(
      [sandbox({ id: 'sb-1' })],
      [
        container({
          id: 'c-1',
          name: 'nginx',
          annotations: {
            'io.kubernetes.container.hash': 'fedcba9876543210',
            'io.kubernetes.container.restartCount': '3',
            'io.kubernetes.container.preStopHandler': JSON.stringify(preStop),
            'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
            'io.kubernetes.pod.terminationGracePeriod': '45',
            'io.kubernetes.pod.deletionGracePeriod': '10',
          },
        }),
      ],
    );
    const pod = pods.get('uid-1')!;
    const c = pod.containers[0]!;
    expect(c.hash).toBe(0xfedcba9876543210n);
    expect(c.hash! > BigInt(Number.MAX_SAFE_INTEGER)).toBe(true);
    expect(c.restartCount).toBe(3);
    expect(c.preStop).toEqual(preStop);
    expect(c.terminationMessagePath).toBe('/dev/termination-log');
    expect(pod.terminationGracePeriodSeconds).toBe(45);
    expect(pod.deletionGracePeriodSeconds).toBe(10);
  });

  it('ignores malformed annotations instead of failing', () => {
    const pods = groupRuntimePods(
      [sandbox({ id: 'sb-1' })],
      [
        container({
          id: 'c-1',
          name: 'nginx',
          annotations: {
            'io.kubernetes.container.hash': 'not-hex',
            'io.kubernetes.container.restartCount': 'many',
            'io.kubernetes.container.preStopHandler': '{broken',
            'io.kubernetes.pod.terminationGracePeriod': '3.5s',
          },
        }),
      ],
    );
    const pod = pods.get('uid-1')!;
    expect(pod.containers[0]!.hash).toBeUndefined();
    expect(pod.containers[0]!.restartCount).toBe(0);
    expect(pod.containers[0]!.preStop).toBeUndefined();
    expect(pod.terminationGracePeriodSeconds).toBeUndefined();
    expect(parseContainerHash('0x1f')).toBe(31n);
    expect(parseContainerHash('12345678901234567')).toBeUndefined(); // more than 64 bits
  });

  it('recognises static pods by kubernetes.io/config.source', () => {
    const file = groupRuntimePods([sandbox({ id: 's', annotations: { 'kubernetes.io/config.source': 'file' } })], []).get('uid-1')!;
    const api = groupRuntimePods([sandbox({ id: 's' })], []).get('uid-1')!;
    const none = groupRuntimePods([sandbox({ id: 's', annotations: {} })], []).get('uid-1')!;
    expect([file.static, file.configSource]).toEqual([true, 'file']);
    expect([api.static, api.configSource]).toEqual([false, 'api']);
    expect([none.static, none.configSource]).toEqual([false, undefined]);
    expect(toV1Pod(file).metadata?.annotations?.['kubernetes.io/config.source']).toBe('file');
  });

  it('orders containers newest first and takes each name from its newest instance', () => {
    const pods = groupRuntimePods(
      [sandbox({ id: 'sb-1' })],
      [
        container({ id: 'old', name: 'app', state: 2, createdAt: 1n * MS, metadata: { name: 'app', attempt: 0 } }),
        container({ id: 'new', name: 'app', state: 1, createdAt: 5n * MS, metadata: { name: 'app', attempt: 1 } }),
        container({ id: 'side', name: 'sidecar', createdAt: 3n * MS }),
      ],
    );
    const pod = pods.get('uid-1')!;
    expect(pod.containers.map((c) => c.id)).toEqual(['new', 'side', 'old']);
    expect(latestContainers(pod).map((c) => c.id)).toEqual(['new', 'side']);
  });

  it('produces the engine PodStatus and RunningPod', () => {
    const pods = groupRuntimePods(
      [sandbox({ id: 'sb-1', state: 1 })],
      [container({ id: 'c-1', name: 'nginx', state: 2 }), container({ id: 'c-2', name: 'side', state: 1, createdAt: 1n * MS })],
      new Map([['c-1', { exitCode: 137, startedAt: 2_000, finishedAt: 3_000, reason: 'Error' }]]),
    );
    const pod = pods.get('uid-1')!;
    expect(toPodStatus(pod)).toEqual({
      id: 'uid-1',
      name: 'web-1',
      namespace: 'shop',
      containerStatuses: [
        { id: 'c-1', name: 'nginx', state: 'exited', exitCode: 137, startedAt: 2_000, finishedAt: 3_000 },
        { id: 'c-2', name: 'side', state: 'running' },
      ],
      sandboxStatuses: [{ id: 'sb-1', state: 'notready' }],
    });
    expect(toRunningPod(pod)).toEqual({
      id: 'uid-1',
      name: 'web-1',
      namespace: 'shop',
      containers: [
        { id: 'c-1', name: 'nginx', state: 'exited' },
        { id: 'c-2', name: 'side', state: 'running' },
      ],
      sandboxes: [{ id: 'sb-1', state: 'notready' }],
    });
  });

  it('synthesizes a V1Pod with grace, preStop, restart policy and deletion grace', () => {
    const preStop = { sleep: { seconds: 4 } };
    const pods = groupRuntimePods(
      [sandbox({ id: 'sb-1', annotations: { 'kubernetes.io/config.source': 'api', 'podctl.io/restart-policy': 'OnFailure', 'podctl.io/priority': '1000' } })],
      [
        container({
          id: 'c-1',
          name: 'nginx',
          annotations: {
            'io.kubernetes.pod.terminationGracePeriod': '20',
            'io.kubernetes.pod.deletionGracePeriod': '5',
            'io.kubernetes.container.preStopHandler': JSON.stringify(preStop),
          },
        }),
      ],
    );
    const v1 = toV1Pod(pods.get('uid-1')!);
    expect(v1.metadata).toMatchObject({ name: 'web-1', namespace: 'shop', uid: 'uid-1', deletionGracePeriodSeconds: 5 });
    expect(v1.metadata?.annotations?.['kubernetes.io/config.source']).toBe('api');
    expect(v1.spec?.terminationGracePeriodSeconds).toBe(20);
    expect(v1.spec?.restartPolicy).toBe('OnFailure');
    expect(v1.spec?.priority).toBe(1000);
    expect(v1.spec?.containers).toEqual([{ name: 'nginx', image: 'nginx:1', lifecycle: { preStop } }]);
    expect(v1.status?.phase).toBe('Running');
  });

  it('defaults the restart policy to Always and omits grace when not annotated', () => {
    const v1 = toV1Pod(groupRuntimePods([sandbox({ id: 'sb-1' })], [container({ id: 'c', name: 'n' })]).get('uid-1')!);
    expect(v1.spec?.restartPolicy).toBe('Always');
    expect(v1.spec?.terminationGracePeriodSeconds).toBeUndefined();
    expect(v1.metadata?.deletionGracePeriodSeconds).toBeUndefined();
  });

  it('derives the phase from the restart policy', () => {
    const exited = (exitCode: number) => ({ state: 'exited' as const, exitCode });
    expect(podPhaseOf('Never', [exited(0), exited(0)])).toBe('Succeeded');
    expect(podPhaseOf('Never', [exited(0), exited(1)])).toBe('Failed');
    expect(podPhaseOf('OnFailure', [exited(0)])).toBe('Succeeded');
    expect(podPhaseOf('OnFailure', [exited(2)])).toBe('Running');
    expect(podPhaseOf('Always', [exited(0)])).toBe('Running');
    expect(podPhaseOf('Never', [exited(0), { state: 'running' }])).toBe('Running');
    expect(podPhaseOf('Never', [])).toBe('Pending');
  });
});

describe('pod rebuild through the CRI', () => {
  const simulator = useSimulator();

  it('recovers what the kubelet-style builders wrote, through RunPodSandbox/CreateContainer and the list RPCs', async () => {
    const { client } = await simulator();
    const meta = {
      name: 'cache-0',
      namespace: 'infra',
      uid: '1b4e28ba-2fa1-11d2-883f-0016d3cca427',
      static: true,
      terminationGracePeriodSeconds: 12,
      restartPolicy: 'Never' as const,
      labels: { app: 'cache' },
    };
    const sbConfig = kubeletSandboxConfig(meta);
    const sandboxId = await client.runPodSandbox(sbConfig);
    const preStop = { exec: { command: ['sleep', '1'] } };
    const cid = await client.createContainer(sandboxId, kubeletContainerConfig(meta, { name: 'redis', image: 'redis:7', restartCount: 2, hash: 0xdeadbeefcafef00dn, preStop }), sbConfig);
    await client.startContainer(cid);

    const pods = groupRuntimePods(await client.listPodSandbox(), await client.listContainers());
    const pod = pods.get(meta.uid)!;
    expect(pod).toMatchObject({ name: 'cache-0', namespace: 'infra', static: true, restartPolicy: 'Never', terminationGracePeriodSeconds: 12 });
    expect(pod.labels).toEqual({ app: 'cache' });
    expect(pod.sandboxes.map((s) => [s.id, s.state])).toEqual([[sandboxId, 'ready']]);
    expect(pod.containers).toHaveLength(1);
    expect(pod.containers[0]).toMatchObject({ id: cid, name: 'redis', state: 'running', restartCount: 2, hash: 0xdeadbeefcafef00dn, preStop });
    const v1 = toV1Pod(pod);
    expect(v1.spec?.containers[0]?.lifecycle?.preStop).toEqual(preStop);
    expect(v1.metadata?.creationTimestamp).toBeInstanceOf(Date);
  });
});
