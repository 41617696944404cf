/**
 * The pod statuses and Events podctl writes, worded exactly as the kubelet words them (pure data,
 * no I/O), so one definition serves the client, the pending-action replay and the tests.
 */
import type { V1Pod } from '@kubernetes/client-node';

const NODE_SHUTDOWN_REASON = 'Terminated';
const NODE_SHUTDOWN_MESSAGE = 'Pod was terminated in response to imminent node shutdown.';
const DISRUPTION_TARGET = 'DisruptionTarget';
const TERMINATION_BY_KUBELET = 'TerminationByKubelet';

/** Event reasons (pkg/kubelet/events). */
export const EventReason = {
  Killing: 'Killing',
  ExceededGracePeriod: 'ExceededGracePeriod',
  FailedKillPod: 'FailedKillPod',
  Evicted: 'Evicted',
} as const;

export interface PodStatusChange {
  phase: 'Failed';
  reason: string;
  message: string;
}

export function shutdownStatus(): PodStatusChange {
  return { phase: 'Failed', reason: NODE_SHUTDOWN_REASON, message: NODE_SHUTDOWN_MESSAGE };
}

/**
 * The status the kubelet's eviction manager gives a pod it evicts: phase Failed, reason `Evicted`
 * whatever made it evict (the why is in the message), and the DisruptionTarget condition (statusPatch).
 */
export function evictedStatus(message: string): PodStatusChange {
  return { phase: 'Failed', reason: EventReason.Evicted, message };
}

/**
 * The pods/status strategic-merge patch: phase, reason, message and the DisruptionTarget condition
 * (merged by type), with metadata.uid and resourceVersion as preconditions.
 */
export function statusPatch(pod: Pick<V1Pod, 'metadata'>, change: PodStatusChange, now: Date): Record<string, unknown> {
  return {
    metadata: { uid: pod.metadata?.uid, ...(pod.metadata?.resourceVersion ? { resourceVersion: pod.metadata.resourceVersion } : {}) },
    status: {
      phase: change.phase,
      reason: change.reason,
      message: change.message,
      conditions: [
        {
          type: DISRUPTION_TARGET,
          status: 'True',
          reason: TERMINATION_BY_KUBELET,
          message: change.message,
          // the generation of the pod the condition was decided on, as the kubelet records it
          ...(pod.metadata?.generation !== undefined ? { observedGeneration: pod.metadata.generation } : {}),
          lastTransitionTime: now.toISOString().replace(/\.\d+Z$/, 'Z'),
        },
      ],
    },
  };
}

export function killingMessage(gracePeriodSeconds: number): string {
  return `Stopping pod's containers with a grace period of ${gracePeriodSeconds}s`;
}

export const EXCEEDED_GRACE_MESSAGE = 'Container runtime did not kill the pod within specified grace period.';

export function failedKillMessage(error: string): string {
  return `error killing pod: ${error}`;
}

/** A deterministic Event name per pod UID and reason: a second report of the same pair bumps the count. */
export function eventName(podName: string, uid: string, reason: string): string {
  let h = 0x811c9dc5;
  for (const ch of `${uid}/${reason}`) {
    h ^= ch.charCodeAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return `${podName}.${h.toString(16).padStart(8, '0')}`;
}
