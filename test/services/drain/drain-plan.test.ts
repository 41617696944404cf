import { describe, expect, it } from 'vitest';
import { SYSTEM_CRITICAL_PRIORITY, criticalReason, defaultGroups, groupIndexFor, parseExcludes, parseGroups, planDrain, type DrainPlan } from '../../../src/services/drain/drain-plan.js';
import { UsageError } from '../../../src/lib/errors.js';
import { FakeSession, type FakePod } from '../fake-session.js';

async function plan(pods: FakePod[], groups = defaultGroups(30, 10), extra: Partial<Parameters<typeof planDrain>[0]> = {}): Promise<DrainPlan> {
  const session = new FakeSession(pods);
  return planDrain({ pods: await session.listPods(), groups, ...extra });
}

const layout = (p: DrainPlan): string[][] => p.groups.map((g) => g.pods.map((x) => `${x.namespace}/${x.name}:${x.gracePeriodSeconds}`));

describe("defaultGroups (the kubelet's two-group layout)", () => {
  it('splits the budget: priority 0 gets total − critical, critical priority gets the rest', () => {
    expect(defaultGroups(30, 10)).toEqual([
      { priority: 0, budgetSeconds: 20 },
      { priority: SYSTEM_CRITICAL_PRIORITY, budgetSeconds: 10 },
    ]);
    expect(defaultGroups(10, 10)).toEqual([
      { priority: 0, budgetSeconds: 0 },
      { priority: SYSTEM_CRITICAL_PRIORITY, budgetSeconds: 10 },
    ]);
  });

  it('refuses a critical share larger than the whole budget, naming both flags', () => {
    expect(() => defaultGroups(10, 20)).toThrow(UsageError);
    expect(() => defaultGroups(10, 20)).toThrow(/--critical-grace-period \(20s\) exceeds --grace-period \(10s\)/);
    expect(() => defaultGroups(-1, 0)).toThrow(/--grace-period/);
  });
});

describe('parseGroups (--group PRIORITY:SECONDS)', () => {
  it('parses and sorts by priority, negative priorities included', () => {
    expect(parseGroups(['100000:10', '-5:3', '0:20'])).toEqual([
      { priority: -5, budgetSeconds: 3 },
      { priority: 0, budgetSeconds: 20 },
      { priority: 100000, budgetSeconds: 10 },
    ]);
  });

  it.each([['abc'], ['10'], ['10:'], [':10'], ['1:2:3'], ['1:-2'], ['99999999999:1']])('rejects %j', (value) => {
    expect(() => parseGroups([value])).toThrow(/--group/);
  });

  it('rejects a priority given twice', () => {
    expect(() => parseGroups(['0:10', '0:20'])).toThrow(/priority 0 given twice/);
  });
});

describe("groupIndexFor (the kubelet's groupByPriority search)", () => {
  const groups = parseGroups(['0:1', '100:1', '1000:1']);
  it.each([
    [-50, 0, 'below every group → the lowest'],
    [0, 0, 'on a boundary → that group'],
    [99, 0, 'between → the lower one'],
    [100, 1, 'on the next boundary'],
    [500, 1, 'between 100 and 1000'],
    [1000, 2, 'on the last boundary'],
    [5_000_000, 2, 'above every group → the highest'],
  ])('priority %d → group %d (%s)', (priority, index) => {
    expect(groupIndexFor(groups, priority)).toBe(index);
  });
});

describe("criticalReason (the kubelet's IsCriticalPod)", () => {
  it('static, mirror and system-critical priority pods are critical; others are not', async () => {
    const session = new FakeSession([
      { namespace: 'kube-system', name: 'etcd', static: true },
      { namespace: 'kube-system', name: 'mirror', annotations: { 'kubernetes.io/config.mirror': 'abc' } },
      { namespace: 'kube-system', name: 'file', annotations: { 'kubernetes.io/config.source': 'file' } },
      { namespace: 'kube-system', name: 'api-sourced', annotations: { 'kubernetes.io/config.source': 'api' } },
      { namespace: 'kube-system', name: 'dns', priority: SYSTEM_CRITICAL_PRIORITY },
      { namespace: 'default', name: 'web', priority: SYSTEM_CRITICAL_PRIORITY - 1 },
    ]);
    const reasons = (await session.listPods()).map((p) => [p.name, criticalReason(p) ?? null]);
    expect(Object.fromEntries(reasons)).toEqual({ etcd: 'static', mirror: 'mirror', file: 'static', 'api-sourced': null, dns: 'priority', web: null });
  });
});

describe('planDrain', () => {
  it('orders groups by ascending priority and puts critical pods last', async () => {
    const p = await plan([
      { namespace: 'kube-system', name: 'etcd', static: true, grace: 30 },
      { namespace: 'web', name: 'frontend', priority: 1000, grace: 30 },
      { namespace: 'batch', name: 'report', priority: -10, grace: 60 },
      { namespace: 'kube-system', name: 'coredns', priority: SYSTEM_CRITICAL_PRIORITY, grace: 30 },
    ]);
    expect(p.groups.map((g) => [g.priority, g.budgetSeconds, g.critical])).toEqual([
      [0, 20, false],
      [SYSTEM_CRITICAL_PRIORITY, 10, true],
    ]);
    expect(layout(p)).toEqual([
      ['batch/report:20', 'web/frontend:20'],
      ['kube-system/coredns:10', 'kube-system/etcd:10'],
    ]);
  });

  it('grace = min(group budget, pod grace), at least 1 s', async () => {
    const p = await plan(
      [
        { namespace: 'a', name: 'short', grace: 5 },
        { namespace: 'a', name: 'long', grace: 600 },
        { namespace: 'a', name: 'zero', grace: 0 },
        { namespace: 'b', name: 'nobudget', priority: -100, grace: 30 },
      ],
      parseGroups(['-100:0', '0:20']),
    );
    expect(layout(p)).toEqual([['b/nobudget:1'], ['a/long:20', 'a/short:5', 'a/zero:1']]);
    const long = p.groups[1]?.pods.find((x) => x.name === 'long');
    expect(long?.podGraceSeconds).toBe(600);
  });

  it('with explicit groups a static pod of priority 0 still goes to the highest group', async () => {
    const p = await plan(
      [
        { namespace: 'kube-system', name: 'etcd', static: true, grace: 30 },
        { namespace: 'web', name: 'a', priority: 0, grace: 30 },
        { namespace: 'web', name: 'b', priority: 150, grace: 30 },
      ],
      parseGroups(['0:10', '100:15', '1000:5']),
    );
    expect(p.groups.map((g) => g.priority)).toEqual([0, 100, 1000]);
    expect(layout(p)).toEqual([['web/a:10'], ['web/b:15'], ['kube-system/etcd:5']]);
    expect(p.groups[2]?.pods[0]?.criticalReason).toBe('static');
  });

  it('drops empty groups and skips excluded and already-terminated pods, each pod exactly once', async () => {
    const pods: FakePod[] = [
      { namespace: 'web', name: 'a' },
      { namespace: 'web', name: 'b', state: 'terminated' },
      { namespace: 'kube-system', name: 'x' },
      { namespace: 'kube-system', name: 'y' },
      { namespace: 'default', name: 'c', state: 'finished' },
    ];
    const p = await plan(pods, defaultGroups(30, 10), {
      isExcluded: parseExcludes(['kube-system/*']),
      isTerminated: (pod) => pod.state === 'terminated' || pod.state === 'finished',
    });
    expect(p.groups).toHaveLength(1);
    expect(layout(p)).toEqual([['web/a:20']]);
    expect(p.skipped.map((s) => `${s.namespace}/${s.name}:${s.reason}`)).toEqual(['default/c:already-terminated', 'kube-system/x:excluded', 'kube-system/y:excluded', 'web/b:already-terminated']);
    const all = [...p.groups.flatMap((g) => g.pods), ...p.skipped].map((x) => x.uid).sort();
    expect(new Set(all).size).toBe(pods.length);
  });

  it("the drainer's own pod (the agent's) is skipped as self, never planned", async () => {
    const p = await plan(
      [
        { namespace: 'podctl-system', name: 'podctl-agent-x' },
        { namespace: 'web', name: 'a' },
      ],
      defaultGroups(30, 10),
      {
        isSelf: (pod) => pod.name === 'podctl-agent-x',
      },
    );
    expect(layout(p)).toEqual([['web/a:20']]);
    expect(p.skipped.map((s) => `${s.namespace}/${s.name}:${s.reason}`)).toEqual(['podctl-system/podctl-agent-x:self']);
  });

  it('runtime-only pods (no spec) are planned with grace 1 in the lowest group', async () => {
    const p = await plan([{ namespace: 'default', name: 'orphan', noSpec: true, state: 'runtime' }]);
    expect(layout(p)).toEqual([['default/orphan:1']]);
    expect(p.groups[0]?.pods[0]?.priority).toBe(0);
  });

  it("the default bound is every non-empty group's budget plus the longest killPodNow bound", async () => {
    const p = await plan(
      [
        { namespace: 'a', name: 'x', grace: 40 },
        { namespace: 'kube-system', name: 'etcd', static: true, grace: 30 },
      ],
      defaultGroups(60, 10),
    );
    // budgets 50 + 10; longest drain grace 40 → killPodNow bound 60
    expect(p.defaultTimeoutSeconds).toBe(50 + 10 + 60);
    const empty = await plan([{ namespace: 'a', name: 'x', grace: 2 }], defaultGroups(60, 10));
    expect(empty.defaultTimeoutSeconds).toBe(50 + 10);
  });

  it('is deterministic whatever the input order', async () => {
    const pods: FakePod[] = Array.from({ length: 20 }, (_, i) => ({ namespace: `ns${i % 3}`, name: `p${i}`, priority: ((i * 37) % 7) * 100, grace: i }));
    const groups = parseGroups(['0:5', '300:5', '600:5']);
    const a = await plan(pods, groups);
    const b = await plan([...pods].reverse(), groups);
    expect(layout(a)).toEqual(layout(b));
  });

  it('needs at least one group', async () => {
    await expect(plan([{ namespace: 'a', name: 'b' }], [])).rejects.toThrow(/no drain groups/);
  });
});

describe('parseExcludes', () => {
  it('matches ns/name, ns/* and UIDs', async () => {
    const session = new FakeSession([
      { namespace: 'a', name: 'x', uid: 'u1' },
      { namespace: 'a', name: 'y', uid: 'u2' },
      { namespace: 'b', name: 'x', uid: 'u3' },
      { namespace: 'c', name: 'z', uid: 'u4' },
    ]);
    const excluded = parseExcludes(['a/x', 'b/*', 'u4']);
    expect((await session.listPods()).filter(excluded).map((p) => p.uid)).toEqual(['u1', 'u3', 'u4']);
  });

  it('takes globs on either side, and says which values matched no pod', async () => {
    const session = new FakeSession([
      { namespace: 'web', name: 'api-1', uid: 'u1' },
      { namespace: 'web', name: 'api-2', uid: 'u2' },
      { namespace: 'web', name: 'cache', uid: 'u3' },
      { namespace: 'kube-system', name: 'etcd', uid: 'u4' },
    ]);
    const excluded = parseExcludes(['web/api-*', 'kube-*/etc?', 'web/nomatch', 'web/a.i-1']);
    expect((await session.listPods()).filter(excluded).map((p) => p.uid)).toEqual(['u1', 'u2', 'u4']);
    // a dot is a dot, not any character; nomatch matched nothing
    expect(excluded.unmatched()).toEqual(['web/nomatch', 'web/a.i-1']);
  });

  it.each(['', 'a/b/c', '/x', 'api-*'])('rejects %j', (value) => {
    expect(() => parseExcludes([value])).toThrow(/--exclude/);
  });
});
