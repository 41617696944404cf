/**
 * One container event applied to the pod the runtime cache holds, without listing the node (as the
 * kubelet's Evented PLEG updates its cache from the runtime's events): the event's own container's
 * new state with its times and exit code, its removal, or its sandbox's stop and removal.
 *
 * Invariants:
 * - Pure: a new RuntimePod, 'gone', the same pod (nothing new), or undefined when this event cannot
 *   be applied to this pod (an id the pod does not hold, an event without its container's status, a
 *   state the runtime calls unknown, a sandbox deleted while the pod has another or a container):
 *   the cache then relists as it would without patches.
 * - Monotone: a container's state only moves forward (created → running → exited) and a sandbox's
 *   only from ready to not ready; an event older than what the pod holds returns the pod unchanged,
 *   so events replayed over a newer listing never undo it.
 * - Removal is final: a deleted container leaves the pod; a pod whose only sandbox is deleted with no
 *   container left is 'gone'.
 */
import type { ContainerRuntimeState } from '../../engine/types.js';
import { ContainerEventCode, ContainerStateCode, SandboxStateCode } from '../client/codes.js';
import type { ContainerEventSummary, EventContainerStatus } from '../client/container-event.js';
import { nanosToMs, type ContainerDetails, type RuntimeContainer, type RuntimePod } from './pods.js';

export type EventPatch = RuntimePod | 'gone' | undefined;

const STATE_OF_CODE: Record<number, ContainerRuntimeState | undefined> = {
  [ContainerStateCode.CREATED]: 'created',
  [ContainerStateCode.RUNNING]: 'running',
  [ContainerStateCode.EXITED]: 'exited',
};

const STATE_RANK: Record<ContainerRuntimeState, number> = { unknown: -1, created: 0, running: 1, exited: 2 };

/** The exit details an exited container's status carries (an event's, or a ContainerStatus call's). */
export function exitDetailsOf(status: Pick<EventContainerStatus, 'exitCode' | 'startedAt' | 'finishedAt' | 'reason'>): ContainerDetails {
  const details: ContainerDetails = { exitCode: status.exitCode };
  const started = nanosToMs(status.startedAt);
  const finished = nanosToMs(status.finishedAt);
  if (started !== undefined) details.startedAt = started;
  if (finished !== undefined) details.finishedAt = finished;
  if (status.reason) details.reason = status.reason;
  return details;
}

/** The pod after `event`, by the rules above. */
export function patchPod(pod: RuntimePod, event: ContainerEventSummary): EventPatch {
  const index = pod.containers.findIndex((c) => c.id === event.containerId);
  if (index >= 0) return patchContainer(pod, index, event);
  const sandboxIndex = pod.sandboxes.findIndex((s) => s.id === event.containerId);
  if (sandboxIndex >= 0) return patchSandbox(pod, sandboxIndex, event);
  return undefined;
}

function patchContainer(pod: RuntimePod, index: number, event: ContainerEventSummary): EventPatch {
  if (event.containerEventType === ContainerEventCode.DELETED) return { ...pod, containers: pod.containers.filter((_, i) => i !== index) };
  const status = event.status;
  const state = status === undefined ? undefined : STATE_OF_CODE[status.state];
  if (status === undefined || state === undefined) return undefined;
  const current = pod.containers[index]!;
  if (STATE_RANK[state] <= STATE_RANK[current.state]) return pod;
  const next: RuntimeContainer = { ...current, state };
  if (state === 'exited') Object.assign(next, exitDetailsOf(status));
  const containers = [...pod.containers];
  containers[index] = next;
  return { ...pod, containers };
}

function patchSandbox(pod: RuntimePod, index: number, event: ContainerEventSummary): EventPatch {
  const sandbox = pod.sandboxes[index]!;
  if (event.containerEventType === ContainerEventCode.DELETED) {
    // a pod's other sandboxes decide its name, labels and annotations: a listing rebuilds them
    if (pod.sandboxes.length > 1) return undefined;
    return pod.containers.length === 0 ? 'gone' : undefined;
  }
  if (event.sandboxId !== sandbox.id || event.sandboxState === undefined) return undefined;
  if (event.sandboxState !== SandboxStateCode.NOTREADY || sandbox.state === 'notready') return pod;
  const sandboxes = [...pod.sandboxes];
  sandboxes[index] = { ...sandbox, state: 'notready' };
  return { ...pod, sandboxes };
}
