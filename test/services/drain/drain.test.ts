import { describe, expect, it } from 'vitest';
import { parseSelection } from '../../../src/lib/refs.js';
import { Reporter } from '../../../src/lib/reporter.js';
import { SYSTEM_CRITICAL_PRIORITY, defaultGroups, parseExcludes, parseGroups } from '../../../src/services/drain/drain-plan.js';
import { drainExitCode, drainNode } from '../../../src/services/drain/drain.js';
import { drainSummaryLine } from '../../../src/services/drain/output.js';
import { FakeSession, type FakePod } from '../fake-session.js';

const everything = parseSelection({ args: [], allNamespaces: true, allowEmpty: true });

const demo = (overrides: Record<string, Partial<FakePod>> = {}): FakeSession =>
  new FakeSession(
    [
      { namespace: 'batch', name: 'report', priority: -10, grace: 60 },
      { namespace: 'web', name: 'frontend', priority: 1000, grace: 30 },
      { namespace: 'web', name: 'api', priority: 1000, grace: 5 },
      { namespace: 'kube-system', name: 'coredns', priority: SYSTEM_CRITICAL_PRIORITY, grace: 30 },
      { namespace: 'kube-system', name: 'etcd', static: true, grace: 30 },
      { namespace: 'default', name: 'old', state: 'terminated' as const },
    ].map((p) => ({ ...p, ...(overrides[p.name] ?? {}) })),
  );

describe('drain service', () => {
  it('kills group by group in priority order with the planned graces; all done → exit 0', async () => {
    const session = demo();
    const lines: string[] = [];
    const reporter = new Reporter('info', { write: (s: string) => lines.push(s) > 0, isTTY: false });
    const result = await drainNode({ session, selection: everything, groups: defaultGroups(30, 10), dryRun: false, reporter, now: session.now });
    const name = (uid: string): string => `${session.pod(uid)?.namespace}/${session.pod(uid)?.name}`;
    expect(session.kills.map((k) => `${name(k.uid)}:${k.gracePeriodSeconds}`)).toEqual(['batch/report:20', 'web/api:5', 'web/frontend:20', 'kube-system/coredns:10', 'kube-system/etcd:10']);
    // one wait per group, bounded by the group's budget
    expect(session.waits.map((w) => [w.uids.length, w.timeoutMs])).toEqual([
      [3, 20_000],
      [2, 10_000],
    ]);
    expect(result.status).toBe('done');
    expect(drainExitCode(result)).toBe(0);
    expect(result.summary).toEqual({ planned: 5, terminated: 5, timedOut: 0, failed: 0, notStarted: 0, skipped: 1 });
    expect(result.skipped).toEqual([expect.objectContaining({ name: 'old', reason: 'already-terminated' })]);
    expect(result.groups.every((g) => g.completedInBudget)).toBe(true);
    const text = lines.join('');
    expect(text).toContain('drain: 5 pod(s) in 2 group(s), 1 skipped');
    expect(text).toContain('group 2/2 (priority ≥ 2000000000, critical, budget 10s): 2 pod(s)');
    expect(text).toMatch(/✓ kube-system\/etcd terminated/);
    expect(drainSummaryLine(result)).toMatch(/^drain done: 5\/5 terminated/);
  });

  it('the check after the wait takes any listing that started after the pods were seen terminated, as kill does: no fresh relist at the end', async () => {
    const session = new FakeSession([
      { namespace: 'web', name: 'a', grace: 30 },
      { namespace: 'web', name: 'b', grace: 30 },
    ]);
    const result = await drainNode({ session, selection: everything, groups: defaultGroups(30, 10), dryRun: false, now: session.now });
    expect(result.status).toBe('done');
    const since = Math.min(...['a', 'b'].map((name) => session.pod(session.uidOf('web', name))!.since));
    // the plan's listing (one from the last second will do, as kill's: the session's opening relist), then the check's (the fake clock stood still since the wait)
    expect(session.listings).toBe(2);
    expect(session.listingOptions[0]).toEqual({ runtimeMaxAgeMs: 1_000 });
    expect(session.listingOptions[1]).toEqual({ scope: 'runtime', runtimeMaxAgeMs: session.now() - since });
  });

  it('--dry-run plans and changes nothing', async () => {
    const session = demo();
    const result = await drainNode({ session, selection: everything, groups: defaultGroups(30, 10), dryRun: true });
    expect(session.kills).toEqual([]);
    expect(session.waits).toEqual([]);
    expect(result.status).toBe('planned');
    expect(drainExitCode(result)).toBe(0);
    expect(result.groups.flatMap((g) => g.pods.map((p) => p.outcome))).toEqual(Array(5).fill('not-started'));
    // budgets 20 + 10, longest killPodNow bound max(10, 1.5 × 20) = 30
    expect(result.timeoutSeconds).toBe(60);
  });

  it('a pod that outlives its group budget does not hold up the next group; it finishes as a straggler', async () => {
    const session = demo({ report: { behaviour: 'late' } });
    const result = await drainNode({ session, selection: everything, groups: defaultGroups(30, 10), dryRun: false, now: session.now });
    const report = session.uidOf('batch', 'report');
    expect(session.waits.map((w) => w.uids.includes(report))).toEqual([true, false, true]);
    expect(result.groups[0]?.completedInBudget).toBe(false);
    expect(result.status).toBe('done');
    expect(result.groups[0]?.pods.find((p) => p.name === 'report')?.outcome).toBe('terminated');
  });

  it('a pod that never terminates within its killPodNow bound → partial, exit 5', async () => {
    const session = demo({ frontend: { behaviour: 'stuck' } });
    const result = await drainNode({ session, selection: everything, groups: defaultGroups(30, 10), dryRun: false, now: session.now });
    expect(result.status).toBe('partial');
    expect(drainExitCode(result)).toBe(5);
    expect(result.summary).toMatchObject({ terminated: 4, timedOut: 1 });
    // the straggler wait is bounded by the pod's killPodNow bound (grace 20 → 30 s) from its kill
    const last = session.waits.at(-1);
    expect(last?.uids).toEqual([session.uidOf('web', 'frontend')]);
    expect(last?.timeoutMs).toBeLessThanOrEqual(30_000);
    expect(last?.timeoutMs).toBeGreaterThan(0);
  });

  it("a failed kill request is that pod's outcome; the drain goes on → partial", async () => {
    const session = demo({ api: { behaviour: 'fails' } });
    const result = await drainNode({ session, selection: everything, groups: defaultGroups(30, 10), dryRun: false, now: session.now });
    const api = result.groups[0]?.pods.find((p) => p.name === 'api');
    expect(api).toMatchObject({ outcome: 'failed', error: 'StopContainer: rpc error: code = DeadlineExceeded' });
    expect(result.summary.terminated).toBe(4);
    expect(drainExitCode(result)).toBe(5);
  });

  it("the drain's own --timeout cuts it short: later groups not started → timed-out, exit 3", async () => {
    const session = demo({ report: { behaviour: 'stuck' } });
    const result = await drainNode({ session, selection: everything, groups: defaultGroups(30, 10), dryRun: false, timeoutMs: 5_000, now: session.now });
    expect(result.timeoutSource).toBe('flag');
    expect(session.waits[0]?.timeoutMs).toBe(5_000);
    expect(result.status).toBe('timed-out');
    expect(drainExitCode(result)).toBe(3);
    expect(result.groups[1]?.pods.map((p) => p.outcome)).toEqual(['not-started', 'not-started']);
    expect(result.groups[1]?.startedAtMs).toBeUndefined();
    expect(session.kills).toHaveLength(3);
  });

  it('honours -l and --exclude', async () => {
    const session = new FakeSession([
      { namespace: 'a', name: 'x', labels: { tier: 'batch' } },
      { namespace: 'a', name: 'y', labels: { tier: 'web' } },
      { namespace: 'b', name: 'z', labels: { tier: 'batch' } },
    ]);
    const result = await drainNode({
      session,
      selection: parseSelection({ args: [], selector: 'tier=batch', allNamespaces: true }),
      groups: parseGroups(['0:5']),
      isExcluded: parseExcludes(['b/*']),
      dryRun: false,
      now: session.now,
    });
    expect(session.kills.map((k) => session.pod(k.uid)?.name)).toEqual(['x']);
    expect(result.skipped.map((s) => [s.name, s.reason])).toEqual([['z', 'excluded']]);
  });

  it('an empty node drains trivially', async () => {
    const result = await drainNode({ session: new FakeSession([]), selection: everything, groups: defaultGroups(30, 10), dryRun: false });
    expect(result.status).toBe('done');
    expect(result.summary.planned).toBe(0);
  });
});

describe('drain verification', () => {
  it('a pod reported terminated with a container still running counts as failed → partial', async () => {
    const session = demo();
    const etcd = session.uidOf('kube-system', 'etcd');
    const original = session.waitTerminated.bind(session);
    session.waitTerminated = async (uids, options) => {
      const outcomes = await original(uids, options);
      Object.assign(session.pod(etcd) ?? {}, { containersRunning: 1 });
      return outcomes;
    };
    const result = await drainNode({ session, selection: everything, groups: defaultGroups(30, 10), dryRun: false, now: session.now });
    expect(result.groups[1]?.pods.find((p) => p.name === 'etcd')).toMatchObject({ outcome: 'failed', error: expect.stringMatching(/still run in the runtime/) });
    expect(result.status).toBe('partial');
    expect(drainExitCode(result)).toBe(5);
  });
});

describe('drain table', () => {
  it('dry-run rows: group label, pod, priority, critical reason, pod grace, drain grace; skipped pods last', async () => {
    const { drainTable } = await import('../../../src/services/drain/output.js');
    const { createStyler } = await import('../../../src/lib/output.js');
    const result = await drainNode({ session: demo(), selection: everything, groups: defaultGroups(30, 10), dryRun: true });
    const spec = drainTable(result, createStyler(false));
    expect(spec.head).toEqual(['GROUP', 'NAMESPACE/NAME', 'PRIORITY', 'CRITICAL', 'POD GRACE', 'DRAIN GRACE']);
    expect(spec.rows[0]).toEqual(['1: ≥0 (20s)', 'batch/report', '-10', '-', '60s', '20s']);
    expect(spec.rows.find((r) => r[1] === 'kube-system/etcd')).toEqual(['2: ≥2000000000 (10s, critical)', 'kube-system/etcd', '0', 'static', '30s', '10s']);
    expect(spec.rows.at(-1)).toEqual(['skipped', 'default/old', '-', '-', '-', 'already-terminated']);
  });
});
