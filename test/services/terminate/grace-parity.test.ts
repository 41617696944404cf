/**
 * The kubelet's grace table run twice: through what podctl predicts before it acts and through the
 * engine (the kill request as the session sends it: operatorGraceOverride, then updatePod; and
 * killPodNow for the wait bound). Every case must come out equal, and equal to the kubelet's value.
 *
 * The predictions: `kill`/`evict --dry-run`, the drain planner, `watch`'s kill prompt (its default
 * grace, which Enter sends as the kill's grace), and an API deletion as sync-known, the agent and
 * `drain --follow` turn it into a kill (kube/desired.ts). The table: the kubelet's
 * Test_calculateEffectiveGracePeriod, ported once in test/engine/grace-table.ts, then podctl's own
 * cases (kill-request override that only shortens, eviction, critical pods in a drain,
 * zero/negative/missing → the 1 s minimum, a grace in force that only shrinks), and killPodNow's
 * bound max(10 s, 1.5 × grace) in the kubelet's whole seconds.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KillPodTimeoutError, killPodNow, killTimeoutMs, operatorGraceOverride, type V1Pod } from '../../../src/engine/index.js';
import { planDesired } from '../../../src/kube/desired.js';
import { parseSelection } from '../../../src/lib/refs.js';
import { defaultGroups, planDrain } from '../../../src/services/drain/drain-plan.js';
import { evictPods } from '../../../src/services/terminate/evict.js';
import { killPods } from '../../../src/services/terminate/kill.js';
import type { PodInfo } from '../../../src/domain/session-api.js';
import { initialUiState, reduceKey } from '../../../src/tui/controller.js';
import { KILL_POD_NOW_BOUNDS, KUBELET_EFFECTIVE_GRACE_CASES } from '../../engine/grace-table.js';
import { FakeRecorder, createHarness, deferred, until, untilAborted } from '../../engine/harness.js';
import { FakeSession } from '../fake-session.js';
import { screenRules } from '../../../src/services/watch/screen-rules.js';

interface GraceCase {
  desc: string;
  /** The pod spec's terminationGracePeriodSeconds (absent: the spec names none). */
  spec?: number;
  /** metadata.deletionGracePeriodSeconds, set by an API deletion. */
  deletion?: number;
  /** The grace an earlier kill decided; the pod is still terminating. */
  inForce?: number;
  /** The kill request's --grace. */
  override?: number;
  evict?: boolean;
  expected: number;
  /** The default wait (killPodNow bound) the plan shows, seconds. */
  boundSeconds: number;
}

const cases: GraceCase[] = [
  // the kubelet's own table (Test_calculateEffectiveGracePeriod), every case
  ...KUBELET_EFFECTIVE_GRACE_CASES.map((tc) => ({ ...tc, desc: `kubelet: ${tc.desc}` })),
  // podctl's operator rule and the states the kubelet's table does not cover
  { desc: 'a negative override is the minimum, 1', spec: 30, override: -5, expected: 1, boundSeconds: 10 },
  { desc: 'a negative deletion grace is the minimum, 1', spec: 30, deletion: -3, expected: 1, boundSeconds: 10 },
  { desc: 'a spec that names no grace and no overrides: the minimum, 1', expected: 1, boundSeconds: 10 },
  { desc: 'an override on a spec that names no grace', override: 20, expected: 20, boundSeconds: 30 },
  { desc: "an operator override longer than the pod's own grace does not lengthen it", spec: 45, override: 90, expected: 45, boundSeconds: 67 },
  { desc: 'an override longer than the deletion grace does not lengthen it', spec: 30, deletion: 8, override: 20, expected: 8, boundSeconds: 12 },
  { desc: 'a fractional override is whole seconds, rounded down', spec: 30, override: 2.7, expected: 2, boundSeconds: 10 },
  { desc: 'killPodNow bound: grace 7 → the 10 s minimum (7 + 7/2 = 10)', spec: 30, override: 7, expected: 7, boundSeconds: 10 },
  { desc: 'killPodNow bound: grace 11 → 16 s (integer division)', spec: 11, expected: 11, boundSeconds: 16 },
  { desc: 'killPodNow bound: grace 15 → 22 s', spec: 30, override: 15, expected: 15, boundSeconds: 22 },
  { desc: "eviction keeps the pod's grace", spec: 30, evict: true, expected: 30, boundSeconds: 45 },
  { desc: 'eviction with an override', spec: 30, override: 4, evict: true, expected: 4, boundSeconds: 10 },
  { desc: 'grace only shrinks: a longer override leaves the grace in force', spec: 30, inForce: 10, override: 20, expected: 10, boundSeconds: 15 },
  { desc: 'grace only shrinks: a shorter override shortens the grace in force', spec: 30, inForce: 10, override: 3, expected: 3, boundSeconds: 10 },
  { desc: 'grace only shrinks: a later deletion grace shortens it', spec: 30, inForce: 10, deletion: 4, expected: 4, boundSeconds: 10 },
  { desc: 'grace only shrinks: a later, longer deletion grace does not lengthen it', spec: 30, inForce: 10, deletion: 60, expected: 10, boundSeconds: 15 },
  { desc: 'a terminating pod with no new override keeps its grace', spec: 30, inForce: 12, expected: 12, boundSeconds: 18 },
];

function podOf(tc: Pick<GraceCase, 'spec' | 'deletion'>, uid: string, priority?: number): V1Pod {
  return {
    metadata: { uid, namespace: 'ns', name: uid, ...(tc.deletion !== undefined ? { deletionGracePeriodSeconds: tc.deletion } : {}) },
    spec: {
      containers: [{ name: 'main' }],
      ...(tc.spec !== undefined ? { terminationGracePeriodSeconds: tc.spec } : {}),
      ...(priority !== undefined ? { priority } : {}),
    },
  };
}

/** A FakeSession pod carrying exactly this spec, and the grace in force when it is terminating. */
function sessionWith(tc: GraceCase, uid: string, priority?: number): FakeSession {
  const session = new FakeSession([{ namespace: 'ns', name: uid, uid }]);
  const info = session.pod(uid)!;
  info.pod = podOf(tc, uid, priority);
  if (tc.inForce !== undefined) {
    info.state = 'terminating';
    info.gracePeriod = tc.inForce;
  }
  return session;
}

/** The grace the engine decides for the kill request the session would send with `override`. */
async function engineGrace(tc: GraceCase, override: number | undefined, uid: string): Promise<number> {
  const h = createHarness();
  const pod = podOf(tc, uid);
  h.workers.updatePod({ pod: podOf({ spec: tc.spec }, uid), updateType: 'create' });
  await h.drain();
  const stuck = deferred();
  // the runtime has not stopped the pod yet; a shorter grace cancels the call and reruns it
  h.syncer.onTerminating = (_uid, signal) => Promise.race([stuck.promise, untilAborted(signal)]);
  if (tc.inForce !== undefined) {
    // an earlier kill decided the grace in force (before any later API deletion)
    h.workers.updatePod({ pod: podOf({ spec: tc.spec }, uid), updateType: 'kill', killPodOptions: { gracePeriodSecondsOverride: tc.inForce } });
    await until(() => h.syncer.records(uid)?.some((r) => r.updateType === 'kill') === true, 'first kill running');
    expect(h.workers.statusOf(uid)!.gracePeriod).toBe(tc.inForce);
  }
  // what the session does with a kill request (session.ts: operatorGraceOverride, then updatePod)
  h.workers.updatePod({
    pod,
    updateType: 'kill',
    killPodOptions: {
      ...(tc.evict ? { evict: true } : {}),
      ...(override !== undefined ? { gracePeriodSecondsOverride: operatorGraceOverride(pod, override) } : {}),
    },
  });
  const decided = h.workers.statusOf(uid)!.gracePeriod;
  stuck.resolve();
  await h.drain();
  // the runtime was last asked to stop the pod with the same value
  expect(
    h.syncer
      .records(uid)!
      .filter((r) => r.updateType === 'kill')
      .at(-1)!.gracePeriod,
  ).toBe(decided);
  expect(h.workers.statusOf(uid)!.finished).toBe(true);
  await h.workers.close();
  return decided;
}

/** The engine's killPodNow bound for a kill with this grace (ms), measured on fake timers. */
async function engineBoundMs(tc: Pick<GraceCase, 'spec' | 'deletion' | 'evict' | 'boundSeconds'>, grace: number, uid: string): Promise<number> {
  // the clock is faked whole (Date too): the bound is armed from Date.now(), and a loaded machine's
  // real time must not move it
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
  const h = createHarness();
  h.syncer.onTerminating = (_uid, signal) => untilAborted(signal); // never finishes
  let outcome: unknown = 'pending';
  killPodNow(h.workers, new FakeRecorder())(podOf(tc, uid), tc.evict ?? false, grace).then(
    () => (outcome = 'resolved'),
    (e: unknown) => (outcome = e),
  );
  await vi.advanceTimersByTimeAsync(tc.boundSeconds * 1000 - 1);
  expect(outcome).toBe('pending');
  await vi.advanceTimersByTimeAsync(1);
  expect(outcome).toBeInstanceOf(KillPodTimeoutError);
  vi.useRealTimers();
  await h.workers.close();
  return (outcome as KillPodTimeoutError).timeoutMs;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('the grace table: kill/evict --dry-run plan = engine', () => {
  for (const tc of cases) {
    it(tc.desc, async () => {
      const uid = 'p';
      const session = sessionWith(tc, uid);
      const run = {
        session,
        selection: parseSelection({ args: [`ns/${uid}`] }),
        wait: true,
        dryRun: true,
        now: session.now,
        ...(tc.override !== undefined ? { gracePeriodSeconds: tc.override } : {}),
      };
      const plan = tc.evict ? await evictPods(run) : await killPods(run);
      expect(plan.status).toBe('planned');
      expect(session.kills).toEqual([]);
      const planned = plan.pods[0]!.gracePeriodSeconds;

      // the terminate service sends the planned grace as the request's override when --grace was given
      const sent = tc.override !== undefined ? planned : undefined;
      const decided = await engineGrace(tc, sent, uid);
      expect({ planned, decided }).toEqual({ planned: tc.expected, decided: tc.expected });
      // the same request with the operator's raw --grace decides the same
      if (tc.override !== undefined) expect(await engineGrace(tc, tc.override, uid)).toBe(tc.expected);

      expect(plan.timeoutSeconds).toBe(tc.boundSeconds);
      expect(await engineBoundMs(tc, planned, uid)).toBe(plan.timeoutSeconds! * 1000);
    });
  }
});

describe('the grace table: drain plan = engine (critical pods in their own group)', () => {
  const drainCases: (GraceCase & { priority?: number; groupBudget: number })[] = [
    { desc: 'an ordinary pod: the group budget shortens its grace', spec: 30, groupBudget: 20, expected: 20, boundSeconds: 30 },
    { desc: 'an ordinary pod whose own grace is shorter than the budget keeps it', spec: 5, groupBudget: 20, expected: 5, boundSeconds: 10 },
    { desc: 'a deletion grace is bedrock under the budget', spec: 30, deletion: 3, groupBudget: 20, expected: 3, boundSeconds: 10 },
    { desc: 'a system-critical pod gets the critical budget', spec: 30, priority: 2_000_001_000, groupBudget: 10, expected: 10, boundSeconds: 15 },
    { desc: 'a zero budget is the minimum, 1', spec: 30, priority: 2_000_001_000, groupBudget: 0, expected: 1, boundSeconds: 10 },
    { desc: 'a terminating pod keeps a grace in force shorter than the budget', spec: 30, inForce: 7, groupBudget: 20, expected: 7, boundSeconds: 10 },
  ];
  for (const tc of drainCases) {
    it(tc.desc, async () => {
      const uid = 'd';
      const critical = tc.priority !== undefined;
      const session = sessionWith(tc, uid, tc.priority);
      const pods: PodInfo[] = await session.listPods();
      // the whole drain is 30 s; critical pods get `groupBudget` of it, the rest the remainder
      const groups = critical ? defaultGroups(30, tc.groupBudget) : defaultGroups(tc.groupBudget + 10, 10);
      const plan = planDrain({ pods, groups });
      const group = plan.groups.find((g) => g.pods.some((p) => p.uid === uid))!;
      expect(group.critical).toBe(critical);
      const planned = group.pods[0]!.gracePeriodSeconds;
      // the drain sends the planned grace as the kill request's override
      const decided = await engineGrace(tc, planned, uid);
      expect({ planned, decided }).toEqual({ planned: tc.expected, decided: tc.expected });
      // the drain's default bound: the budget of every group with pods, plus the longest killPodNow bound
      expect(plan.defaultTimeoutSeconds).toBe(group.budgetSeconds + tc.boundSeconds);
      expect(await engineBoundMs(tc, planned, uid)).toBe(tc.boundSeconds * 1000);
    });
  }
});

describe("the grace table: watch's kill prompt = engine", () => {
  // the prompt offers the grace of a kill without --grace; Enter sends it as the kill's grace
  for (const tc of cases.filter((c) => c.override === undefined && c.evict !== true)) {
    it(tc.desc, async () => {
      const uid = 'w';
      const info = sessionWith(tc, uid).pod(uid)!;
      const { state } = reduceKey(initialUiState, { input: 'k', ctrl: true }, { visible: [info], now: 0, pageSize: 10, rules: screenRules });
      expect(state.mode).toMatchObject({ kind: 'grace', action: 'kill', uid });
      const offered = Number((state.mode as { text: string }).text);
      const decided = await engineGrace(tc, offered, uid);
      expect({ offered, decided }).toEqual({ offered: tc.expected, decided: tc.expected });
    });
  }

  it('a pod known only from the runtime: the prompt offers the 1 s it is stopped with', () => {
    const session = new FakeSession([{ namespace: 'ns', name: 'r', uid: 'r', noSpec: true, state: 'runtime' }]);
    const { state } = reduceKey(initialUiState, { input: 'k', ctrl: true }, { visible: [session.pod('r')!], now: 0, pageSize: 10, rules: screenRules });
    expect(state.mode).toMatchObject({ kind: 'grace', action: 'kill', text: '1' });
  });
});

describe('the grace table: an API deletion (sync-known, the agent, drain --follow) = engine', () => {
  // a pod the API server deleted: the kill the session is sent carries this grace and the API pod
  for (const tc of cases.filter((c) => c.deletion !== undefined && c.override === undefined && c.inForce === undefined)) {
    it(tc.desc, async () => {
      const uid = 'a';
      const apiPod = { ...podOf(tc, uid), status: { phase: 'Running' } };
      apiPod.metadata = { ...apiPod.metadata, deletionTimestamp: new Date(0) };
      const [deletion] = planDesired([apiPod], []).deletions;
      const planned = deletion!.gracePeriodSeconds;
      const decided = await engineGrace(tc, planned, uid);
      expect({ planned, decided }).toEqual({ planned: tc.expected, decided: tc.expected });
    });
  }
});

describe('the killPodNow bound: plan = engine = kubelet (whole seconds, at least 10 s)', () => {
  for (const { grace, boundSeconds } of KILL_POD_NOW_BOUNDS) {
    it(`grace ${grace} s → ${boundSeconds} s`, async () => {
      expect(killTimeoutMs(grace)).toBe(boundSeconds * 1000);
      // the plan of a kill with --grace <grace> on a pod whose own grace is longer
      const tc = { spec: 7200, override: grace, boundSeconds };
      const session = sessionWith({ desc: '', ...tc, expected: grace }, 'b');
      const plan = await killPods({ session, selection: parseSelection({ args: ['ns/b'] }), wait: true, dryRun: true, now: session.now, gracePeriodSeconds: grace });
      expect(plan.timeoutSeconds).toBe(boundSeconds);
      // what killPodNow waits for a kill with that grace
      expect(await engineBoundMs(tc, grace, 'b')).toBe(boundSeconds * 1000);
    });
  }
});
