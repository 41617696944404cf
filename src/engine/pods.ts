/**
 * A pod's identity as the engine keys it (its uid) and the placeholder pod built from a
 * runtime-only pod. The kinds of pod (static, mirror, critical, terminal, the full name) are
 * defined once in pod-kinds.ts.
 *
 * Invariant: nothing here mutates a pod.
 */
import type { RunningPod, V1Pod } from './types.js';

export function uidOfPod(pod: V1Pod): string {
  return pod.metadata?.uid ?? '';
}

/**
 * The placeholder used to reason about a runtime-only pod (grace period, static check). It carries
 * no spec, so it is never stored as an update's pod and never handed to a syncer.
 */
export function placeholderPodOf(runningPod: RunningPod): V1Pod {
  return { metadata: { uid: runningPod.id, name: runningPod.name, namespace: runningPod.namespace } };
}
