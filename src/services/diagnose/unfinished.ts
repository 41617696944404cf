/**
 * Why a pod a command waited for did not finish, in one line for its JSON `error` and its warning:
 * the runtime's last error when there is one (with when the worker retries), else the cause that
 * holds it (blocked-by.ts), else its state. Every unfinished pod of kill, evict and drain gets one.
 *
 * Invariants: pure apart from the one listing `reasonsForUnfinished` reads (bounded, best effort: a
 * listing that fails or passes its bound leaves the pods' reasons to what the command already knew).
 * A listing still going after `noticeAfterMs` is said, with how long it may still take: a command
 * whose wait bound has passed does not go on waiting unannounced (a runtime gone mid-wait answers
 * no listing).
 */
import { formatDuration } from '../../lib/duration.js';
import { blockedBy } from './blocked-by.js';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import { stuckFactsOf } from './status.js';
import { boundSignal } from '../../lib/abortable.js';

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

/** The longest the listing for the reasons may take (ms). */
const REASONS_BOUND_MS = 5_000;
/** After how long a listing still going is said (ms). */
const REASONS_NOTICE_AFTER_MS = 1_000;

export interface ReasonsOptions {
  /** Told one line when the listing is still going after `noticeAfterMs`. */
  onSlow?: (line: string) => void;
  /** Default REASONS_BOUND_MS. */
  boundMs?: number;
  /** Default 1 s. */
  noticeAfterMs?: number;
}

/** The reasons of these unfinished pods, from one recent listing of them. */
export async function reasonsForUnfinished(session: NodeSession, uids: readonly string[], now: () => number, options: ReasonsOptions = {}): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (uids.length === 0) return out;
  const boundMs = options.boundMs ?? REASONS_BOUND_MS;
  const noticeAfterMs = Math.min(options.noticeAfterMs ?? REASONS_NOTICE_AFTER_MS, boundMs);
  const { onSlow } = options;
  const notice = onSlow ? setTimeout(() => onSlow(`asking the runtime why ${uids.length} pod(s) did not finish (at most ${formatDuration(boundMs - noticeAfterMs)} more)`), noticeAfterMs) : undefined;
  let pods: PodInfo[];
  try {
    pods = await session.listPods({ uids, runtimeMaxAgeMs: 1_000, signal: boundSignal(boundMs) });
  } catch {
    return out;
  } finally {
    clearTimeout(notice);
  }
  const byUid = new Map(pods.map((p) => [p.uid, p]));
  const at = now();
  for (const uid of uids) out.set(uid, unfinishedReason(byUid.get(uid), at));
  return out;
}
