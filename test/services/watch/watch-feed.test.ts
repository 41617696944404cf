import { afterEach, describe, expect, it, vi } from 'vitest';
import { WatchFeed, type FeedChange } from '../../../src/services/watch/watch-feed.js';
import { FakeSession, pod } from '../../tui/support/fake-session.js';
import type { ListPodsOptions, PodInfo } from '../../../src/domain/session-api.js';

const feeds: WatchFeed[] = [];
afterEach(() => {
  for (const f of feeds.splice(0)) f.close();
});

function feedOf(session: FakeSession, coalesceMs = 50): { feed: WatchFeed; changes: FeedChange[] } {
  const feed = new WatchFeed(session, { coalesceMs });
  feeds.push(feed);
  const changes: FeedChange[] = [];
  feed.onChange((c) => changes.push(c));
  return { feed, changes };
}

/** Resolves on the feed's next snapshot change. */
function nextChange(feed: WatchFeed): Promise<void> {
  return new Promise((resolve) => {
    const off = feed.subscribe(() => {
      off();
      resolve();
    });
  });
}

describe('watch feed', () => {
  it('reads the first listing on start, without reporting it as transitions', async () => {
    const session = new FakeSession([pod('default/a'), pod('default/b')]);
    const { feed, changes } = feedOf(session);
    await feed.start();
    expect(feed.snapshot().pods.map((p) => p.name)).toEqual(['a', 'b']);
    expect(changes.flatMap((c) => c.transitions)).toEqual([]);
    expect(session.listenerCount).toBe(1);
  });

  it('finds a transition made by another process and labels it with the store as source', async () => {
    const a = pod('default/a', { since: 1 });
    const session = new FakeSession([a]);
    const { feed, changes } = feedOf(session);
    await feed.start();
    session.set({ ...a, state: 'terminating', since: 5_000, gracePeriod: 10, owner: { pid: 777, startedAt: 0, heartbeatAt: 0, alive: true } });
    const changed = nextChange(feed);
    session.emit({ source: 'store', uid: a.uid, at: 5_000, kind: 'checkpoint-changed' });
    await changed;
    const transitions = changes.flatMap((c) => c.transitions);
    expect(transitions).toEqual([{ at: 5_000, uid: a.uid, namespace: 'default', name: 'a', from: 'sync', to: 'terminating', fromSince: 1, source: 'store', gracePeriod: 10, ownerPid: 777 }]);
    expect(feed.snapshot().entries.at(-1)).toMatchObject({ kind: 'transition', pod: 'default/a', detail: 'sync → terminating (pid 777)' });
  });

  it("shows another process's kill at once: its lease write does not take the leading edge from the checkpoint write after it", async () => {
    const a = pod('default/a', { since: 1 });
    const session = new FakeSession([a]);
    // A long pacing: a re-read that waited for it would not come within the test's bounds. The
    // first listing was read a pacing interval ago (the screen has been open a while).
    let clock = 1_000;
    const feed = new WatchFeed(session, { coalesceMs: 60_000, now: () => clock });
    feeds.push(feed);
    const changes: FeedChange[] = [];
    feed.onChange((c) => changes.push(c));
    await feed.start();
    clock = 120_000;
    // another podctl process takes the pod's lease, then writes its checkpoint (terminating)
    session.emit({ source: 'store', uid: a.uid, at: 5_000, kind: 'lease-changed' });
    await new Promise((r) => setTimeout(r, 20));
    session.set({ ...a, state: 'terminating', since: 5_000, gracePeriod: 30, owner: { pid: 777, startedAt: 0, heartbeatAt: 0, alive: true } });
    session.emit({ source: 'store', uid: a.uid, at: 5_010, kind: 'checkpoint-changed' });
    await vi.waitFor(() => expect(changes.flatMap((c) => c.transitions).map((t) => [t.from, t.to, t.source])).toEqual([['sync', 'terminating', 'store']]), { timeout: 10_000 });
    expect(feed.snapshot().pods[0]?.state).toBe('terminating');
    // one re-read for both writes (the first listing, then exactly one)
    expect(session.listedUids).toEqual([undefined, [a.uid]]);
  });

  it('reads a lease or request write alone after the pacing interval, not at once', async () => {
    const a = pod('default/a', { since: 1 });
    const session = new FakeSession([a]);
    let clock = 1_000;
    const feed = new WatchFeed(session, { coalesceMs: 300, now: () => clock });
    feeds.push(feed);
    await feed.start();
    clock = 120_000;
    session.emit({ source: 'store', uid: a.uid, at: 5_000, kind: 'lease-changed' });
    await new Promise((r) => setTimeout(r, 20));
    expect(session.listedUids).toEqual([undefined]);
    await vi.waitFor(() => expect(session.listedUids).toEqual([undefined, [a.uid]]), { timeout: 10_000 });
  });

  it("reads another process's steps between two listings from the pod's timeline", async () => {
    const a = pod('default/a', { state: 'runtime', since: 1, history: [] });
    const session = new FakeSession([a]);
    const { feed, changes } = feedOf(session, 1);
    await feed.start();
    // Between two listings the other process took the pod from runtime-only to finished.
    session.set({
      ...a,
      state: 'finished',
      since: 4_000,
      history: [
        { at: 1_000, type: 'lease-taken', detail: 'lease taken', pid: 77 },
        { at: 1_000, type: 'state-changed', detail: 'new → terminating', pid: 77 },
        { at: 3_000, type: 'sync-failed', detail: 'terminating sync failed: x', pid: 77 },
        { at: 3_500, type: 'state-changed', detail: 'terminating → terminated', pid: 77 },
        { at: 4_000, type: 'finished', detail: 'finished (cleanup done)', pid: 77 },
      ],
    });
    session.emit({ source: 'store', uid: a.uid, at: 4_000, kind: 'checkpoint-changed' });
    await feed.whenSettled();
    const steps = changes.flatMap((c) => c.transitions).map((t) => [t.from, t.to, t.at, t.source, t.ownerPid]);
    expect(steps).toEqual([
      ['runtime', 'terminating', 1_000, 'store', 77],
      ['terminating', 'terminated', 3_500, 'store', 77],
      ['terminated', 'finished', 4_000, 'store', 77],
    ]);
    // A timeline that does not lead to the listed state is not trusted: one step from the states.
    const b = pod('default/b', { since: 1, history: [] });
    session.set(b);
    session.emit({ source: 'store', uid: b.uid, at: 5_000, kind: 'checkpoint-changed' });
    await feed.whenSettled();
    session.set({ ...b, state: 'terminated', since: 6_000, history: [{ at: 5_500, type: 'state-changed', detail: 'sync → terminating', pid: 77 }] });
    session.emit({ source: 'store', uid: b.uid, at: 6_000, kind: 'checkpoint-changed' });
    await feed.whenSettled();
    expect(
      changes
        .flatMap((c) => c.transitions)
        .filter((t) => t.name === 'b')
        .map((t) => [t.from, t.to]),
    ).toEqual([
      ['new', 'sync'],
      ['sync', 'terminated'],
    ]);
  });

  it("labels transitions of this process's engine as engine, and pods that vanished as gone", async () => {
    const a = pod('default/a');
    const b = pod('default/b');
    const session = new FakeSession([a, b]);
    const { feed, changes } = feedOf(session);
    await feed.start();
    await session.requestKill({ uid: a.uid, gracePeriodSeconds: 3 });
    session.pods.delete(b.uid);
    session.emit({ source: 'runtime', at: 1, kind: 'relisted', uids: [b.uid] });
    await feed.whenSettled();
    const transitions = changes.flatMap((c) => c.transitions).map((t) => [t.name, t.from, t.to, t.source]);
    expect(transitions).toEqual([
      ['a', 'sync', 'terminating', 'engine'],
      ['b', 'sync', 'gone', 'runtime'],
    ]);
    // The engine's own events are listed in the pane, once.
    const kinds = feed.snapshot().entries.map((e) => `${e.source}:${e.kind}`);
    expect(kinds).toEqual(['engine:termination-requested', 'engine:state-changed', 'runtime:transition']);
  });

  it("shows this engine's transition at once, and a listing that started before it does not undo it", async () => {
    const a = pod('default/a');
    const session = new FakeSession([a]);
    const { feed, changes } = feedOf(session, 1);
    await feed.start();
    // The next listing starts now and hangs (a runtime busy with the kill), then returns the old view.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const list = session.listPods.bind(session);
    let calls = 0;
    session.listPods = async () => {
      calls += 1;
      const view = await list();
      if (calls === 1) await gate;
      return view;
    };
    session.emit({ source: 'store', uid: a.uid, at: 1, kind: 'lease-changed' });
    await vi.waitFor(() => expect(calls).toBe(1));
    // The engine moves the pod while that listing is in flight.
    const changed = nextChange(feed);
    session.set({ ...a, state: 'terminating', since: 5_000, gracePeriod: 8, graceDeadline: 13_000 });
    session.emitEngine({ type: 'termination-requested', uid: a.uid, fullname: 'a_default', at: 5_000, gracePeriod: 8, evicted: false, deleted: false });
    session.emitEngine({ type: 'state-changed', uid: a.uid, fullname: 'a_default', at: 5_000, from: 'sync', to: 'terminating' });
    await changed;
    expect(feed.snapshot().pods[0]).toMatchObject({ state: 'terminating', since: 5_000, gracePeriod: 8, graceDeadline: 13_000 });
    expect(changes.flatMap((c) => c.transitions).map((t) => [t.from, t.to, t.source])).toEqual([['sync', 'terminating', 'engine']]);
    // The stale listing lands: the transition stays, and is not reported twice.
    release();
    await feed.whenSettled();
    expect(calls).toBe(2);
    expect(feed.snapshot().pods[0]?.state).toBe('terminating');
    expect(changes.flatMap((c) => c.transitions)).toHaveLength(1);
  });

  it('coalesces a burst of events into a bounded number of listings', async () => {
    const session = new FakeSession([pod('default/a')]);
    const { feed } = feedOf(session, 40);
    await feed.start();
    const before = session.listCalls;
    for (let i = 0; i < 500; i += 1) session.emit({ source: 'runtime', at: i, kind: 'relisted', uids: ['x'] });
    await feed.whenSettled();
    // Leading edge + one trailing read for everything that came during the first.
    expect(session.listCalls - before).toBeLessThanOrEqual(2);
    expect(session.listCalls - before).toBeGreaterThanOrEqual(1);
  });

  it('re-reads at once after a quiet period (leading edge) and waits out the window otherwise', async () => {
    vi.useFakeTimers();
    try {
      const session = new FakeSession([pod('default/a')]);
      const { feed } = feedOf(session, 50);
      await feed.start();
      expect(session.listCalls).toBe(1);
      // Within 50 ms of the last read: the next one waits for the window to end.
      session.emit({ source: 'runtime', at: 1, kind: 'relisted', uids: ['x'] });
      await vi.advanceTimersByTimeAsync(49);
      expect(session.listCalls).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(session.listCalls).toBe(2);
      // After a quiet period the first event is read without delay.
      await vi.advanceTimersByTimeAsync(1_000);
      session.emit({ source: 'runtime', at: 2, kind: 'relisted', uids: ['x'] });
      await vi.advanceTimersByTimeAsync(0);
      expect(session.listCalls).toBe(3);
      // And nothing runs while nothing happens.
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('ignores relists that changed nothing (each listing triggers one), so it never loops', async () => {
    const session = new FakeSession([pod('default/a')]);
    const { feed } = feedOf(session, 1);
    await feed.start();
    // A session whose listing relists the runtime, which reports "relisted, nothing changed".
    const list = session.listPods.bind(session);
    session.listPods = async () => {
      const pods = await list();
      queueMicrotask(() => session.emit({ source: 'runtime', at: Date.now(), kind: 'relisted', uids: [] }));
      return pods;
    };
    session.emit({ source: 'runtime', at: 1, kind: 'relisted', uids: ['uid-default-a'] });
    await feed.whenSettled();
    await new Promise((r) => setTimeout(r, 30));
    expect(session.listCalls).toBe(2);
  });

  it('shows a listing failure and recovers on the next event', async () => {
    const session = new FakeSession([pod('default/a')]);
    const { feed } = feedOf(session, 1);
    await feed.start();
    session.failNextList = 'checkpoint store unreadable';
    session.emit({ source: 'runtime', at: 1, kind: 'relisted', uids: ['x'] });
    await feed.whenSettled();
    expect(feed.snapshot().listError).toBe('checkpoint store unreadable');
    expect(feed.snapshot().entries.at(-1)).toMatchObject({ level: 'error', kind: 'list-failed' });
    session.emit({ source: 'runtime', at: 2, kind: 'relisted', uids: ['x'] });
    await feed.whenSettled();
    expect(feed.snapshot().listError).toBeUndefined();
    expect(feed.snapshot().pods).toHaveLength(1);
  });

  it("reports another process's new error once, and not this engine's", async () => {
    const a = pod('default/a');
    const b = pod('default/b');
    const session = new FakeSession([a, b]);
    const { feed, changes } = feedOf(session, 1);
    await feed.start();
    session.set({ ...a, lastError: { message: 'KillContainer: DeadlineExceeded', at: 100 } });
    session.set({ ...b, lastError: { message: 'StopPodSandbox: Unavailable', at: 100 } });
    session.emitEngine({ type: 'sync-failed', uid: b.uid, fullname: 'b_default', at: 100, phase: 'terminating', error: 'StopPodSandbox: Unavailable', retryInMs: 1000 });
    session.emit({ source: 'store', uid: a.uid, at: 100, kind: 'checkpoint-changed' });
    await feed.whenSettled();
    session.emit({ source: 'store', uid: a.uid, at: 101, kind: 'checkpoint-changed' });
    await feed.whenSettled();
    expect(changes.flatMap((c) => c.remoteErrors).map((p) => p.name)).toEqual(['a']);
  });

  it('re-reads only the pods the events named, never the whole listing, and merges them in place', async () => {
    const pods = Array.from({ length: 50 }, (_, i) => pod(`default/p${String(i).padStart(2, '0')}`));
    const session = new FakeSession(pods);
    const { feed, changes } = feedOf(session, 1);
    await feed.start();
    expect(session.listedUids).toEqual([undefined]);
    const untouched = feed.snapshot().pods[1];
    const [a, b, c] = [pods[3]!, pods[17]!, pods[40]!];
    session.set({ ...a, state: 'terminating', since: 2_000, gracePeriod: 5 });
    session.set({ ...b, state: 'terminated', since: 2_000 });
    // c is gone from the node; an unrelated pod changed too, but no event named it.
    session.pods.delete(c.uid);
    session.set({ ...pods[0]!, state: 'terminated', since: 2_000 });
    session.emit({ source: 'store', uid: a.uid, at: 2_000, kind: 'checkpoint-changed' });
    session.emit({ source: 'runtime', at: 2_000, kind: 'relisted', uids: [b.uid, c.uid] });
    session.emit({ source: 'store', uid: a.uid, at: 2_001, kind: 'lease-changed' });
    await feed.whenSettled();
    // Every listing after the first asked for named pods only, and together exactly those three.
    const later = session.listedUids.slice(1);
    expect(later.length).toBeGreaterThanOrEqual(1);
    expect(later.every((u) => u !== undefined)).toBe(true);
    expect([...new Set(later.flat())].sort()).toEqual([a.uid, b.uid, c.uid].sort());
    const snap = feed.snapshot();
    expect(snap.pods).toHaveLength(49);
    // Places kept; the unnamed pod still shows what was last read for it.
    expect(snap.pods[0]).toMatchObject({ uid: pods[0]!.uid, state: 'sync' });
    expect(snap.pods[3]).toMatchObject({ uid: a.uid, state: 'terminating', gracePeriod: 5 });
    expect(snap.pods.find((p) => p.uid === b.uid)?.state).toBe('terminated');
    expect(snap.pods.some((p) => p.uid === c.uid)).toBe(false);
    // Pods that no event named are the same objects as before (nothing was rebuilt for them).
    expect(snap.pods[1]).toBe(untouched);
    const transitions = changes
      .flatMap((x) => x.transitions)
      .map((t) => `${t.name}:${t.from}→${t.to}`)
      .sort();
    expect(transitions).toEqual(['p03:sync→terminating', 'p17:sync→terminated', 'p40:sync→gone']);
    // refresh() reads the whole listing again, and then sees the unnamed change.
    await feed.refresh();
    expect(session.listedUids.at(-1)).toBeUndefined();
    expect(feed.snapshot().pods[0]?.state).toBe('terminated');
  });

  it('bounds runtime relists by the size of the node', async () => {
    const { watchRuntimeMaxAgeMs } = await import('../../../src/services/watch/watch.js');
    expect([0, 100, 250, 500, 501, 1_250, 2_000, 50_000].map(watchRuntimeMaxAgeMs)).toEqual([2_000, 2_000, 2_000, 4_000, 4_008, 10_000, 10_000, 10_000]);
    const pods = Array.from({ length: 1_200 }, (_, i) => pod(`default/p${i}`));
    const session = new FakeSession(pods);
    const feed = new WatchFeed(session, { coalesceMs: 1, runtimeMaxAgeMs: watchRuntimeMaxAgeMs });
    feeds.push(feed);
    await feed.start();
    session.emit({ source: 'store', uid: pods[0]!.uid, at: 1, kind: 'checkpoint-changed' });
    await feed.whenSettled();
    // The first listing knows no pods yet; the next one accepts a runtime listing 9.6 s old (1,200 pods).
    expect(session.runtimeAges).toEqual([2_000, 9_600]);
  });

  /** A session whose every listing costs `costMs` of this process's CPU (as decoding a drain's checkpoints does). */
  class CostlySession extends FakeSession {
    costMs = 30;
    override async listPods(options?: ListPodsOptions): Promise<PodInfo[]> {
      // however long that takes on a busy machine
      const start = process.cpuUsage();
      const cpuMs = () => {
        const used = process.cpuUsage(start);
        return (used.user + used.system) / 1000;
      };
      while (cpuMs() < this.costMs) {
        // burning CPU
      }
      return super.listPods(options);
    }
  }

  it('with a read budget, a stream of costly re-reads keeps within the budget (never more than two seconds apart), and no change is lost', async () => {
    const pods = Array.from({ length: 60 }, (_, i) => pod(`default/p${i}`, { since: 1 }));
    const session = new CostlySession(pods);
    const feed = new WatchFeed(session, { coalesceMs: 50, readBudget: 0.1 });
    feeds.push(feed);
    const changes: FeedChange[] = [];
    feed.onChange((c) => changes.push(c));
    await feed.start();
    const callsBefore = session.listCalls;
    const startedAt = Date.now();
    for (let i = 0; i < 60; i += 1) {
      session.set({ ...pods[i]!, state: 'terminating', since: 100 + i });
      session.emit({ source: 'store', uid: pods[i]!.uid, at: 100 + i, kind: 'checkpoint-changed' });
      await new Promise((r) => setTimeout(r, 25));
    }
    await feed.whenSettled();
    const elapsed = Date.now() - startedAt;
    const reads = session.listCalls - callsBefore;
    // ≥ 30 ms each within a tenth of a core: the burst (two seconds at the budget, 200 ms), what the
    // budget earned meanwhile, and the read that overdrew it — not one every 50 ms (~30)
    expect(reads * 30).toBeLessThanOrEqual(200 + 0.1 * elapsed + 2 * 30);
    expect(feed.snapshot().pods.every((p) => p.state === 'terminating')).toBe(true);
    expect(new Set(changes.flatMap((c) => c.transitions).map((t) => t.uid)).size).toBe(60);
    // a very costly read: the next waits, never more than two seconds
    session.costMs = 250;
    session.emit({ source: 'store', uid: pods[0]!.uid, at: 200, kind: 'checkpoint-changed' });
    await feed.whenSettled();
    expect(feed.readWait()).toBeGreaterThan(0);
    expect(feed.readWait()).toBeLessThanOrEqual(2_000);
  });

  it('with a read budget, the first change after a quiet period is read at once, even right after a costly re-read', async () => {
    const a = pod('default/a', { since: 1 });
    const session = new CostlySession([a]);
    // the whole listing at start costs 190 ms: at a budget of 0.1, 1.9 s of budget
    session.costMs = 190;
    const feed = new WatchFeed(session, { coalesceMs: 50, readBudget: 0.1 });
    feeds.push(feed);
    await feed.start();
    session.costMs = 0;
    await new Promise((r) => setTimeout(r, 100));
    // another process's kill, 100 ms later: read at once, not 1.9 s after the costly read started
    expect(feed.readWait()).toBe(0);
    const seen = new Promise<number>((resolve) => feed.onChange((c) => c.transitions.length > 0 && resolve(Date.now())));
    session.set({ ...a, state: 'terminating', since: 2_000 });
    const changedAt = Date.now();
    session.emit({ source: 'store', uid: a.uid, at: 2_000, kind: 'checkpoint-changed' });
    // (the old rule waited until 1.9 s after the costly read started, ≥ 1.6 s from here on an idle machine)
    expect((await seen) - changedAt).toBeLessThan(700);
  });

  it('keeps the names of a failed re-read for the next one', async () => {
    const a = pod('default/a');
    const b = pod('default/b');
    const session = new FakeSession([a, b]);
    const { feed } = feedOf(session, 1);
    await feed.start();
    session.set({ ...a, state: 'terminating', since: 2_000 });
    session.failNextList = 'store unreadable';
    session.emit({ source: 'store', uid: a.uid, at: 2_000, kind: 'checkpoint-changed' });
    await feed.whenSettled();
    expect(feed.snapshot().listError).toBe('store unreadable');
    session.emit({ source: 'store', uid: b.uid, at: 2_001, kind: 'lease-changed' });
    await feed.whenSettled();
    expect(session.listedUids.at(-1)).toEqual([a.uid, b.uid].sort());
    expect(feed.snapshot().pods.find((p) => p.uid === a.uid)?.state).toBe('terminating');
  });

  it('does not list anything for a session warning (only a line in the events pane)', async () => {
    const session = new FakeSession([pod('default/a')]);
    const { feed } = feedOf(session, 1);
    await feed.start();
    const changed = nextChange(feed);
    session.emit({ source: 'session', at: 5, kind: 'warning', message: 'lease heartbeat slow' });
    await changed;
    await feed.whenSettled();
    expect(session.listCalls).toBe(1);
    expect(feed.snapshot().entries.at(-1)).toMatchObject({ kind: 'warning', detail: 'lease heartbeat slow' });
  });

  it('keeps the event list bounded through a long drain (memory does not grow with history)', async () => {
    const pods = Array.from({ length: 200 }, (_, i) => pod(`default/p${i}`));
    const session = new FakeSession(pods);
    const feed = new WatchFeed(session, { coalesceMs: 0, maxEntries: 50 });
    feeds.push(feed);
    await feed.start();
    for (const [i, p] of pods.entries()) {
      for (const [from, to] of [
        ['sync', 'terminating'],
        ['terminating', 'terminated'],
      ] as const) {
        session.set({ ...session.pods.get(p.uid)!, state: to, since: 2_000 + i });
        session.emitEngine({ type: 'state-changed', uid: p.uid, fullname: `${p.name}_default`, at: 2_000 + i, from, to });
      }
      session.pods.delete(p.uid);
      session.emit({ source: 'runtime', at: 3_000 + i, kind: 'relisted', uids: [p.uid] });
      if (i % 20 === 0) await feed.whenSettled();
    }
    await feed.whenSettled();
    expect(feed.snapshot().pods).toHaveLength(0);
    expect(feed.snapshot().entries.length).toBe(50);
  });

  it('keeps a bounded event list and stops listening on close', async () => {
    const session = new FakeSession([pod('default/a')]);
    const feed = new WatchFeed(session, { coalesceMs: 1, maxEntries: 5 });
    feeds.push(feed);
    await feed.start();
    for (let i = 0; i < 20; i += 1) session.emit({ source: 'session', at: i, kind: 'warning', message: `w${i}` });
    await feed.whenSettled();
    expect(feed.snapshot().entries.map((e) => e.detail)).toEqual(['w15', 'w16', 'w17', 'w18', 'w19']);
    feed.close();
    expect(session.listenerCount).toBe(0);
    const calls = session.listCalls;
    session.emit({ source: 'runtime', at: 1, kind: 'relisted', uids: ['x'] });
    await new Promise((r) => setTimeout(r, 10));
    expect(session.listCalls).toBe(calls);
  });

  it('hands out the same snapshot object until something changes', async () => {
    const session = new FakeSession([pod('default/a')]);
    const { feed } = feedOf(session, 1);
    await feed.start();
    const s1 = feed.snapshot();
    expect(feed.snapshot()).toBe(s1);
    expect(Object.isFrozen(s1)).toBe(true);
    feed.note({ source: 'watch', level: 'info', kind: 'kill-requested', detail: 'x' });
    expect(feed.snapshot()).not.toBe(s1);
  });

  it('shows one request-written line per request, however many folder events it raised', async () => {
    const a = pod('default/a');
    const session = new FakeSession([a]);
    const { feed } = feedOf(session, 1);
    await feed.start();
    const requests = () => feed.snapshot().entries.filter((e) => e.kind === 'request-written');
    session.emit({ source: 'store', uid: a.uid, at: 10_000, kind: 'request-written' });
    session.emit({ source: 'store', uid: a.uid, at: 10_005, kind: 'request-written' });
    session.emit({ source: 'store', uid: a.uid, at: 10_400, kind: 'request-written' });
    await feed.refresh();
    expect(requests().map((e) => e.at)).toEqual([10_000]);
    expect(requests()[0]).toMatchObject({ pod: 'default/a', detail: 'request for the owner' });
    // a later request is a new line
    session.emit({ source: 'store', uid: a.uid, at: 15_000, kind: 'request-written' });
    await feed.refresh();
    expect(requests().map((e) => e.at)).toEqual([10_000, 15_000]);
  });
});
