/**
 * Pod identity helpers: the few facts the engine reads from a `V1Pod` (uid, full name, static
 * source, terminal phase) and the placeholder pod built from a runtime-only pod.
 *
 * Invariants:
 * - A full name is `${name}_${namespace}` with empty strings for missing parts, exactly as the
 *   kubelet builds it, so names from the API and from runtime labels compare equal.
 * - A pod is static when its `kubernetes.io/config.source` annotation is set and is not `api`.
 * - Nothing here mutates a pod.
 */
import type { RunningPod, V1Pod } from './types.js';

/** The annotation the kubelet uses to remember where a pod's config came from. */
export const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';

export function podFullName(name: string | undefined, namespace: string | undefined): string {
  return `${name ?? ''}_${namespace ?? ''}`;
}

export function uidOfPod(pod: V1Pod): string {
  return pod.metadata?.uid ?? '';
}

export function isStaticPod(pod: V1Pod | undefined): boolean {
  const source = pod?.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION];
  return source !== undefined && source !== '' && source !== 'api';
}

/** A pod the kubelet took from the API server (config.source `api`), as its annotations record it. */
export function isApiSourcedPod(pod: V1Pod | undefined): boolean {
  return pod?.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION] === 'api';
}

/** Succeeded or Failed: the pod will never run again. */
export function isTerminalPhase(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

/**
 * The placeholder used to reason about a runtime-only pod (grace period, static check). It carries
 * no spec, so it is never stored as an update's pod and never handed to a syncer.
 */
export function placeholderPodOf(runningPod: RunningPod): V1Pod {
  return { metadata: { uid: runningPod.id, name: runningPod.name, namespace: runningPod.namespace } };
}
