/**
 * Rebuilding pods from the runtime alone: what the kubelet wrote into sandbox and container
 * labels/annotations (see kubelet-labels.ts), grouped by pod UID.
 *
 * From one runtime listing (sandboxes + containers, optionally enriched with per-container status
 * details) this module produces, per pod: a RuntimePod (everything the runtime says), the engine's
 * PodStatus and RunningPod, and a synthesized V1Pod for pods podctl has no spec for.
 *
 * Invariants:
 * - Pure functions of their input: no I/O, no clock.
 * - A pod's UID comes from the io.kubernetes.pod.uid label, else the sandbox metadata; a container
 *   without a UID label belongs to its sandbox's pod. Objects with no UID at all are not pods (a
 *   runtime's own containers) and are skipped.
 * - Containers and sandboxes are listed newest first; the spec of a container name is taken from
 *   its newest instance.
 * - Malformed annotations (bad numbers, bad hash, bad JSON) are ignored, never fatal.
 */
import type { V1Container, V1LifecycleHandler, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { ContainerRuntimeState, PodStatus, RunningPod } from '../../engine/types.js';
import { CONFIG_SOURCE_ANNOTATION, isStaticSource } from '../../engine/pod-kinds.js';
import { ContainerStateCode, SandboxStateCode } from '../client/codes.js';
import type { Container, PodSandbox } from '../client/generated/runtime_v1.js';
import {
  ANN_CONTAINER_HASH,
  ANN_DELETION_GRACE,
  ANN_PRESTOP,
  ANN_PRIORITY,
  ANN_RESTART_COUNT,
  ANN_RESTART_POLICY,
  ANN_TERMINATION_GRACE,
  ANN_TERMINATION_MESSAGE_PATH,
  LABEL_CONTAINER_NAME,
  LABEL_POD_NAME,
  LABEL_POD_NAMESPACE,
  LABEL_POD_UID,
  type RestartPolicy,
} from '../client/kubelet-labels.js';

/** Details only ContainerStatus reports (ListContainers does not). */
export interface ContainerDetails {
  startedAt?: number;
  finishedAt?: number;
  exitCode?: number;
  reason?: string;
}

interface RuntimeSandbox {
  id: string;
  state: 'ready' | 'notready';
  attempt: number;
  /** Epoch ms. */
  createdAt: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface RuntimeContainer {
  id: string;
  sandboxId: string;
  name: string;
  attempt: number;
  state: ContainerRuntimeState;
  image: string;
  /** Epoch ms. */
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  exitCode?: number;
  reason?: string;
  restartCount: number;
  /** The kubelet's container spec hash (uint64). */
  hash?: bigint;
  preStop?: V1LifecycleHandler;
  terminationMessagePath?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** Everything the runtime says about one pod. */
export interface RuntimePod {
  uid: string;
  name: string;
  namespace: string;
  /** Newest first. */
  sandboxes: RuntimeSandbox[];
  /** Newest first. */
  containers: RuntimeContainer[];
  /** kubernetes.io/config.source, when the kubelet recorded it. */
  configSource?: string;
  /** Static pods come from a file or URL source, not the API server. */
  static: boolean;
  restartPolicy: RestartPolicy;
  priority?: number;
  terminationGracePeriodSeconds?: number;
  deletionGracePeriodSeconds?: number;
  /** Pod labels (the kubelet's own io.kubernetes.* labels removed). */
  labels: Record<string, string>;
  /** Pod annotations as recorded on the newest sandbox. */
  annotations: Record<string, string>;
}

const CONTAINER_STATES: Record<number, ContainerRuntimeState> = {
  [ContainerStateCode.CREATED]: 'created',
  [ContainerStateCode.RUNNING]: 'running',
  [ContainerStateCode.EXITED]: 'exited',
  [ContainerStateCode.UNKNOWN]: 'unknown',
};

/** Nanoseconds (CRI int64) → epoch ms; 0 → undefined. */
export function nanosToMs(ns: bigint | undefined): number | undefined {
  if (ns === undefined || ns <= 0n) return undefined;
  return Number(ns / 1_000_000n);
}

/** Parses the kubelet's container hash annotation (uint64 in hex). */
export function parseContainerHash(value: string | undefined): bigint | undefined {
  if (!value || !/^(0x)?[0-9a-f]{1,16}$/i.test(value)) return undefined;
  return BigInt(value.startsWith('0x') || value.startsWith('0X') ? value : `0x${value}`);
}

/** Parses a non-negative integer annotation. */
function parseIntAnnotation(value: string | undefined): number | undefined {
  if (value === undefined || !/^-?\d+$/.test(value.trim())) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** Parses the preStopHandler annotation (JSON of a v1 LifecycleHandler). */
export function parsePreStop(value: string | undefined): V1LifecycleHandler | undefined {
  if (!value) return undefined;
  try {
    const parsed: unknown = JSON.parse(value);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
    return parsed;
  } catch {
    return undefined;
  }
}

function parseRestartPolicy(value: string | undefined): RestartPolicy | undefined {
  return value === 'Always' || value === 'OnFailure' || value === 'Never' ? value : undefined;
}

function toRuntimeSandbox(sb: PodSandbox): RuntimeSandbox {
  return {
    id: sb.id,
    state: sb.state === SandboxStateCode.READY ? 'ready' : 'notready',
    attempt: sb.metadata?.attempt ?? 0,
    createdAt: nanosToMs(sb.createdAt) ?? 0,
    labels: sb.labels ?? {},
    annotations: sb.annotations ?? {},
  };
}

function toRuntimeContainer(c: Container, details: ContainerDetails | undefined): RuntimeContainer {
  const annotations = c.annotations ?? {};
  const labels = c.labels ?? {};
  const hash = parseContainerHash(annotations[ANN_CONTAINER_HASH]);
  const preStop = parsePreStop(annotations[ANN_PRESTOP]);
  const out: RuntimeContainer = {
    id: c.id,
    sandboxId: c.podSandboxId,
    name: labels[LABEL_CONTAINER_NAME] ?? c.metadata?.name ?? '',
    attempt: c.metadata?.attempt ?? 0,
    state: CONTAINER_STATES[c.state] ?? 'unknown',
    image: c.image?.image ?? c.imageRef ?? '',
    createdAt: nanosToMs(c.createdAt) ?? 0,
    restartCount: parseIntAnnotation(annotations[ANN_RESTART_COUNT]) ?? c.metadata?.attempt ?? 0,
    labels,
    annotations,
  };
  if (hash !== undefined) out.hash = hash;
  if (preStop) out.preStop = preStop;
  const tmp = annotations[ANN_TERMINATION_MESSAGE_PATH];
  if (tmp) out.terminationMessagePath = tmp;
  if (details?.startedAt !== undefined) out.startedAt = details.startedAt;
  if (details?.finishedAt !== undefined) out.finishedAt = details.finishedAt;
  if (details?.exitCode !== undefined) out.exitCode = details.exitCode;
  if (details?.reason) out.reason = details.reason;
  return out;
}

function newestFirst<T extends { createdAt: number; attempt: number }>(a: T, b: T): number {
  return b.createdAt - a.createdAt || b.attempt - a.attempt;
}

function podLabels(labels: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(labels).filter(([k]) => !k.startsWith('io.kubernetes.')));
}

/** Groups a runtime listing into pods by UID. */
export function groupRuntimePods(sandboxes: readonly PodSandbox[], containers: readonly Container[], details?: ReadonlyMap<string, ContainerDetails>): Map<string, RuntimePod> {
  const pods = new Map<string, RuntimePod>();
  const sandboxUid = new Map<string, string>();

  const podFor = (uid: string, name: string, namespace: string): RuntimePod => {
    let pod = pods.get(uid);
    if (!pod) {
      pod = {
        uid,
        name,
        namespace,
        sandboxes: [],
        containers: [],
        static: false,
        restartPolicy: 'Always',
        labels: {},
        annotations: {},
      };
      pods.set(uid, pod);
    }
    if (!pod.name && name) pod.name = name;
    if (!pod.namespace && namespace) pod.namespace = namespace;
    return pod;
  };

  for (const sb of sandboxes) {
    const uid = sb.labels?.[LABEL_POD_UID] || sb.metadata?.uid;
    if (!uid) continue;
    sandboxUid.set(sb.id, uid);
    const pod = podFor(uid, sb.labels?.[LABEL_POD_NAME] || sb.metadata?.name || '', sb.labels?.[LABEL_POD_NAMESPACE] || sb.metadata?.namespace || '');
    pod.sandboxes.push(toRuntimeSandbox(sb));
  }
  for (const c of containers) {
    const uid = c.labels?.[LABEL_POD_UID] || sandboxUid.get(c.podSandboxId);
    if (!uid) continue;
    const pod = podFor(uid, c.labels?.[LABEL_POD_NAME] ?? '', c.labels?.[LABEL_POD_NAMESPACE] ?? '');
    pod.containers.push(toRuntimeContainer(c, details?.get(c.id)));
  }

  for (const pod of pods.values()) {
    pod.sandboxes.sort(newestFirst);
    pod.containers.sort(newestFirst);
    applyPodAnnotations(pod);
  }
  return pods;
}

/** Fills the pod-level fields from the newest sandbox and the containers' annotations. */
function applyPodAnnotations(pod: RuntimePod): void {
  const newest = pod.sandboxes[0];
  const sbAnn = newest?.annotations ?? {};
  pod.annotations = { ...sbAnn };
  pod.labels = podLabels(newest?.labels ?? {});
  const source = sbAnn[CONFIG_SOURCE_ANNOTATION];
  if (source !== undefined) pod.configSource = source;
  pod.static = isStaticSource(source);
  const fromAnyContainer = (key: string): string | undefined => pod.containers.find((c) => c.annotations[key] !== undefined)?.annotations[key] ?? sbAnn[key];
  const tgp = parseIntAnnotation(fromAnyContainer(ANN_TERMINATION_GRACE));
  if (tgp !== undefined && tgp >= 0) pod.terminationGracePeriodSeconds = tgp;
  const dgp = parseIntAnnotation(fromAnyContainer(ANN_DELETION_GRACE));
  if (dgp !== undefined && dgp >= 0) pod.deletionGracePeriodSeconds = dgp;
  const policy = parseRestartPolicy(sbAnn[ANN_RESTART_POLICY] ?? newest?.labels[ANN_RESTART_POLICY]);
  pod.restartPolicy = policy ?? 'Always';
  const priority = parseIntAnnotation(sbAnn[ANN_PRIORITY]);
  if (priority !== undefined) pod.priority = priority;
}

/** The newest instance of each container name, in first-seen (newest) order. */
export function latestContainers(pod: Pick<RuntimePod, 'containers'>): RuntimeContainer[] {
  const seen = new Map<string, RuntimeContainer>();
  for (const c of pod.containers) if (!seen.has(c.name)) seen.set(c.name, c);
  return [...seen.values()];
}

/** The engine's PodStatus for a runtime pod. */
export function toPodStatus(pod: RuntimePod): PodStatus {
  return {
    id: pod.uid,
    name: pod.name,
    namespace: pod.namespace,
    containerStatuses: pod.containers.map((c) => ({
      id: c.id,
      name: c.name,
      state: c.state,
      ...(c.exitCode !== undefined ? { exitCode: c.exitCode } : {}),
      ...(c.startedAt !== undefined ? { startedAt: c.startedAt } : {}),
      ...(c.finishedAt !== undefined ? { finishedAt: c.finishedAt } : {}),
    })),
    sandboxStatuses: pod.sandboxes.map((s) => ({ id: s.id, state: s.state })),
  };
}

/** The status of a pod the runtime does not know (what the kubelet's cache returns). */
export function emptyPodStatus(uid: string): PodStatus {
  return { id: uid, name: '', namespace: '', containerStatuses: [], sandboxStatuses: [] };
}

/** The engine's RunningPod (a pod with no spec) for a runtime pod. */
export function toRunningPod(pod: RuntimePod): RunningPod {
  return {
    id: pod.uid,
    name: pod.name,
    namespace: pod.namespace,
    containers: pod.containers.map((c) => ({ id: c.id, name: c.name, state: c.state })),
    sandboxes: pod.sandboxes.map((s) => ({ id: s.id, state: s.state })),
  };
}

/**
 * The phase a pod is in by its restart policy and its containers' states (newest instance per
 * name), for pods podctl only observes: Succeeded/Failed once no container will run again.
 */
export function podPhaseOf(restartPolicy: RestartPolicy, containers: readonly { state: ContainerRuntimeState; exitCode?: number }[]): 'Pending' | 'Running' | 'Succeeded' | 'Failed' {
  if (containers.length === 0) return 'Pending';
  if (containers.some((c) => c.state === 'running')) return 'Running';
  if (containers.some((c) => c.state !== 'exited')) return 'Pending';
  const allZero = containers.every((c) => c.exitCode === 0);
  if (restartPolicy === 'Never') return allZero ? 'Succeeded' : 'Failed';
  if (restartPolicy === 'OnFailure' && allZero) return 'Succeeded';
  return 'Running'; // the kubelet would restart them
}

/** A V1Pod synthesized from what the kubelet recorded in the runtime. */
export function toV1Pod(pod: RuntimePod): V1Pod {
  const latest = latestContainers(pod).slice().reverse(); // oldest-first ≈ spec order
  const containers: V1Container[] = latest.map((c) => {
    const container: V1Container = { name: c.name, image: c.image };
    if (c.preStop) container.lifecycle = { preStop: c.preStop };
    if (c.terminationMessagePath) container.terminationMessagePath = c.terminationMessagePath;
    return container;
  });
  // the pod is as old as its first sandbox (a restarted pod's newer sandboxes do not make it younger)
  const oldest = pod.sandboxes.at(-1);
  const v1: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: pod.name,
      namespace: pod.namespace,
      uid: pod.uid,
      labels: { ...pod.labels },
      annotations: { ...pod.annotations },
      ...(oldest && oldest.createdAt > 0 ? { creationTimestamp: new Date(oldest.createdAt) } : {}),
      ...(pod.deletionGracePeriodSeconds !== undefined ? { deletionGracePeriodSeconds: pod.deletionGracePeriodSeconds } : {}),
    },
    spec: {
      containers,
      restartPolicy: pod.restartPolicy,
      ...(pod.terminationGracePeriodSeconds !== undefined ? { terminationGracePeriodSeconds: pod.terminationGracePeriodSeconds } : {}),
      ...(pod.priority !== undefined ? { priority: pod.priority } : {}),
    },
    status: toV1PodStatus(pod),
  };
  return v1;
}

/** A V1PodStatus from runtime state (phase by restart policy; container states). */
function toV1PodStatus(pod: RuntimePod): V1PodStatus {
  const latest = latestContainers(pod);
  return {
    phase: podPhaseOf(pod.restartPolicy, latest),
    containerStatuses: latest.map((c) => ({
      name: c.name,
      image: c.image,
      imageID: c.image,
      containerID: `cri://${c.id}`,
      ready: c.state === 'running',
      restartCount: c.restartCount,
      started: c.state === 'running',
      state:
        c.state === 'running'
          ? { running: { ...(c.startedAt !== undefined ? { startedAt: new Date(c.startedAt) } : {}) } }
          : c.state === 'exited'
            ? {
                terminated: {
                  exitCode: c.exitCode ?? 0,
                  ...(c.reason ? { reason: c.reason } : {}),
                  ...(c.startedAt !== undefined ? { startedAt: new Date(c.startedAt) } : {}),
                  ...(c.finishedAt !== undefined ? { finishedAt: new Date(c.finishedAt) } : {}),
                },
              }
            : { waiting: { reason: c.state === 'created' ? 'ContainerCreating' : 'Unknown' } },
    })),
  };
}
