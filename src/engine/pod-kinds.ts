/**
 * The one definition of each kind of pod podctl tells apart, read from a `V1Pod` as the kubelet
 * (its pod types) and kubectl's drain read it: static, API-sourced, mirror, system-critical,
 * DaemonSet-managed, terminal, and the pod's full name. Every layer — the engine, the runtime
 * reader, the API code, the session's views, the drain planner, the kill gate and the guard —
 * calls these functions; none decides a kind by reading the annotations or fields itself.
 *
 * Invariants (pinned by test/engine/pod-kinds.test.ts):
 * - Static: the `kubernetes.io/config.source` annotation is present and is not `api`. Present
 *   means present: an empty value is a source the kubelet did not get from the API server, so the
 *   pod is static (the kubelet's GetPodSource succeeds on any value). A missing annotation is not
 *   static (nothing says where the pod came from).
 * - Mirror: the `kubernetes.io/config.mirror` annotation is present, whatever its value.
 * - Full name: `${name}_${namespace}` with an empty string for a missing part (the kubelet's
 *   GetPodFullName), so names from the API and from runtime labels compare equal.
 * - Priority: `spec.priority`; when it is missing, the value the Priority admission plugin would
 *   have given the two system classes (`system-node-critical` 2 000 001 000,
 *   `system-cluster-critical` 2 000 000 000), else 0. A pod read from the runtime or a manifest
 *   never went through admission, so its class name is the only priority it carries.
 * - System-critical: static, mirror, or priority ≥ 2 000 000 000 (exactly 2 000 000 000 is
 *   critical), the kubelet's IsCriticalPod, in that order of reasons.
 * - DaemonSet-managed: its controller owner reference (the one with `controller: true`) is of kind
 *   `DaemonSet`, as kubectl drain's daemonSet filter reads it; a non-controller reference does
 *   not count.
 * - Terminal: phase Succeeded or Failed.
 * Nothing here mutates a pod; every function accepts a pod with any part missing.
 */
import type { V1Pod } from './types.js';

/** The annotation the kubelet uses to remember where a pod's config came from. */
export const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
/** The annotation the kubelet puts on the mirror pod it creates in the API for a static pod. */
export const CONFIG_MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';
/** The config source of pods the kubelet took from the API server. */
export const API_SOURCE = 'api';
/** scheduling.SystemCriticalPriority: a pod at or above it is critical to its node. */
export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;
/** scheduling.DefaultPriorityWhenNoDefaultClassExists */
export const DEFAULT_POD_PRIORITY = 0;

/** The system priority classes the Priority admission plugin resolves without a PriorityClass object. */
const SYSTEM_PRIORITY_CLASSES: Readonly<Record<string, number>> = {
  'system-node-critical': SYSTEM_CRITICAL_PRIORITY + 1000,
  'system-cluster-critical': SYSTEM_CRITICAL_PRIORITY,
};

export type CriticalReason = 'static' | 'mirror' | 'priority';

/** The kubelet's full name of a pod: `name_namespace`, empty strings for missing parts. */
export function podFullName(name: string | undefined, namespace: string | undefined): string {
  return `${name ?? ''}_${namespace ?? ''}`;
}

/** podFullName of a pod's metadata. */
export function fullNameOfPod(pod: Pick<V1Pod, 'metadata'> | undefined): string {
  return podFullName(pod?.metadata?.name, pod?.metadata?.namespace);
}

/** Is this config source a static one (any source but the API server, the empty one included)? */
export function isStaticSource(source: string | undefined): boolean {
  return source !== undefined && source !== API_SOURCE;
}

export function isStaticPod(pod: V1Pod | undefined): boolean {
  return isStaticSource(pod?.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION]);
}

/** A pod the kubelet took from the API server (config.source `api`), as its annotations record it. */
export function isApiSourcedPod(pod: V1Pod | undefined): boolean {
  return pod?.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION] === API_SOURCE;
}

/** The API's stand-in for a static pod: never desired or driven itself. */
export function isMirrorPod(pod: V1Pod | undefined): boolean {
  return pod?.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] !== undefined;
}

/** The pod's priority: spec.priority, else its system class's value, else 0. */
export function podPriority(pod: V1Pod | undefined): number {
  const priority = pod?.spec?.priority;
  if (priority !== undefined && priority !== null) return priority;
  const className = pod?.spec?.priorityClassName;
  return (className !== undefined && SYSTEM_PRIORITY_CLASSES[className]) || DEFAULT_POD_PRIORITY;
}

export function isCriticalPriority(priority: number): boolean {
  return priority >= SYSTEM_CRITICAL_PRIORITY;
}

/**
 * Why a pod is critical to its node (the kubelet's IsCriticalPod), or undefined. `knownStatic` is
 * what the runtime recorded when the pod object lacks its annotations (a pod rebuilt from labels).
 */
export function criticalReasonOf(pod: V1Pod | undefined, knownStatic = false): CriticalReason | undefined {
  if (knownStatic || isStaticPod(pod)) return 'static';
  if (isMirrorPod(pod)) return 'mirror';
  if (isCriticalPriority(podPriority(pod))) return 'priority';
  return undefined;
}

export function isCriticalPod(pod: V1Pod | undefined): boolean {
  return criticalReasonOf(pod) !== undefined;
}

/** Is the pod managed by a DaemonSet (its controller owner reference is one)? */
export function isDaemonSetPod(pod: V1Pod | undefined): boolean {
  const controller = pod?.metadata?.ownerReferences?.find((ref) => ref.controller === true);
  return controller?.kind === 'DaemonSet';
}

/** Succeeded or Failed: the pod will never run again. */
export function isTerminalPhase(pod: V1Pod | undefined): boolean {
  const phase = pod?.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}
