/**
 * What the watch screen asks the features about a pod — what holds it, whether anybody drives it,
 * its explanation, the grace a kill would run with, whether its kind asks for care — handed to the
 * screen by the watch service with the feed. The screen decides none of it itself: src/tui imports
 * from the services only types and output modules (.dependency-cruiser.cjs, `tui-renders-data`).
 *
 * Invariant: each rule is the one its command uses (`status --explain`, `kill --dry-run`, `kill`'s
 * question, `evict`'s refusal), so the screen and the commands never disagree.
 */
import type { PodInfo } from '../../domain/session-api.js';
import { blockedBy, type BlockedBy } from '../diagnose/blocked-by.js';
import { explainPod, isUndriven, notFinishing, stuckFactsOf, type Explanation, type NodeFacts } from '../diagnose/status.js';
import { plannedGraceSeconds } from '../terminate/grace-plan.js';
import { criticalScope, evictRefusal } from '../terminate/terminate.js';

export interface ScreenRules {
  /** What holds a pod on its way out, from the listing and the node's facts when gathered; null when nothing does. */
  blockedBy(pod: PodInfo, now: number, facts?: NodeFacts): BlockedBy | null;
  /**
   * Nothing can hold the pod at any time while its listing and these facts stand (`blockedBy` is
   * null whatever the clock): a pod not on its way out. The screen then lets the clock move its
   * time in state alone.
   */
  neverHeld?(pod: PodInfo, facts?: NodeFacts): boolean;
  /** Under way and nobody drives it: its grace does not count down (`podctl sync-known` resumes it). */
  isUndriven(pod: PodInfo): boolean;
  /** What `podctl status NS/POD --explain` explains of the pod. */
  explain(pod: PodInfo, now: number, facts?: NodeFacts): Explanation;
  /** The grace a kill without --grace runs with, as `podctl kill --dry-run` shows it. */
  plannedGraceSeconds(pod: PodInfo): number;
  /** Why a kill of these pods asks for care on account of their kind, in `podctl kill`'s words; undefined when none does. */
  criticalScope(pods: readonly PodInfo[]): string | undefined;
  /** Why an evict of these pods is refused without force, as `podctl evict` refuses it; undefined when it may go on. */
  evictRefusal(pods: readonly PodInfo[], force: boolean): { message: string; hint: string } | undefined;
}

const NO_API = new Map<string, never>();

export const screenRules: ScreenRules = {
  // nothing holds a pod that is not on its way out (blocked-by.ts's first rule, the same test as
  // notFinishing's): a pod's facts are made only for those, not for every row of every frame
  blockedBy: (pod, now, facts) => (notFinishing(pod, facts?.api ?? NO_API) ? blockedBy(stuckFactsOf(pod, now, facts)) : null),
  neverHeld: (pod, facts) => !notFinishing(pod, facts?.api ?? NO_API),
  isUndriven,
  explain: explainPod,
  plannedGraceSeconds: (pod) => plannedGraceSeconds(pod),
  criticalScope,
  evictRefusal,
};
