/**
 * `podctl kill`: terminate pods with the kubelet's grace semantics and wait (bounded) for them.
 * A kill of a pod another podctl process drives is handed to that owner, so a second, shorter kill
 * shortens the first one's grace in flight. Beside a running kubelet the kill goes through
 * kubelet-guard.ts first (warn, --via-api, --force).
 */
import { processHookJournal, type HookOutcome } from '../cri/hook-journal.js';
import type { Reporter } from '../lib/reporter.js';
import type { KubeletGuardOptions, KubeletReport } from './kubelet-guard.js';
import { summarizeStatus, terminatePods, type TerminateOptions, type TerminateResult } from './terminate.js';

export type KillOptions = Omit<TerminateOptions, 'evict' | 'kube'> & {
  /** The kubelet check and what to do about pods it desires. */
  kubelet?: KubeletGuardOptions;
};
/** One preStop hook this process ran for the kill: `outcome` not-run means the kill went on without it. */
export interface KillHook {
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

/** The hooks this process ran for the result's pods, and a warning (also reported) for each that did not succeed. */
export function withHooks<T extends TerminateResult>(result: T, reporter: Reporter | undefined): T & Pick<KillResult, 'hooks' | 'warnings'> {
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
  const warnings = hooks
    .filter((h) => h.outcome !== 'succeeded')
    .map((h) => `preStop ${h.type} hook of ${h.pod} container ${h.container} ${h.outcome === 'failed' ? 'failed' : 'did not run'}: ${h.message}`);
  for (const w of warnings) reporter?.warn(w);
  return { ...result, hooks, warnings };
}

export async function killPods(options: KillOptions): Promise<KillResult> {
  const result = await killPodsUnreported(options);
  return withHooks(result, options.reporter);
}

async function killPodsUnreported(options: KillOptions): Promise<Omit<KillResult, 'hooks' | 'warnings'>> {
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
