/**
 * The watch feed's diffing: a pod's lifecycle transitions between two readings, the steps another
 * process's timeline records, and the patch one of this process's engine events makes to a listed
 * pod.
 *
 * Invariants: pure functions, no I/O and no state; a lifecycle only moves forward
 * (runtime → sync → terminating → terminated → finished): a patch never moves it back, and timeline
 * steps that go back are skipped; timeline steps are returned only when they lead from the
 * previous state to the current one.
 */
import type { PodWorkerEvent } from '../../engine/types.js';
import type { PodInfo } from '../../domain/session-api.js';

export type PodLifecycle = PodInfo['state'];

/** A pod changed lifecycle state between two listings. */
export interface PodTransition {
  at: number;
  uid: string;
  namespace: string;
  name: string;
  from: PodLifecycle | 'new';
  to: PodLifecycle | 'gone';
  /** When the pod entered `from`, if it was listed before. */
  fromSince?: number;
  /** Which source's events preceded the listing that showed it. */
  source: 'engine' | 'store' | 'runtime';
  gracePeriod?: number;
  ownerPid?: number;
}

/** How far along its lifecycle a listed pod is. */
export const LIFECYCLE_ORDER: Record<PodLifecycle, number> = { runtime: 0, sync: 1, terminating: 2, terminated: 3, finished: 4 };

/**
 * The listed pod after one of this process's engine events: the new state and when it was entered,
 * the grace in force and its deadline, the last error. Returns `pod` itself when nothing changes;
 * never moves the state backwards.
 */
export function patchedPod(pod: PodInfo, event: PodWorkerEvent): PodInfo {
  const forward = (to: PodLifecycle) => LIFECYCLE_ORDER[to] > LIFECYCLE_ORDER[pod.state];
  switch (event.type) {
    case 'state-changed':
      return forward(event.to) ? { ...pod, state: event.to, since: event.at } : pod;
    case 'finished':
      return forward('finished') ? { ...pod, state: 'finished', since: event.at } : pod;
    case 'termination-requested': {
      const deadline = event.at + event.gracePeriod * 1000;
      return { ...pod, gracePeriod: event.gracePeriod, graceDeadline: Math.min(deadline, pod.graceDeadline ?? deadline) };
    }
    case 'grace-shortened': {
      const deadline = event.at + event.to * 1000;
      return { ...pod, gracePeriod: event.to, graceDeadline: Math.min(deadline, pod.graceDeadline ?? deadline) };
    }
    case 'sync-failed':
      if (event.aborted) return pod;
      return { ...pod, lastError: { message: `${event.phase}: ${event.error}`, at: event.at, retryAt: event.at + event.retryInMs } };
    default:
      return pod;
  }
}

const LIFECYCLES = new Set<string>(['sync', 'terminating', 'terminated']);

/**
 * The state changes a pod went through between two listings, read from its timeline (the
 * `state-changed` and `finished` entries newer than the previous listing's), when they lead from the
 * previous listed state to the current one. Empty when the timeline does not say.
 */
export function timelineSteps(prev: PodInfo, pod: PodInfo): Omit<PodTransition, 'source'>[] {
  const seenUntil = prev.history.reduce((max, r) => Math.max(max, r.at), 0);
  const steps: Omit<PodTransition, 'source'>[] = [];
  let from: PodLifecycle = prev.state;
  let fromSince = prev.since;
  for (const record of pod.history) {
    if (record.at <= seenUntil) continue;
    let to: PodLifecycle | undefined;
    if (record.type === 'finished') to = 'finished';
    else if (record.type === 'state-changed') {
      const target = /→\s*(\w+)\s*$/.exec(record.detail)?.[1];
      if (target !== undefined && LIFECYCLES.has(target)) to = target as PodLifecycle;
    }
    if (to === undefined || to === from) continue;
    if (LIFECYCLE_ORDER[to] < LIFECYCLE_ORDER[from]) continue;
    const step: Omit<PodTransition, 'source'> = { at: record.at, uid: pod.uid, namespace: pod.namespace, name: pod.name, from, to, fromSince, ownerPid: record.pid };
    if (to === 'terminating' && pod.gracePeriod !== undefined) step.gracePeriod = pod.gracePeriod;
    steps.push(step);
    from = to;
    fromSince = record.at;
  }
  return steps.at(-1)?.to === pod.state ? steps : [];
}
