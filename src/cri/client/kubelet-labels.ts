/**
 * The labels and annotations the kubelet writes into the runtime, and builders that write them the
 * kubelet's way.
 *
 * podctl reads these to rebuild pods from the runtime alone (`pods.ts`); the embedded simulator's
 * seeding and the end-to-end tests use the builders to create sandboxes and containers that look
 * exactly as if a kubelet had created them. Invariants:
 * - Sandbox labels: the pod's labels plus io.kubernetes.pod.{name,namespace,uid}.
 * - Sandbox annotations: the pod's annotations (kubernetes.io/config.source for static pods).
 * - Container labels: io.kubernetes.pod.{name,namespace,uid} and io.kubernetes.container.name.
 * - Container annotations: hash (uint64, lower-case hex), restartCount, terminationMessagePath,
 *   terminationMessagePolicy, preStopHandler (JSON of a v1 LifecycleHandler), and the pod's
 *   termination/deletion grace periods (decimal seconds).
 * This module imports nothing heavy (types only from the generated module).
 */
import type { V1LifecycleHandler } from '@kubernetes/client-node';
import type { ContainerConfig, DeepPartial, PodSandboxConfig } from './generated/runtime_v1.js';
import { API_SOURCE, CONFIG_SOURCE_ANNOTATION } from '../../engine/pod-kinds.js';

export const LABEL_POD_NAME = 'io.kubernetes.pod.name';
export const LABEL_POD_NAMESPACE = 'io.kubernetes.pod.namespace';
export const LABEL_POD_UID = 'io.kubernetes.pod.uid';
export const LABEL_CONTAINER_NAME = 'io.kubernetes.container.name';

export const ANN_TERMINATION_GRACE = 'io.kubernetes.pod.terminationGracePeriod';
export const ANN_DELETION_GRACE = 'io.kubernetes.pod.deletionGracePeriod';
export const ANN_CONTAINER_HASH = 'io.kubernetes.container.hash';
export const ANN_RESTART_COUNT = 'io.kubernetes.container.restartCount';
export const ANN_PRESTOP = 'io.kubernetes.container.preStopHandler';
export const ANN_TERMINATION_MESSAGE_PATH = 'io.kubernetes.container.terminationMessagePath';
const ANN_TERMINATION_MESSAGE_POLICY = 'io.kubernetes.container.terminationMessagePolicy';

/** podctl's own annotations (not written by the kubelet). */
export const ANN_RESTART_POLICY = 'podctl.io/restart-policy';
export const ANN_PRIORITY = 'podctl.io/priority';
/** Set on a pod (V1Pod or sandbox) to make syncTerminatedPod remove its containers and sandboxes. */
export const ANN_REMOVE = 'podctl.io/remove';

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

export interface KubeletPodMeta {
  name: string;
  namespace: string;
  uid: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Static pod: sets kubernetes.io/config.source=file (unless annotations say otherwise). */
  static?: boolean;
  restartPolicy?: RestartPolicy;
  priority?: number;
  terminationGracePeriodSeconds?: number;
  deletionGracePeriodSeconds?: number;
  hostNetwork?: boolean;
  attempt?: number;
}

export interface KubeletContainerMeta {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  restartCount?: number;
  /** uint64; written as lower-case hex. Default: a hash of the name and image. */
  hash?: bigint;
  preStop?: V1LifecycleHandler;
  terminationMessagePath?: string;
}

/** The pod-level annotations the sandbox carries. */
function sandboxAnnotations(pod: KubeletPodMeta): Record<string, string> {
  const annotations: Record<string, string> = { ...(pod.annotations ?? {}) };
  annotations[CONFIG_SOURCE_ANNOTATION] ??= pod.static ? 'file' : API_SOURCE;
  if (pod.restartPolicy) annotations[ANN_RESTART_POLICY] = pod.restartPolicy;
  if (pod.priority !== undefined) annotations[ANN_PRIORITY] = String(pod.priority);
  return annotations;
}

/** A PodSandboxConfig as the kubelet builds it (reduced to what podctl and the runtimes need). */
export function kubeletSandboxConfig(pod: KubeletPodMeta): DeepPartial<PodSandboxConfig> {
  return {
    metadata: { name: pod.name, namespace: pod.namespace, uid: pod.uid, attempt: pod.attempt ?? 0 },
    // host-network pods take the node's hostname: the runtime wants it empty then
    hostname: pod.hostNetwork ? '' : pod.name,
    logDirectory: `/var/log/pods/${pod.namespace}_${pod.name}_${pod.uid}`,
    labels: {
      ...(pod.labels ?? {}),
      [LABEL_POD_NAME]: pod.name,
      [LABEL_POD_NAMESPACE]: pod.namespace,
      [LABEL_POD_UID]: pod.uid,
    },
    annotations: sandboxAnnotations(pod),
    linux: {
      securityContext: {
        namespaceOptions: { network: pod.hostNetwork ? 2 : 0, pid: 1, ipc: 0 },
      },
    },
  };
}

/** FNV-1a 64 over a string: a stable stand-in for the kubelet's container spec hash. */
function defaultContainerHash(text: string): bigint {
  let h = 0xcbf29ce484222325n;
  for (const byte of Buffer.from(text, 'utf8')) {
    h ^= BigInt(byte);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h;
}

/** A ContainerConfig as the kubelet builds it, labels and annotations included. */
export function kubeletContainerConfig(pod: KubeletPodMeta, c: KubeletContainerMeta): DeepPartial<ContainerConfig> {
  const restartCount = c.restartCount ?? 0;
  const annotations: Record<string, string> = {
    [ANN_CONTAINER_HASH]: (c.hash ?? defaultContainerHash(`${c.name}\0${c.image}`)).toString(16),
    [ANN_RESTART_COUNT]: String(restartCount),
    [ANN_TERMINATION_MESSAGE_PATH]: c.terminationMessagePath ?? '/dev/termination-log',
    [ANN_TERMINATION_MESSAGE_POLICY]: 'File',
  };
  if (pod.terminationGracePeriodSeconds !== undefined) {
    annotations[ANN_TERMINATION_GRACE] = String(pod.terminationGracePeriodSeconds);
  }
  if (pod.deletionGracePeriodSeconds !== undefined) {
    annotations[ANN_DELETION_GRACE] = String(pod.deletionGracePeriodSeconds);
  }
  if (c.preStop) annotations[ANN_PRESTOP] = JSON.stringify(c.preStop);
  return {
    metadata: { name: c.name, attempt: restartCount },
    image: { image: c.image },
    command: c.command ?? [],
    args: c.args ?? [],
    labels: {
      [LABEL_POD_NAME]: pod.name,
      [LABEL_POD_NAMESPACE]: pod.namespace,
      [LABEL_POD_UID]: pod.uid,
      [LABEL_CONTAINER_NAME]: c.name,
    },
    annotations,
    logPath: `${c.name}/${restartCount}.log`,
  };
}
