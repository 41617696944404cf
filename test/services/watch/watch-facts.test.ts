/**
 * The watch's node facts (services/watch/watch-facts.ts): gathered only for pods on their way out, never
 * two at once, kept when a gathering fails, and a pod's cause reported once per change of kind.
 */
import { describe, expect, it } from 'vitest';
import type { NodeFacts } from '../../../src/services/diagnose/status.js';
import { WatchFacts, isLeaving } from '../../../src/services/watch/watch-facts.js';
import { FakeSession, pod } from '../../tui/support/fake-session.js';

const NOW = 1_000_000;

function facts(processes: Record<string, Array<{ state: string }>>): NodeFacts {
  return {
    kubeletRunning: false,
    processes: new Map(Object.entries(processes).map(([uid, list]) => [uid, list.map((p, i) => ({ container: 'app', containerId: `c${i}`, pid: 100 + i, state: p.state }))])),
    mounts: new Map(),
    podDir: (uid) => `/var/lib/kubelet/pods/${uid}`,
    api: new Map(),
  };
}

const stopping = (name: string) =>
  pod(name, { state: 'terminating', gracePeriod: 1, graceDeadline: NOW - 5_000, owner: { pid: 4242, startedAt: 1, heartbeatAt: NOW, alive: true }, containersRunning: 1 });

describe('WatchFacts', () => {
  it('gathers nothing while no pod is on its way out', async () => {
    let calls = 0;
    const w = new WatchFacts(new FakeSession(), { pods: () => [pod('web/a'), pod('web/b')], gather: async () => (calls++, facts({})) });
    await w.refresh();
    expect(calls).toBe(0);
    expect(w.current()).toBeUndefined();
    w.close();
  });

  it('gathers only the leaving pods, one gathering at a time', async () => {
    const asked: string[][] = [];
    let release: () => void = () => undefined;
    const w = new WatchFacts(new FakeSession(), {
      pods: () => [pod('web/a'), stopping('web/b')],
      gather: (pods) => {
        asked.push(pods.map((p) => p.name));
        return new Promise((resolve) => (release = () => resolve(facts({}))));
      },
    });
    const first = w.refresh();
    const second = w.refresh();
    release();
    await Promise.all([first, second]);
    expect(asked).toEqual([['b']]);
    w.close();
  });

  it('keeps the last facts when a gathering fails, and keeps the same object while nothing changed', async () => {
    let next: () => Promise<NodeFacts> = async () => facts({ 'uid-web-b': [{ state: 'D' }] });
    const w = new WatchFacts(new FakeSession(), { pods: () => [stopping('web/b')], gather: () => next() });
    let changes = 0;
    w.subscribe(() => changes++);
    await w.refresh();
    const first = w.current();
    expect(first?.processes.get('uid-web-b')?.[0]?.state).toBe('D');
    next = async () => facts({ 'uid-web-b': [{ state: 'D' }] });
    await w.refresh();
    expect(w.current()).toBe(first);
    next = async () => {
      throw new Error('runtime gone');
    };
    await w.refresh();
    expect(w.current()).toBe(first);
    expect(changes).toBe(1);
    w.close();
  });

  it('reports a pod once per change of its cause: D state, then the process gone', async () => {
    let processes: Record<string, Array<{ state: string }>> = { 'uid-web-b': [{ state: 'D' }] };
    const pods = [stopping('web/b')];
    const w = new WatchFacts(new FakeSession(), { pods: () => pods, gather: async () => facts(processes) });
    // before any facts: within the listing alone the pod is only past its grace
    expect(w.causeChanges(pods, NOW)).toEqual([]);
    await w.refresh();
    const d = w.causeChanges(pods, NOW);
    expect(d.map((c) => c.cause.kind)).toEqual(['uninterruptible-io']);
    expect(w.causeChanges(pods, NOW)).toEqual([]);
    processes = { 'uid-web-b': [{ state: 'gone' }] };
    await w.refresh();
    expect(w.causeChanges(pods, NOW).map((c) => c.cause.kind)).toEqual(['stale-shim']);
    w.close();
  });

  it('a pod is leaving while terminating, terminated and unfinished, or deleted in the API', () => {
    expect(isLeaving(pod('a'))).toBe(false);
    expect(isLeaving(pod('a', { state: 'terminating' }))).toBe(true);
    expect(isLeaving(pod('a', { state: 'terminated' }))).toBe(true);
    expect(isLeaving(pod('a', { state: 'finished' }))).toBe(false);
    expect(isLeaving(pod('a', { pod: { metadata: { name: 'a', deletionTimestamp: new Date(0) } } }))).toBe(true);
  });

  it('looks only at overdue pods (past their grace, erroring or undriven), at most 64, the longest stuck first', async () => {
    const asked: string[][] = [];
    const within = pod('web/within', { since: 20_000, state: 'terminating', gracePeriod: 30, graceDeadline: NOW + 20_000, owner: { pid: 1, startedAt: 1, heartbeatAt: NOW, alive: true } });
    const erroring = { ...within, uid: 'u-err', name: 'erroring', lastError: { message: 'StopContainer: DeadlineExceeded', at: NOW } };
    const undriven = { ...within, uid: 'u-undriven', name: 'undriven', owner: undefined };
    const many = Array.from({ length: 70 }, (_, i) => ({ ...stopping(`web/over-${i}`), uid: `u-${i}`, since: 10_000 + (69 - i) }));
    const w = new WatchFacts(new FakeSession(), { pods: () => [within, erroring, undriven, ...many], now: () => NOW, gather: async (pods) => (asked.push(pods.map((p) => p.name)), facts({})) });
    await w.refresh();
    expect(asked).toHaveLength(1);
    const names = asked[0]!;
    expect(names).toHaveLength(64);
    expect(names).not.toContain('within');
    // the longest in their state first: over-69 entered it first
    expect(names[0]).toBe('over-69');
    w.close();
    const few = new WatchFacts(new FakeSession(), { pods: () => [within, erroring, undriven], now: () => NOW, gather: async (pods) => (asked.push(pods.map((p) => p.name)), facts({})) });
    await few.refresh();
    expect(asked[1]!.sort()).toEqual(['erroring', 'undriven']);
    few.close();
  });

  it('a driven pod that has just stopped is not looked at until it has been stopped for a gathering interval', async () => {
    const asked: string[][] = [];
    const owner = { pid: 1, startedAt: 1, heartbeatAt: NOW, alive: true };
    const justStopped = pod('web/just-stopped', { state: 'terminated', since: NOW - 500, owner });
    const stillStopped = pod('web/still-stopped', { state: 'terminated', since: NOW - 2_500, owner });
    const undrivenJustStopped = pod('web/undriven', { state: 'terminated', since: NOW - 500 });
    const w = new WatchFacts(new FakeSession(), {
      pods: () => [justStopped, stillStopped, undrivenJustStopped],
      now: () => NOW,
      gather: async (pods) => (asked.push(pods.map((p) => p.name)), facts({})),
    });
    await w.refresh();
    expect(asked.map((names) => [...names].sort())).toEqual([['still-stopped', 'undriven']]);
    w.close();
  });
  it('a driven pod whose grace has just run out is being killed: looked at only once it is a gathering interval past it', async () => {
    const asked: string[][] = [];
    const owner = { pid: 1, startedAt: 1, heartbeatAt: NOW, alive: true };
    const justOut = pod('web/just-out', { state: 'terminating', gracePeriod: 3, graceDeadline: NOW - 500, owner });
    const longOut = pod('web/long-out', { state: 'terminating', gracePeriod: 3, graceDeadline: NOW - 2_500, owner });
    const w = new WatchFacts(new FakeSession(), { pods: () => [justOut, longOut], now: () => NOW, gather: async (pods) => (asked.push(pods.map((p) => p.name)), facts({})) });
    await w.refresh();
    expect(asked).toEqual([['long-out']]);
    w.close();
  });

  it('stretches the time to the next gathering to what the last one cost over its share of a core (1 %), at most 10 s', async () => {
    let cpu = 0;
    let cost = 0;
    const w = new WatchFacts(new FakeSession(), {
      pods: () => [stopping('web/b')],
      cpuMs: () => cpu,
      gather: async () => {
        cpu += cost;
        return facts({});
      },
    });
    expect(w.nextIntervalMs()).toBe(2_000);
    cost = 60;
    await w.refresh();
    expect(w.nextIntervalMs()).toBe(6_000);
    cost = 5;
    await w.refresh();
    expect(w.nextIntervalMs()).toBe(2_000);
    cost = 400;
    await w.refresh();
    expect(w.nextIntervalMs()).toBe(10_000);
    w.close();
    // a round with nothing overdue costs nothing: the next one comes at the interval
    let pods = [stopping('web/b')];
    const quiet = new WatchFacts(new FakeSession(), { pods: () => pods, cpuMs: () => cpu, gather: async () => ((cpu += 60), facts({})) });
    await quiet.refresh();
    expect(quiet.nextIntervalMs()).toBe(6_000);
    pods = [];
    await quiet.refresh();
    expect(quiet.nextIntervalMs()).toBe(2_000);
    quiet.close();
    // a failed gathering counts too
    const failing = new WatchFacts(new FakeSession(), {
      pods: () => [stopping('web/b')],
      cpuMs: () => cpu,
      gather: async () => {
        cpu += 50;
        throw new Error('runtime gone');
      },
    });
    await failing.refresh();
    expect(failing.nextIntervalMs()).toBe(5_000);
    failing.close();
    // no budget: the interval as given
    const unbounded = new WatchFacts(new FakeSession(), { pods: () => [stopping('web/b')], budget: 0, intervalMs: 1_500, cpuMs: () => cpu, gather: async () => ((cpu += 300), facts({})) });
    await unbounded.refresh();
    expect(unbounded.nextIntervalMs()).toBe(1_500);
    unbounded.close();
  });
});
