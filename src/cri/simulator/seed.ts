/**
 * Seeding the simulator with pods that look exactly as if a kubelet had created them, and a
 * realistic demo node.
 *
 * Invariants: seeding goes through the same model operations as the RPCs (RunPodSandbox,
 * CreateContainer, StartContainer) with the kubelet's labels and annotations (kubelet-labels.ts);
 * a container's SIGTERM behaviour is carried by its command line (`/pause [ignore|graceful N]`),
 * so the same specs work against a real containerd with the test image. The demo node is
 * deterministic: the same count always yields the same names, UIDs and behaviours.
 */
import { createHash, randomUUID } from 'node:crypto';
import { kubeletContainerConfig, kubeletSandboxConfig, type KubeletPodMeta } from '../client/kubelet-labels.js';
import type { ContainerConfig, DeepPartial, PodSandboxConfig } from '../client/generated/runtime_v1.js';
import { ANN_SIM_PROCESS } from './process.js';
import type { SimRuntime } from './state.js';
import type { SigtermBehaviour, SimContainerSpec, SimPodSpec } from './types.js';

const SIM_IMAGE = 'localhost/podctl-test/pause:1.0';

/** The /pause command line for a SIGTERM behaviour (the test image's program). */
export function pauseCommand(behaviour: SigtermBehaviour | undefined): { command: string[]; args: string[] } {
  if (behaviour === 'ignore') return { command: ['/pause'], args: ['ignore'] };
  if (behaviour && behaviour !== 'exit') return { command: ['/pause'], args: ['graceful', String(behaviour.exitAfterSeconds)] };
  return { command: ['/pause'], args: [] };
}

/** The kubelet's view of a SimPodSpec (UID filled in). */
function podMetaOf(spec: SimPodSpec): KubeletPodMeta & { uid: string } {
  return {
    name: spec.name,
    namespace: spec.namespace ?? 'default',
    uid: spec.uid ?? randomUUID(),
    ...(spec.labels ? { labels: spec.labels } : {}),
    ...(spec.annotations ? { annotations: spec.annotations } : {}),
    ...(spec.static ? { static: true } : {}),
    ...(spec.restartPolicy ? { restartPolicy: spec.restartPolicy } : {}),
    ...(spec.priority !== undefined ? { priority: spec.priority } : {}),
    terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds ?? 30,
    ...(spec.deletionGracePeriodSeconds !== undefined ? { deletionGracePeriodSeconds: spec.deletionGracePeriodSeconds } : {}),
    ...(spec.hostNetwork ? { hostNetwork: true } : {}),
  };
}

function withProcessMode(c: SimContainerSpec, config: DeepPartial<ContainerConfig>): DeepPartial<ContainerConfig> {
  if (!c.process || c.process === 'normal') return config;
  return { ...config, annotations: { ...(config.annotations as Record<string, string>), [ANN_SIM_PROCESS]: c.process } };
}

/** The CRI configs a kubelet would send for one pod and its containers. */
function podConfigs(spec: SimPodSpec): {
  uid: string;
  sandbox: DeepPartial<PodSandboxConfig>;
  containers: { spec: SimContainerSpec; config: DeepPartial<ContainerConfig> }[];
} {
  const meta = podMetaOf(spec);
  const containers = spec.containers ?? [{ name: 'main' }];
  return {
    uid: meta.uid,
    sandbox: kubeletSandboxConfig(meta),
    containers: containers.map((c) => ({
      spec: c,
      config: withProcessMode(
        c,
        kubeletContainerConfig(meta, {
          name: c.name,
          image: c.image ?? SIM_IMAGE,
          ...pauseCommand(c.onSigterm),
          ...(c.restartCount !== undefined ? { restartCount: c.restartCount } : {}),
          ...(c.preStop ? { preStop: c.preStop } : {}),
        }),
      ),
    })),
  };
}

/** Creates the pods in the model; returns their UIDs and IDs in spec order. */
export function seedPods(state: SimRuntime, specs: SimPodSpec[]): { uid: string; sandboxId: string; containerIds: string[] }[] {
  const out: { uid: string; sandboxId: string; containerIds: string[] }[] = [];
  for (const spec of specs) {
    const { uid, sandbox, containers } = podConfigs(spec);
    const sandboxId = state.runPodSandbox(sandbox);
    const containerIds: string[] = [];
    for (const { spec: c, config } of containers) {
      const id = state.createContainer(sandboxId, config);
      const want = c.state ?? 'running';
      if (want !== 'created') state.startContainer(id);
      if (want === 'exited') state.markExited(id, c.exitCode ?? 0);
      containerIds.push(id);
    }
    out.push({ uid, sandboxId, containerIds });
  }
  return out;
}

/** A stable UUID (v4 layout) from a name: demo pods keep their UIDs across runs. */
function stableUid(key: string): string {
  const h = createHash('sha256').update(key).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

interface Template {
  namespace: string;
  base: string;
  build(i: number): Omit<SimPodSpec, 'name' | 'namespace' | 'uid'>;
}

const TEMPLATES: Template[] = [
  {
    namespace: 'web',
    base: 'frontend',
    build: (i) => ({
      priority: 1000,
      terminationGracePeriodSeconds: 30,
      labels: { app: 'frontend' },
      containers: [
        { name: 'nginx', onSigterm: { exitAfterSeconds: 2 + (i % 3) }, preStop: { sleep: { seconds: 1 } } },
        { name: 'log-shipper', onSigterm: 'exit' },
      ],
    }),
  },
  {
    namespace: 'web',
    base: 'api',
    build: (i) => ({
      priority: 1000,
      terminationGracePeriodSeconds: 45,
      labels: { app: 'api' },
      containers: [
        {
          name: 'server',
          onSigterm: i % 4 === 0 ? 'ignore' : { exitAfterSeconds: 5 },
          preStop: { exec: { command: ['sh', '-c', 'sleep 2'] } },
        },
      ],
    }),
  },
  {
    namespace: 'default',
    base: 'worker',
    build: (i) => ({
      terminationGracePeriodSeconds: i % 2 === 0 ? 30 : 10,
      containers: [{ name: 'worker', onSigterm: i % 3 === 0 ? 'ignore' : 'exit' }],
    }),
  },
  {
    namespace: 'batch',
    base: 'report',
    build: (i) => ({
      priority: -10,
      restartPolicy: i % 2 === 0 ? 'Never' : 'OnFailure',
      terminationGracePeriodSeconds: 60,
      containers: [i % 3 === 0 ? { name: 'job', state: 'exited', exitCode: i % 2 === 0 ? 0 : 1 } : { name: 'job', onSigterm: { exitAfterSeconds: 8 } }],
    }),
  },
  {
    namespace: 'monitoring',
    base: 'node-exporter',
    build: () => ({
      priority: 2_000_000_000,
      hostNetwork: true,
      terminationGracePeriodSeconds: 5,
      labels: { app: 'node-exporter' },
      containers: [{ name: 'exporter', onSigterm: 'exit' }],
    }),
  },
  {
    namespace: 'data',
    base: 'postgres',
    build: () => ({
      priority: 5000,
      terminationGracePeriodSeconds: 120,
      containers: [
        { name: 'postgres', onSigterm: { exitAfterSeconds: 15 }, preStop: { exec: { command: ['sh', '-c', 'sleep 3'] } } },
        { name: 'metrics', onSigterm: 'exit' },
      ],
    }),
  },
];

/** The static (file-sourced) control-plane pods of the demo node. */
function staticPods(): SimPodSpec[] {
  return [
    {
      name: 'etcd-node-1',
      namespace: 'kube-system',
      uid: stableUid('static/etcd'),
      static: true,
      hostNetwork: true,
      priority: 2_000_001_000,
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'etcd', onSigterm: { exitAfterSeconds: 1 } }],
    },
    {
      name: 'kube-apiserver-node-1',
      namespace: 'kube-system',
      uid: stableUid('static/kube-apiserver'),
      static: true,
      hostNetwork: true,
      priority: 2_000_001_000,
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'kube-apiserver', onSigterm: 'exit' }],
    },
  ];
}

/**
 * A realistic node of `count` pods (default 36): two static control-plane pods, CoreDNS, and
 * workloads across namespaces with mixed SIGTERM behaviours, grace periods, preStop hooks,
 * restart policies and priorities (annotation podctl.io/priority).
 */
export function demoNode(count = 36): SimPodSpec[] {
  const pods: SimPodSpec[] = staticPods().slice(0, Math.max(0, count));
  if (pods.length < count) {
    pods.push({
      name: 'coredns-5d78c9869d-x7k2p',
      namespace: 'kube-system',
      uid: stableUid('kube-system/coredns'),
      priority: 2_000_000_000,
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'coredns', onSigterm: { exitAfterSeconds: 1 }, restartCount: 1 }],
    });
  }
  for (let i = 0; pods.length < count; i++) {
    const t = TEMPLATES[i % TEMPLATES.length] as Template;
    const n = Math.floor(i / TEMPLATES.length);
    const suffix = createHash('sha1').update(`${t.base}/${n}`).digest('hex').slice(0, 5);
    const name = `${t.base}-${suffix}`;
    pods.push({ name, namespace: t.namespace, uid: stableUid(`${t.namespace}/${name}`), ...t.build(n) });
  }
  return pods;
}
