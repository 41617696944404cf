/**
 * Which pods a drain beside a running kubelet evicts, as `kubectl drain` decides it
 * (k8s.io/kubectl/pkg/drain, filters.go): a chain of filters, each of which looks at one pod's API
 * object and either has no opinion (the next filter asks) or gives a verdict with its reason. The
 * chain is data (`DRAIN_FILTERS`); a pod no filter stops is evicted.
 *
 * | filter    | pod                                                    | verdict                               |
 * |-----------|--------------------------------------------------------|---------------------------------------|
 * | static    | mirror pod, or static in the runtime                   | skip (the kubelet stops it)           |
 * | terminal  | phase Succeeded or Failed                              | skip (nothing to evict)               |
 * | daemonset | controller ownerReference of kind DaemonSet            | skip (its controller ignores cordons) |
 * | emptydir  | an emptyDir volume                                     | refuse, unless consented              |
 * | unmanaged | no controller ownerReference                           | refuse, unless consented              |
 *
 * Consent to lose emptyDir data: `--delete-emptydir-data`, the Node annotation
 * `podctl.io/drain-delete-emptydir-data=true`, or the pod's own
 * `cluster-autoscaler.kubernetes.io/safe-to-evict: "true"`. Consent to delete pods no controller
 * recreates: `--delete-unmanaged`, or the Node annotation `podctl.io/drain-delete-unmanaged=true`.
 *
 * Invariants: pure (no I/O); every pod gets exactly one verdict; a refusal is decided before
 * anything is written (the drain refuses to start and names every refused pod).
 */
import type { V1Pod } from '../../engine/types.js';
import { isDaemonSetPod, isMirrorPod, isStaticPod, isTerminalPhase } from '../../engine/pod-kinds.js';

/** The pod's own consent to lose its emptyDir data (the cluster autoscaler's annotation). */
const SAFE_TO_EVICT_ANNOTATION = 'cluster-autoscaler.kubernetes.io/safe-to-evict';

type DrainSkipReason = 'static' | 'terminal' | 'daemonset';
export type DrainRefusalReason = 'emptydir' | 'unmanaged';

export type DrainVerdict = { action: 'evict'; message: string } | { action: 'skip'; reason: DrainSkipReason; message: string } | { action: 'refuse'; reason: DrainRefusalReason; message: string };

/** What the operator (flags, or the Node's annotations) consents to. */
export interface DrainConsent {
  deleteEmptyDirData: boolean;
  deleteUnmanaged: boolean;
}

export interface DrainFilter {
  name: string;
  /** The verdict on this pod, or undefined: no opinion, the next filter decides. */
  decide(pod: V1Pod, consent: DrainConsent): DrainVerdict | undefined;
}

/** The controller owner reference's name (the kinds themselves are engine/pod-kinds.ts's). */
function controllerOf(pod: V1Pod): { kind: string; name: string } | undefined {
  const ref = pod.metadata?.ownerReferences?.find((r) => r.controller === true);
  return ref ? { kind: ref.kind, name: ref.name } : undefined;
}

const staticFilter: DrainFilter = {
  name: 'static',
  decide: (pod) =>
    isStaticPod(pod) || isMirrorPod(pod) ? { action: 'skip', reason: 'static', message: "static pod: the kubelet runs it from its manifests and stops it at the node's shutdown" } : undefined,
};

const terminalFilter: DrainFilter = {
  name: 'terminal',
  decide: (pod) => (isTerminalPhase(pod) ? { action: 'skip', reason: 'terminal', message: `already ${pod.status?.phase}: nothing to evict` } : undefined),
};

const daemonSetFilter: DrainFilter = {
  name: 'daemonset',
  decide: (pod) => {
    if (!isDaemonSetPod(pod)) return undefined;
    return { action: 'skip', reason: 'daemonset', message: `managed by DaemonSet ${controllerOf(pod)?.name ?? ''}, which ignores the cordon (kubectl drain --ignore-daemonsets)` };
  },
};

const emptyDirFilter: DrainFilter = {
  name: 'emptydir',
  decide: (pod, consent) => {
    const volumes = (pod.spec?.volumes ?? []).filter((v) => v.emptyDir !== undefined && v.emptyDir !== null).map((v) => v.name);
    if (volumes.length === 0) return undefined;
    if (consent.deleteEmptyDirData) return { action: 'evict', message: `emptyDir ${volumes.join(', ')}: its data is deleted (consented)` };
    if (pod.metadata?.annotations?.[SAFE_TO_EVICT_ANNOTATION] === 'true') return { action: 'evict', message: `emptyDir ${volumes.join(', ')}: the pod says ${SAFE_TO_EVICT_ANNOTATION}=true` };
    return { action: 'refuse', reason: 'emptydir', message: `emptyDir ${volumes.join(', ')} would be deleted with the pod` };
  },
};

const unmanagedFilter: DrainFilter = {
  name: 'unmanaged',
  decide: (pod, consent) => {
    if (controllerOf(pod) !== undefined) return undefined;
    return consent.deleteUnmanaged
      ? { action: 'evict', message: 'no controller: deleted for good (consented)' }
      : { action: 'refuse', reason: 'unmanaged', message: 'no controller recreates it: it would be lost for good' };
  },
};

/** kubectl drain's order: the skips first, then what needs consent. */
export const DRAIN_FILTERS: readonly DrainFilter[] = [staticFilter, terminalFilter, daemonSetFilter, emptyDirFilter, unmanagedFilter];

/**
 * The chain's verdict on one pod: the first skip or refusal wins; an `evict` from a filter with
 * consent lets the rest still look (a bare pod with consented emptyDir data still needs the consent
 * to delete unmanaged pods), and is kept as the message when nothing stops the pod.
 */
export function filterPod(pod: V1Pod, consent: DrainConsent, filters: readonly DrainFilter[] = DRAIN_FILTERS): DrainVerdict {
  const notes: string[] = [];
  for (const filter of filters) {
    const verdict = filter.decide(pod, consent);
    if (verdict === undefined) continue;
    if (verdict.action !== 'evict') return verdict;
    notes.push(verdict.message);
  }
  return { action: 'evict', message: notes.length > 0 ? notes.join('; ') : 'evicted through the API server' };
}

/** How the operator consents to what a refusal names (for the refusal's next step). */
export function consentHint(reason: DrainRefusalReason, agent: boolean): string {
  if (reason === 'emptydir') {
    return agent
      ? `annotate the Node podctl.io/drain-delete-emptydir-data=true, or the pod ${SAFE_TO_EVICT_ANNOTATION}=true`
      : `pass --delete-emptydir-data, or annotate the pod ${SAFE_TO_EVICT_ANNOTATION}=true`;
  }
  return agent ? 'annotate the Node podctl.io/drain-delete-unmanaged=true' : 'pass --delete-unmanaged';
}
