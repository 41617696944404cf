/**
 * The API server as the kubelet's config source, decided in pure functions: which pods this node
 * is meant to run, which are being deleted (and with what grace), and which runtime static pods
 * their mirror pods stand for.
 *
 * Invariants:
 * - A mirror pod (annotation kubernetes.io/config.mirror) is never itself desired nor driven: it
 *   stands for the runtime's static pod with the same full name (name_namespace), which becomes
 *   desired in its place (so housekeeping never takes it for an orphan).
 * - A pod with deletionTimestamp is still desired (it is not an orphan) and is also a deletion:
 *   a kill with its deletionGracePeriodSeconds (else its spec grace), as the engine's
 *   podOwnGracePeriod reads it; the engine only ever shortens a grace, so a later, longer deletion
 *   grace changes nothing.
 * - A pod in a terminal phase (Succeeded/Failed) is not a deletion to drive: it is a terminal stop
 *   (`terminal`), a kill with its own grace as the kubelet stops the containers of a terminal pod,
 *   and never a final delete (the pod object is the API's to keep or remove).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { podOwnGracePeriod } from '../engine/grace.js';
import { CONFIG_SOURCE_ANNOTATION, fullNameOfPod, isMirrorPod, isTerminalPhase, podFullName } from '../engine/pod-kinds.js';

export function isBeingDeleted(pod: V1Pod): boolean {
  return pod.metadata?.deletionTimestamp !== undefined && pod.metadata?.deletionTimestamp !== null;
}

/** A runtime pod as the plan needs it. */
export interface RuntimePodRef {
  uid: string;
  namespace: string;
  name: string;
  static: boolean;
  /** The pod rebuilt from the runtime (labels and annotations), when known. */
  pod?: V1Pod;
}

export interface Deletion {
  uid: string;
  namespace: string;
  name: string;
  /**
   * The grace the API asked for: the engine's podOwnGracePeriod (deletionGracePeriodSeconds, else
   * the spec's, else 30; at least 1 s, as the engine kills with it).
   */
  gracePeriodSeconds: number;
  pod: V1Pod;
}

interface MirrorMatch {
  mirror: { namespace: string; name: string; uid: string };
  /** The runtime static pod it stands for, when the runtime has one. */
  staticUid: string | undefined;
}

/** A pod whose phase in the API is terminal: its containers are stopped with its grace, the pod object is left alone. */
export interface TerminalStop {
  uid: string;
  namespace: string;
  name: string;
  phase: 'Succeeded' | 'Failed';
  /** The engine's podOwnGracePeriod of the pod. */
  gracePeriodSeconds: number;
  /** Why it is stopped, as `status --explain` shows it. */
  reason: string;
  pod: V1Pod;
}

export interface DesiredPlan {
  /** What housekeeping (SyncKnownPods) treats as desired. */
  desired: V1Pod[];
  /** Pods deleted in the API: kills with the API's grace. */
  deletions: Deletion[];
  /** Pods in a terminal phase in the API: kills with their grace, never a delete. */
  terminal: TerminalStop[];
  mirrors: MirrorMatch[];
}

/** The desired set from this node's API pods and the runtime's pods. */
export function planDesired(apiPods: V1Pod[], runtimePods: RuntimePodRef[]): DesiredPlan {
  const staticByName = new Map<string, RuntimePodRef>();
  for (const r of runtimePods) if (r.static) staticByName.set(podFullName(r.name, r.namespace), r);
  const desired: V1Pod[] = [];
  const deletions: Deletion[] = [];
  const mirrors: MirrorMatch[] = [];
  const terminal: TerminalStop[] = [];
  for (const pod of apiPods) {
    const namespace = pod.metadata?.namespace ?? 'default';
    const name = pod.metadata?.name ?? '';
    const uid = pod.metadata?.uid ?? '';
    if (isMirrorPod(pod)) {
      const staticPod = staticByName.get(fullNameOfPod(pod));
      mirrors.push({ mirror: { namespace, name, uid }, staticUid: staticPod?.uid });
      if (staticPod?.pod) desired.push(staticPod.pod);
      else if (staticPod) desired.push({ metadata: { uid: staticPod.uid, name, namespace, annotations: { [CONFIG_SOURCE_ANNOTATION]: 'file' } } });
      continue;
    }
    desired.push(pod);
    if (isTerminalPhase(pod))
      terminal.push({ uid, namespace, name, phase: pod.status!.phase as TerminalStop['phase'], gracePeriodSeconds: podOwnGracePeriod(pod), reason: terminalStopReason(pod), pod });
    else if (isBeingDeleted(pod)) deletions.push({ uid, namespace, name, gracePeriodSeconds: podOwnGracePeriod(pod), pod });
  }
  return { desired, deletions, mirrors, terminal };
}

/** Why a pod terminal in the API is stopped on the node (the kill's reason in its timeline). */
function terminalStopReason(pod: V1Pod): string {
  return `its phase in the API is ${pod.status?.phase ?? 'unknown'}: the kubelet stops the containers of a terminal pod`;
}

/** Is `uid` a pod the API wants running on this node (bound, not being deleted, not terminal, not a mirror)? */
export function desiredInApi(apiPods: V1Pod[], uid: string): V1Pod | undefined {
  return apiPods.find((p) => p.metadata?.uid === uid && !isMirrorPod(p) && !isBeingDeleted(p) && !isTerminalPhase(p));
}
