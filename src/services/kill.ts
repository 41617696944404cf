/**
 * `podctl kill`: terminate pods with the kubelet's grace semantics and wait (bounded) for them.
 * A kill of a pod another podctl process drives is handed to that owner, so a second, shorter kill
 * shortens the first one's grace in flight. Beside a running kubelet the pods it desires go through
 * kubelet-guard.ts first (the API server, or refused, or --force).
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
  return guardedTerminate('kill', 'delete', rest, kubelet, terminatePods);
}

/**
 * Runs a kill or an eviction with the kubelet rule in front: pods the kubelet desires go through the
 * API server (or are refused), the rest through `run` over CRI. The result carries the kubelet's state.
 */
export async function guardedTerminate<O extends TerminateOptions>(
  action: string,
  mode: 'delete' | 'evict',
  rest: O,
  kubelet: KubeletGuardOptions | undefined,
  run: (options: O) => Promise<TerminateResult>,
): Promise<TerminateResult & { kubelet?: KubeletReport }> {
  if (!kubelet) return run(rest);
  const { guardKill } = await import('./kubelet-guard.js');
  // the safety gate (confirmation, --yes) comes before anything is asked of the API server
  const { passSafetyGate, isFinal } = await import('./terminate.js');
  const { resolveSelection } = await import('../lib/refs.js');
  const listed = await rest.session.listPods({ runtimeMaxAgeMs: 1_000 });
  const { targets, missing } = resolveSelection(listed, rest.selection);
  await passSafetyGate(rest, targets.filter((p) => !isFinal(p)), action === 'evict' ? 'evict' : 'kill');
  rest = { ...rest, yes: true };
  const guard = await guardKill({
    targets,
    session: rest.session,
    mode,
    action,
    ...(rest.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: rest.gracePeriodSeconds } : {}),
    ...(rest.timeoutMs !== undefined ? { timeoutMs: rest.timeoutMs } : {}),
    ...(rest.reporter ? { reporter: rest.reporter } : {}),
    ...(rest.signal ? { signal: rest.signal } : {}),
    ...(rest.dryRun ? { dryRun: true } : {}),
    guard: kubelet,
  });
  if (guard.remaining !== undefined && guard.remaining.length === 0) {
    return {
      action,
      dryRun: rest.dryRun === true,
      status: rest.dryRun ? 'planned' : summarizeStatus(guard.viaApi, missing, true),
      waited: true,
      timeoutSeconds: rest.timeoutMs === undefined ? null : Math.round(rest.timeoutMs / 1000),
      timeoutSource: rest.timeoutMs === undefined ? null : 'flag',
      pods: guard.viaApi,
      missing,
      kubelet: guard.report,
    } as TerminateResult & { kubelet: KubeletReport };
  }
  const selection = guard.remaining !== undefined ? { refs: guard.remaining.map((uid) => ({ kind: 'uid' as const, uid })), all: false, namespace: undefined } : rest.selection;
  const result = await run({ ...rest, selection });
  const pods = [...guard.viaApi, ...result.pods];
  // refs that matched nothing were resolved here: the uid selection above cannot report them
  const allMissing = guard.remaining !== undefined ? [...new Set([...missing, ...result.missing])] : result.missing;
  const status = (guard.viaApi.length > 0 || allMissing.length !== result.missing.length) && !rest.dryRun ? summarizeStatus(pods, allMissing, result.waited) : result.status;
  return { ...result, pods, missing: allMissing, status, kubelet: guard.report };
}
