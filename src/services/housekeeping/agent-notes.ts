/**
 * What the agent says about single pods, once each (agent.ts calls these after every full step):
 * a pod stuck past its grace (a log line, and a Warning Event when an API server is configured),
 * the stuck pods counted by what holds them (for /metrics), and a final delete it withholds.
 *
 * Contract: a line is said once per pod and cause (the termination's start, the reason); said again
 * only when that changes or the pod came back after leaving the node.
 */
import { isStuck, stuckForMs } from '../diagnose/stuck.js';
import { blockedBy } from '../diagnose/blocked-by.js';
import { stuckFactsOf, type NodeFacts } from '../diagnose/status.js';
import type { PodInfo } from '../../domain/session-api.js';
import type { ApiNode } from '../api/api-node.js';
import type { ApiSyncReport } from './api-sync.js';
import { formatDuration } from '../../lib/duration.js';
import type { Reporter } from '../../lib/reporter.js';

/** Stuck pods by what holds them (blocked-by.ts, from the listing): `grace` when nothing more is known. */
export function stuckReasons(stuck: PodInfo[], now: number, facts: NodeFacts | undefined): Map<string, number> {
  const counts = new Map<string, number>();
  for (const pod of stuck) {
    const kind = blockedBy(stuckFactsOf(pod, now, facts))?.kind ?? 'grace';
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return counts;
}

/** Logs each newly stuck pod once (and posts an Event when an API server is configured). */
export function noteStuck(pods: PodInfo[], now: number, stuckAfterMs: number, logged: Map<string, number>, reporter: Reporter, api: ApiNode | undefined): string[] {
  const stuck: string[] = [];
  for (const pod of pods) {
    if (!isStuck(pod, now, stuckAfterMs)) continue;
    stuck.push(pod.uid);
    if (logged.get(pod.uid) === pod.since) continue;
    logged.set(pod.uid, pod.since);
    const message = `terminating ${formatDuration(stuckForMs(pod, now))} past its grace period of ${pod.gracePeriod ?? '?'}s; see podctl status --explain ${pod.namespace}/${pod.name}`;
    reporter.warn(`agent: ${pod.namespace}/${pod.name} is stuck: ${message}`);
    if (api && pod.pod) void api.event(pod.pod, 'Warning', 'PodStuckTerminating', message).catch(() => undefined);
  }
  return stuck;
}

/**
 * Logs each final delete withheld (a volume still mounted or unknown, API writes withheld) once per
 * pod and reason, not at every step; a pod whose final delete went out, or that left the node, is
 * forgotten (withheld again later, it is said again).
 */
export function noteWithheld(report: ApiSyncReport, pods: readonly PodInfo[], logged: Map<string, string>, reporter: Reporter): void {
  const keep = new Set(pods.map((p) => p.uid));
  for (const p of [...report.finallyDeleted, ...report.alreadyGone]) keep.delete(p.uid);
  for (const w of report.withheld) {
    keep.add(w.uid);
    if (logged.get(w.uid) === w.reason) continue;
    logged.set(w.uid, w.reason);
    reporter.warn(`agent: final delete of ${w.namespace}/${w.name} ${w.reason}`);
  }
  for (const uid of logged.keys()) if (!keep.has(uid)) logged.delete(uid);
}
