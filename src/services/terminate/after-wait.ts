/**
 * What a kill and a drain do once their wait is over, the one summary of both: pods still waited
 * on when a signal ended the wait are `interrupted`; pods reported terminated whose containers
 * still run in the runtime are `failed`, with a warning; every pod that did not finish says why (the
 * runtime's last error, or what holds it: diagnose/unfinished.ts).
 *
 * Invariants: outcomes only ever move from `timeout` to `interrupted`, or from `terminated` to
 * `failed`; an error already set is kept; one runtime listing for the check, and the reasons' one
 * bounded listing.
 */
import type { Reporter } from '../../lib/reporter.js';
import type { NodeSession } from '../../domain/session-api.js';

/** A pod as kill and drain report it after their wait (the fields this summary reads and writes). */
export interface WaitedPod {
  uid: string;
  namespace: string;
  name: string;
  outcome: string;
  error?: string;
}

export interface AfterWaitOptions {
  session: NodeSession;
  /** The wait ended on a signal: pods still waited on become `interrupted`. */
  interrupted: boolean;
  /** Pods reported terminated whose runtime containers are checked (`stillRunning`). */
  check: readonly string[];
  /** When every checked pod was seen terminated: the earliest of those moments (`stillRunning`). */
  since?: number;
  now: () => number;
  reporter: Reporter;
  /** What leads a warning line about one pod ('' for kill, '  ✗ ' in a drain's list). */
  warnPrefix: string;
}

/** The bookkeeping after the wait, on `pods` (uid → pod) in place. */
export async function summarizeAfterWait(pods: ReadonlyMap<string, WaitedPod>, options: AfterWaitOptions): Promise<void> {
  const { session, now, reporter } = options;
  if (options.interrupted) for (const pod of pods.values()) if (pod.outcome === 'timeout') pod.outcome = 'interrupted';
  const terminated = options.since !== undefined ? { since: options.since, now } : undefined;
  for (const [uid, running] of await stillRunning(session, [...options.check], terminated)) {
    const pod = pods.get(uid);
    if (!pod) continue;
    pod.outcome = 'failed';
    pod.error = `reported terminated, but ${running} container(s) still run in the runtime`;
    reporter.warn(`${options.warnPrefix}${pod.namespace}/${pod.name}: ${pod.error}`);
  }
  const unfinished = [...pods.values()].filter((p) => (p.outcome === 'timeout' || p.outcome === 'interrupted') && p.error === undefined);
  const { reasonsForUnfinished } = await import('../diagnose/unfinished.js');
  const reasons = await reasonsForUnfinished(
    session,
    unfinished.map((p) => p.uid),
    now,
    { onSlow: (line) => reporter.info(line) },
  );
  for (const [uid, reason] of reasons) {
    const pod = pods.get(uid);
    if (pod) pod.error = reason;
  }
}

/**
 * Pods among `uids` that the engine reports terminated while the runtime still shows running
 * containers (uid → running count): a terminated pod must have nothing running, so podctl checks
 * before it tells the operator so.
 */
async function stillRunning(session: NodeSession, uids: string[], terminated?: { since: number; now: () => number }): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  if (uids.length === 0) return found;
  // One runtime listing for all of them (a lookup per pod would cost a relist each), started after
  // the pods were seen terminated: when the caller knows that moment (`terminated.since`, the
  // earliest of them), the relist that already followed it serves; else a fresh one.
  const wanted = new Set(uids);
  const runtimeMaxAgeMs = terminated ? Math.max(0, terminated.now() - terminated.since) : 0;
  const pods = (await session.listPods({ scope: 'runtime', runtimeMaxAgeMs })).filter((p) => wanted.has(p.uid));
  for (const pod of pods) {
    if (pod && (pod.state === 'terminated' || pod.state === 'finished') && pod.containersRunning > 0) found.set(pod.uid, pod.containersRunning);
  }
  return found;
}
