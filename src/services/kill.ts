/**
 * `podctl kill`: terminate pods with the kubelet's grace semantics and wait (bounded) for them.
 * A kill of a pod another podctl process drives is handed to that owner, so a second, shorter kill
 * shortens the first one's grace in flight. Beside a running kubelet the kill goes through
 * kubelet-guard.ts first (warn, --via-api, --force).
 */
import type { KubeletGuardOptions, KubeletReport } from './kubelet-guard.js';
import { summarizeStatus, terminatePods, type TerminateOptions, type TerminateResult } from './terminate.js';

export type KillOptions = Omit<TerminateOptions, 'evict' | 'kube'> & {
  /** The kubelet check and what to do about pods it desires. */
  kubelet?: KubeletGuardOptions;
};
export type KillResult = TerminateResult & { kubelet?: KubeletReport };

export async function killPods(options: KillOptions): Promise<KillResult> {
  const { kubelet, ...rest } = options;
  if (!kubelet) return terminatePods(rest);
  const { guardKill } = await import('./kubelet-guard.js');
  const guard = await guardKill({
    session: rest.session,
    selection: rest.selection,
    ...(rest.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: rest.gracePeriodSeconds } : {}),
    ...(rest.timeoutMs !== undefined ? { timeoutMs: rest.timeoutMs } : {}),
    ...(rest.reporter ? { reporter: rest.reporter } : {}),
    ...(rest.signal ? { signal: rest.signal } : {}),
    ...(rest.dryRun ? { dryRun: true } : {}),
    guard: kubelet,
  });
  if (guard.remaining !== undefined && guard.remaining.length === 0) {
    return {
      action: 'kill',
      dryRun: rest.dryRun === true,
      status: summarizeStatus(guard.viaApi, [], true),
      waited: true,
      timeoutSeconds: null,
      timeoutSource: null,
      pods: guard.viaApi,
      missing: [],
      kubelet: guard.report,
    };
  }
  const selection = guard.remaining !== undefined ? { refs: guard.remaining.map((uid) => ({ kind: 'uid' as const, uid })), all: false, namespace: undefined } : rest.selection;
  const result = await terminatePods({ ...rest, selection });
  const pods = [...guard.viaApi, ...result.pods];
  return { ...result, pods, status: guard.viaApi.length > 0 ? summarizeStatus(pods, result.missing, result.waited) : result.status, kubelet: guard.report };
}
