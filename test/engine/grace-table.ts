/**
 * The kubelet's grace table, ported once and shared: the engine's port of the kubelet's tests
 * (test/engine/kubelet/kill-and-grace.test.ts) runs it through calculateEffectiveGracePeriod, and
 * the parity test (test/services/terminate/grace-parity.test.ts) runs it through every planner and through the
 * engine and finds them equal.
 *
 * - KUBELET_EFFECTIVE_GRACE_CASES: Test_calculateEffectiveGracePeriod (pkg/kubelet/pod_workers_test.go),
 *   every case, with its name and expected value. `boundSeconds` is not in the kubelet's table: it is
 *   the killPodNow bound for the expected grace, written out by hand from killPodNow's source.
 * - KILL_POD_NOW_BOUNDS: killPodNow's `timeout := gracePeriod + (gracePeriod / 2)`, at least 10 s,
 *   in whole seconds (Go integer division rounds 1.5 × grace down): grace → bound, written out by hand.
 */

export interface KubeletGraceCase {
  desc: string;
  /** pod.spec.terminationGracePeriodSeconds (absent: the spec names none). */
  spec?: number;
  /** pod.metadata.deletionGracePeriodSeconds, set by an API deletion. */
  deletion?: number;
  /** KillPodOptions.PodTerminationGracePeriodSecondsOverride. */
  override?: number;
  /** The kubelet's expected effective grace (seconds). */
  expected: number;
  /** killPodNow's bound for `expected` (seconds); not part of the kubelet's table. */
  boundSeconds: number;
}

export const KUBELET_EFFECTIVE_GRACE_CASES: readonly KubeletGraceCase[] = [
  { desc: 'use termination grace period from the spec when no overrides', spec: 30, expected: 30, boundSeconds: 45 },
  { desc: 'use pod DeletionGracePeriodSeconds when set', spec: 30, deletion: 5, expected: 5, boundSeconds: 10 },
  { desc: 'use grace period override when set', spec: 30, deletion: 5, override: 2, expected: 2, boundSeconds: 10 },
  { desc: 'use 1 when pod DeletionGracePeriodSeconds is zero', spec: 30, deletion: 0, expected: 1, boundSeconds: 10 },
  { desc: 'use 1 when grace period override is zero', spec: 30, deletion: 5, override: 0, expected: 1, boundSeconds: 10 },
];

export interface KillBoundCase {
  /** The grace killPodNow is called with (seconds). */
  grace: number;
  /** How long it waits before ExceededGracePeriod (seconds). */
  boundSeconds: number;
}

export const KILL_POD_NOW_BOUNDS: readonly KillBoundCase[] = [
  { grace: 0, boundSeconds: 10 },
  { grace: 1, boundSeconds: 10 },
  { grace: 6, boundSeconds: 10 },
  { grace: 7, boundSeconds: 10 }, // 7 + 3 = 10, not 10.5
  { grace: 8, boundSeconds: 12 },
  { grace: 11, boundSeconds: 16 }, // 11 + 5, not 16.5
  { grace: 15, boundSeconds: 22 }, // 15 + 7, not 22.5
  { grace: 20, boundSeconds: 30 },
  { grace: 30, boundSeconds: 45 },
  { grace: 45, boundSeconds: 67 }, // 45 + 22, not 67.5
  { grace: 3600, boundSeconds: 5400 },
];
