/**
 * A pod's runtime objects as the syncer stops them: one view, in the shape of a CRI listing, built
 * from a listing by the pod's UID label, from the status cache's last relist, or from the IDs of a
 * RunningPod the listing did not return.
 *
 * Invariants: a view built from the cache carries the same objects and states that relist saw
 * (times in nanoseconds, as CRI gives them) and the exit codes it already knows; stubs describe
 * only what the caller knows (ID, name, running/ready), nothing invented beyond the CRI defaults.
 */
import type { Container, PodSandbox } from '../client/client.js';
import { ContainerStateCode, SandboxStateCode } from '../client/codes.js';
import { LABEL_CONTAINER_NAME } from '../client/kubelet-labels.js';
import type { RuntimeContainer, RuntimePod } from '../cache/pods.js';

/** One runtime object view of a pod: from the status cache's relist, or listed by the UID label. */
export interface PodRuntimeView {
  containers: Container[];
  sandboxes: PodSandbox[];
  /** Exit codes of exited containers the status cache already knows (by container ID). */
  exitCodes?: ReadonlyMap<string, number>;
}

const CONTAINER_STATE_CODES: Record<RuntimeContainer['state'], number> = {
  created: ContainerStateCode.CREATED,
  running: ContainerStateCode.RUNNING,
  exited: ContainerStateCode.EXITED,
  unknown: ContainerStateCode.UNKNOWN,
};

/** A running container known only by ID and name (from a RunningPod the listing did not return). */
export function containerStub(id: string, name: string): Container {
  return {
    id,
    podSandboxId: '',
    metadata: { name, attempt: 0 },
    image: undefined,
    imageRef: '',
    state: ContainerStateCode.RUNNING,
    createdAt: 0n,
    labels: {},
    annotations: {},
    imageId: '',
  };
}

/** A ready sandbox known only by ID. */
export function sandboxStub(id: string): PodSandbox {
  return { id, metadata: undefined, state: SandboxStateCode.READY, createdAt: 0n, labels: {}, annotations: {}, runtimeHandler: '' };
}

/** A pod as the status cache relisted it, in the shape of a CRI listing. */
export function viewOfRuntimePod(pod: RuntimePod): PodRuntimeView {
  return {
    sandboxes: pod.sandboxes.map((sb) => ({
      id: sb.id,
      metadata: undefined,
      state: sb.state === 'ready' ? SandboxStateCode.READY : SandboxStateCode.NOTREADY,
      createdAt: BigInt(sb.createdAt) * 1_000_000n,
      labels: sb.labels,
      annotations: sb.annotations,
      runtimeHandler: '',
    })),
    containers: pod.containers.map((c) => ({
      id: c.id,
      podSandboxId: c.sandboxId,
      metadata: { name: c.name, attempt: c.attempt },
      image: undefined,
      imageRef: '',
      state: CONTAINER_STATE_CODES[c.state],
      createdAt: BigInt(c.createdAt) * 1_000_000n,
      labels: c.labels,
      annotations: c.annotations,
      imageId: '',
    })),
    exitCodes: new Map(pod.containers.flatMap((c) => (c.state === 'exited' && c.exitCode !== undefined ? [[c.id, c.exitCode] as const] : []))),
  };
}

export function containerNameOf(c: Container): string {
  return c.labels?.[LABEL_CONTAINER_NAME] ?? c.metadata?.name ?? c.id;
}
