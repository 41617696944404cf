/**
 * `podctl evict`: a kill with evict semantics — the pod's stopped containers and sandboxes are
 * removed once it is terminated, and with an API server the pod's status becomes Failed/Evicted with
 * a Warning Event, as the kubelet's eviction manager reports it. Beside a running kubelet the pods
 * it desires go through the Eviction API instead (kubelet-guard.ts), honouring PodDisruptionBudgets.
 */
import type { KubeletGuardOptions, KubeletReport } from './kubelet-guard.js';
import { guardedTerminate } from './kill.js';
import { terminatePods, type TerminateOptions, type TerminateResult } from './terminate.js';

export const DEFAULT_EVICTION_REASON = 'Evicted';

export interface EvictOptions extends Omit<TerminateOptions, 'evict'> {
  /** Why the operator evicts (DiskPressure …): it goes into the message; the status and Event reason stay Evicted. */
  reason?: string;
  message?: string;
  /** The kubelet check: pods it desires go through the Eviction API (or are refused). */
  kubelet?: KubeletGuardOptions;
}
export type EvictResult = TerminateResult & { kubelet?: KubeletReport };

/**
 * The eviction's message, which the status, its DisruptionTarget condition and the Event carry: the
 * operator's message, led by the operator's reason when one was given (`DiskPressure: node is low on
 * disk`); without a message, one naming the node and the reason.
 */
function evictionMessage(reason: string | undefined, message: string | undefined, node: string | undefined): string {
  const why = reason === undefined || reason === DEFAULT_EVICTION_REASON ? undefined : reason;
  if (message === undefined) return `The node${node ? ` ${node}` : ''} is evicting this pod${why ? ` (${why})` : ''} with podctl.`;
  return why === undefined || message.startsWith(why) ? message : `${why}: ${message}`;
}

export async function evictPods(options: EvictOptions): Promise<EvictResult> {
  const reason = options.reason ?? DEFAULT_EVICTION_REASON;
  const message = evictionMessage(options.reason, options.message, options.kube?.node);
  const { reason: _reason, message: _message, kubelet, ...rest } = options;
  return guardedTerminate('evict', 'evict', { ...rest, evict: { reason, message } }, kubelet, terminatePods);
}
