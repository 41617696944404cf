/**
 * `podctl kill`: terminate pods with the kubelet's grace semantics and wait (bounded) for them.
 * A kill of a pod another podctl process drives is handed to that owner, so a second, shorter kill
 * shortens the first one's grace in flight. Beside a running kubelet the pods it desires go through
 * kubelet-guard.ts first (the API server, or refused, or --force).
 */
import { hookLine, processHookJournal, type HookOutcome } from '../../cri/runtime/hook-journal.js';
import type { KubeletGuardOptions, KubeletReport } from './kubelet-guard.js';
import { summarizeStatus, terminatePods, type TerminateOptions, type TerminateResult } from './terminate.js';

export type KillOptions = Omit<TerminateOptions, 'evict' | 'kube'> & {
  /** The kubelet check and what to do about pods it desires. */
  kubelet?: KubeletGuardOptions;
};
/** One preStop hook this process ran for the kill: `outcome` not-run means the kill went on without it. */
interface KillHook {
  uid: string;
  pod: string;
  container: string;
  type: HookOutcome['type'];
  outcome: HookOutcome['outcome'];
  ms: number;
  message: string;
}

export type KillResult = TerminateResult & {
  kubelet?: KubeletReport;
  /** The preStop hooks this process ran for these pods, in the order they ended. */
  hooks: KillHook[];
  /** What did not go as the pod asked (a hook that failed or could not run), one line each. */
  warnings: string[];
};

/**
 * The hooks this process ran for the result's pods, and a warning for each that did not succeed.
 * The warnings are not printed again: the session's log said each one as it happened, in the same
 * words (cri/runtime/hook-journal.ts hookLine).
 */
function withHooks<T extends TerminateResult>(result: T): T & Pick<KillResult, 'hooks' | 'warnings'> {
  const names = new Map(result.pods.map((p) => [p.uid, `${p.namespace}/${p.name}`]));
  const hooks = processHookJournal.take(names.keys()).map((h) => ({
    uid: h.uid,
    pod: names.get(h.uid) ?? h.uid,
    container: h.container,
    type: h.type,
    outcome: h.outcome,
    ms: Math.round(h.ms),
    message: h.message,
  }));
  const warnings = hooks.filter((h) => h.outcome !== 'succeeded').map((h) => hookLine(h.type, h.pod, h.container, h.outcome, h.message));
  return { ...result, hooks, warnings };
}

export async function killPods(options: KillOptions): Promise<KillResult> {
  const result = await killPodsUnreported(options);
  return withHooks(result);
}

async function killPodsUnreported(options: KillOptions): Promise<Omit<KillResult, 'hooks' | 'warnings'>> {
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
  const { passSafetyGate, isFinal, resolveTargets } = await import('./terminate.js');
  // resolved as the CRI path resolves it: on the pods the runtime shows, the store read only for
  // those (a kill's cost does not grow with the finished pods the store remembers)
  const resolved = await resolveTargets(rest.session, rest.selection);
  const { targets, missing } = resolved;
  await passSafetyGate(
    rest,
    targets.filter((p) => !isFinal(p)),
    action === 'evict' ? 'evict' : 'kill',
  );
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
  // what goes over CRI is stopped with the pod as the API server holds it (when one answered)
  // without an API server nothing was waited on since the listing: the CRI path acts on the same targets
  const reuse = guard.remaining === undefined && !kubelet.api;
  const result = await run({ ...rest, selection, specs: guard.specs, ...(reuse ? { resolved } : {}) });
  const pods = [...guard.viaApi, ...result.pods];
  // refs that matched nothing were resolved here: the uid selection above cannot report them
  const allMissing = guard.remaining !== undefined ? [...new Set([...missing, ...result.missing])] : result.missing;
  const status = (guard.viaApi.length > 0 || allMissing.length !== result.missing.length) && !rest.dryRun ? summarizeStatus(pods, allMissing, result.waited) : result.status;
  return { ...result, pods, missing: allMissing, status, kubelet: guard.report };
}
