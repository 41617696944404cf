/**
 * Why a pod a command waited for did not finish, in one line for its JSON `error` and its warning:
 * the runtime's last error when there is one (with when the worker retries), else the cause that
 * holds it (blocked-by.ts), else its state. Every unfinished pod of kill, evict and drain gets one.
 *
 * Invariants: pure apart from the one listing `reasonsForUnfinished` reads (bounded, best effort: a
 * listing that fails leaves the pods' reasons to what the command already knew).
 */
import { formatDuration } from '../lib/duration.js';
import { blockedBy } from './blocked-by.js';
import type { NodeSession, PodInfo } from '../domain/session-api.js';
import { stuckFactsOf } from './status.js';

/** The one-line reason a pod is not finished. */
export function unfinishedReason(pod: PodInfo | undefined, now: number): string {
  if (pod === undefined) return 'not listed any more (gone from the runtime and the state directory)';
  if (pod.lastError !== undefined) {
    const retry = pod.lastError.retryAt !== undefined && pod.lastError.retryAt > now ? `; retried in ${formatDuration(pod.lastError.retryAt - now)}` : '';
    return `${pod.lastError.message.split('\n')[0]}${retry}`;
  }
  const cause = blockedBy(stuckFactsOf(pod, now));
  if (cause) return `${cause.kind}: ${cause.detail}`;
  return `still ${pod.state}`;
}

/** The reasons of these unfinished pods, from one recent listing. */
export async function reasonsForUnfinished(session: NodeSession, uids: readonly string[], now: () => number): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (uids.length === 0) return out;
  let pods: PodInfo[];
  try {
    pods = await session.listPods({ runtimeMaxAgeMs: 1_000, signal: AbortSignal.timeout(5_000) });
  } catch {
    return out;
  }
  const byUid = new Map(pods.map((p) => [p.uid, p]));
  const at = now();
  for (const uid of uids) out.set(uid, unfinishedReason(byUid.get(uid), at));
  return out;
}
