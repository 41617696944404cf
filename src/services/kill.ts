/**
 * `podctl kill`: terminate pods with the kubelet's grace semantics and wait (bounded) for them.
 * A kill of a pod another podctl process drives is handed to that owner, so a second, shorter kill
 * shortens the first one's grace in flight.
 */
import { terminatePods, type TerminateOptions, type TerminateResult } from './terminate.js';

export type KillOptions = Omit<TerminateOptions, 'evict' | 'kube'>;
export type KillResult = TerminateResult;

export async function killPods(options: KillOptions): Promise<KillResult> {
  return terminatePods(options);
}
