/**
 * restore(views): checkpointed statuses loaded into a fresh engine keep every invariant — finished
 * stays finished, terminated only needs the terminated step, terminating continues with the saved
 * grace (never longer), sync pods are tracked — and a snapshot taken mid-lifecycle round-trips.
 */
import { describe, expect, it } from 'vitest';
import type { PodSyncStatusView } from '../../src/engine/types.js';
import { SECOND, untilAborted, createHarness, expectedView, newNamedPod, runningPod } from './harness.js';

const steps = (h: ReturnType<typeof createHarness>, uid: string): string[] =>
  (h.syncer.processed.get(uid) ?? []).map((r) => (r.terminated ? 'terminated' : r.runningPod ? 'kill-runtime' : r.updateType === 'kill' ? `kill(${r.gracePeriod})` : `sync(${r.updateType})`));

const pod = (uid: string, isStatic = false) => newNamedPod(uid, 'ns', uid, isStatic);

function view(uid: string, partial: Partial<PodSyncStatusView>): PodSyncStatusView {
  return expectedView({ uid, fullname: `${uid}_ns`, syncedAt: SECOND, ...partial });
}

describe('restore', () => {
  it('keeps a finished pod finished: no syncer call, updates ignored, forgotten by syncKnownPods', async () => {
    const h = createHarness();
    h.workers.restore([
      view('f', {
        startedAt: SECOND,
        terminatingAt: 2 * SECOND,
        terminatedAt: 3 * SECOND,
        finished: true,
        gracePeriod: 30,
        startedTerminating: true,
        activeUpdate: { updateType: 'sync', pod: pod('f') },
      }),
    ]);
    expect(h.workers.statusOf('f')!.working).toBe(false);
    h.workers.updatePod({ updateType: 'update', pod: pod('f') });
    await h.workers.whenIdle();
    expect(h.syncer.processed.size).toBe(0);
    expect(h.workers.isPodKnownTerminated('f')).toBe(true);
    expect(h.workers.syncKnownPods([]).size).toBe(0);
    expect(h.workers.statusOf('f')).toBeUndefined();
  });

  it('runs only the terminated step for a terminated pod', async () => {
    const h = createHarness();
    h.workers.restore([
      view('t', {
        startedAt: SECOND,
        terminatingAt: 2 * SECOND,
        terminatedAt: 3 * SECOND,
        gracePeriod: 30,
        startedTerminating: true,
        activeUpdate: { updateType: 'sync', pod: pod('t'), killPodOptions: { gracePeriodSecondsOverride: 30 } },
      }),
    ]);
    expect(h.workers.statusOf('t')!.working).toBe(true);
    expect(h.workers.couldHaveRunningContainers('t')).toBe(false);
    await h.workers.whenIdle();
    expect(steps(h, 't')).toEqual(['terminated']);
    expect(h.workers.statusOf('t')).toMatchObject({ finished: true, terminatedAt: 3 * SECOND, startedAt: SECOND });
  });

  it('continues a terminating pod with its saved grace, never longer', async () => {
    const h = createHarness();
    const deleted = pod('g');
    deleted.metadata!.deletionTimestamp = new Date(SECOND);
    deleted.metadata!.deletionGracePeriodSeconds = 25;
    h.workers.restore([
      view('g', {
        startedAt: SECOND,
        terminatingAt: 2 * SECOND,
        gracePeriod: 7,
        deleted: true,
        startedTerminating: true,
        activeUpdate: { updateType: 'sync', pod: deleted, killPodOptions: { gracePeriodSecondsOverride: 25 } },
      }),
    ]);
    const pending = h.workers.statusOf('g')!.pendingUpdate!;
    expect(pending.killPodOptions).toEqual({ gracePeriodSecondsOverride: 7 });
    await h.workers.whenIdle();
    expect(steps(h, 'g')).toEqual(['kill(7)', 'terminated']);
    expect(h.workers.statusOf('g')).toMatchObject({ gracePeriod: 7, finished: true, deleted: true });
  });

  it('a later, longer kill cannot stretch a restored grace; a shorter one aborts and reruns', async () => {
    const h = createHarness();
    h.syncer.onTerminating = (_uid, signal) => {
      const grace = h.syncer.processed.get('g')!.at(-1)!.gracePeriod!;
      return grace > 2 ? untilAborted(signal) : undefined;
    };
    h.workers.restore([view('g', { startedAt: SECOND, terminatingAt: 2 * SECOND, gracePeriod: 7, activeUpdate: { updateType: 'sync', pod: pod('g') } })]);
    h.workers.updatePod({ updateType: 'kill', pod: pod('g'), killPodOptions: { gracePeriodSecondsOverride: 20 } });
    expect(h.workers.statusOf('g')!.gracePeriod).toBe(7);
    h.workers.updatePod({ updateType: 'kill', pod: pod('g'), killPodOptions: { gracePeriodSecondsOverride: 2 } });
    await h.workers.whenIdle();
    expect(steps(h, 'g').at(-2)).toBe('kill(2)');
    expect(steps(h, 'g').every((s) => !s.startsWith('kill(') || s === 'kill(7)' || s === 'kill(2)')).toBe(true);
    expect(h.workers.statusOf('g')!.finished).toBe(true);
  });

  it('terminates a restored runtime-only pod and forgets it', async () => {
    const h = createHarness();
    const rp = runningPod('r', 'r', 'ns');
    h.workers.restore([
      view('r', {
        terminatingAt: 2 * SECOND,
        gracePeriod: 1,
        deleted: true,
        observedRuntime: true,
        activeUpdate: { updateType: 'sync', runningPod: rp, killPodOptions: { gracePeriodSecondsOverride: 1 } },
      }),
    ]);
    await h.workers.whenIdle();
    expect(steps(h, 'r')).toEqual(['kill-runtime']);
    expect(h.workers.statusOf('r')).toBeUndefined();
  });

  it('tracks a sync pod without syncing it until the next update, keeping when it started', async () => {
    const h = createHarness();
    h.workers.restore([view('s', { startedAt: 2 * SECOND, activeUpdate: { updateType: 'sync', pod: pod('s') } })]);
    await h.workers.whenIdle();
    expect(h.syncer.processed.size).toBe(0);
    expect(h.workers.couldHaveRunningContainers('s')).toBe(true);
    h.clock.tick(10 * SECOND);
    h.workers.updatePod({ updateType: 'update', pod: pod('s') });
    await h.workers.whenIdle();
    expect(steps(h, 's')).toEqual(['sync(update)']);
    expect(h.workers.statusOf('s')!.startedAt).toBe(2 * SECOND);
    // as an orphan it is driven to termination; like the kubelet, the replayed sync-time update
    // carries no grace override, so the syncer falls back to the pod's own grace (30 here)
    h.workers.syncKnownPods([]);
    expect(h.workers.statusOf('s')!.gracePeriod).toBe(30);
    await h.workers.whenIdle();
    expect(steps(h, 's')).toEqual(['sync(update)', 'kill(undefined)', 'terminated']);
  });

  it('replays an update that was still pending', async () => {
    const h = createHarness();
    h.workers.restore([view('p', { pendingUpdate: { updateType: 'create', pod: pod('p') } })]);
    expect(h.workers.statusOf('p')!.working).toBe(true);
    await h.workers.whenIdle();
    expect(steps(h, 'p')).toEqual(['sync(create)']);
  });

  it('keeps static pod exclusion: a started static pod holds its name, a never-started one waits in order', async () => {
    const h = createHarness();
    h.workers.restore([
      view('b', { syncedAt: 2 * SECOND, fullname: 'etcd_ns', pendingUpdate: { updateType: 'create', pod: newNamedPod('b', 'ns', 'etcd', true) } }),
      view('a', { syncedAt: 1 * SECOND, fullname: 'etcd_ns', startedAt: SECOND, activeUpdate: { updateType: 'sync', pod: newNamedPod('a', 'ns', 'etcd', true) } }),
    ]);
    await h.workers.whenIdle();
    expect(h.syncer.processed.has('b')).toBe(false);
    h.workers.updatePod({ updateType: 'kill', pod: newNamedPod('a', 'ns', 'etcd', true) });
    await h.workers.whenIdle();
    h.workers.updatePod({ updateType: 'update', pod: newNamedPod('b', 'ns', 'etcd', true) });
    await h.workers.whenIdle();
    expect(steps(h, 'b')).toEqual(['sync(update)']);
  });

  it('round-trips a snapshot taken mid-termination into a fresh engine that finishes the job', async () => {
    const first = createHarness();
    first.syncer.onTerminating = (_uid, signal) => untilAborted(signal); // the first process dies mid-kill
    first.workers.updatePod({ updateType: 'create', pod: pod('x') });
    await first.workers.whenIdle();
    first.workers.updatePod({ updateType: 'kill', pod: pod('x'), killPodOptions: { evict: true, gracePeriodSecondsOverride: 12 } });
    await new Promise<void>((resolve) => {
      const off = first.workers.subscribe((e) => {
        if (e.type === 'sync-started') {
          off();
          resolve();
        }
      });
    });
    // as a checkpoint stores it: the view's fields plus its UID (the snapshot's key)
    const saved = JSON.parse(JSON.stringify([...first.workers.snapshot()].map(([uid, view]) => ({ ...view, uid })))) as PodSyncStatusView[];

    const second = createHarness();
    second.workers.restore(saved);
    await second.workers.whenIdle();
    expect(steps(second, 'x')).toEqual(['kill(12)', 'terminated']);
    expect(second.workers.statusOf('x')).toMatchObject({ evicted: true, gracePeriod: 12, finished: true, startedAt: saved[0]!.startedAt });
    await first.workers.close();
  });

  it('repairs lifecycle order and refuses to restore a pod twice', () => {
    const h = createHarness();
    h.workers.restore([view('r', { finished: true, terminatingAt: 4 * SECOND })]);
    expect(h.workers.statusOf('r')).toMatchObject({ finished: true, terminatedAt: 4 * SECOND, startedTerminating: true });
    expect(() => h.workers.restore([view('r', {})])).toThrow(/already tracked/);
    h.workers.updatePod({ updateType: 'create', pod: pod('n') });
    expect(() => h.workers.restore([view('n', {})])).toThrow(/already tracked/);
    expect(() => h.workers.restore([view('d', {}), view('d', {})])).toThrow(/already tracked/);
  });

  it('marks a terminated pod with no spec left finished (nothing to clean up)', async () => {
    const h = createHarness();
    h.workers.restore([view('z', { terminatingAt: SECOND, terminatedAt: 2 * SECOND })]);
    await h.workers.whenIdle();
    expect(h.workers.statusOf('z')!.finished).toBe(true);
    expect(h.syncer.processed.size).toBe(0);
  });
});
