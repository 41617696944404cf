import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openSession, type SessionSeams } from '../../src/session/open.js';
import type { NodeSession } from '../../src/domain/session-api.js';
import { openStore, type Store } from '../../src/store/index.js';
import { tempDir, temporariesIn } from '../store/support/fixtures.js';
import { FakeRuntime } from './support/fake-runtime.js';
import { until } from '../support/wait.js';

let dir: { path: string; cleanup: () => Promise<void> };
let stateDir: string;
let runtime: FakeRuntime;
let sessions: NodeSession[];
let store: Store;

beforeEach(async () => {
  dir = await tempDir('podctl-session-');
  stateDir = join(dir.path, 'state');
  runtime = new FakeRuntime();
  sessions = [];
  store = await openStore({ stateDir });
});
afterEach(async () => {
  await Promise.all(sessions.map((s) => s.close()));
  await dir.cleanup();
});

async function open(seams: SessionSeams = {}): Promise<NodeSession> {
  const session = await openSession({ stateDir }, { runtime: runtime.session(), rescanMs: 200, ...seams });
  sessions.push(session);
  return session;
}

const WAIT = { timeoutMs: 10_000 };
/** A poll of the store here: bounded like WAIT, re-checked every 5 ms. */
const POLL = { ...WAIT, everyMs: 5 };

describe('session: one process', () => {
  it('kills a pod it drives: durable before it returns, terminated after the wait, timeline recorded', async () => {
    runtime.add({ uid: 'p1', grace: 30 });
    const s = await open();
    const handle = await s.requestKill({ uid: 'p1', gracePeriodSeconds: 5 });
    expect(handle).toEqual({ uid: 'p1', handledBy: 'local', ownerPid: process.pid });
    const durable = await store.checkpoints.read('p1');
    expect(durable?.status.terminatingAt ?? durable?.status.pendingUpdate?.updateType).toBeDefined();
    const outcome = await s.waitTerminated(['p1'], WAIT);
    expect(outcome.get('p1')).toBe('terminated');
    expect(runtime.attempts.filter((a) => a.uid === 'p1').map((a) => a.grace)).toEqual([5]);
    const info = await s.getPod('p1');
    expect(info?.state === 'terminated' || info?.state === 'finished').toBe(true);
    expect(info?.owner?.pid).toBe(process.pid);
    expect(info?.history.map((h) => h.type)).toEqual(expect.arrayContaining(['lease-taken', 'kill-requested', 'state-changed']));
    await s.close();
    const final = await store.checkpoints.read('p1');
    expect(final?.status.terminatedAt).toBeDefined();
    expect(final?.history.some((h) => h.detail === 'terminating → terminated')).toBe(true);
    expect((await store.leases.inspect('p1'))?.released).toBe(true);
  });

  it('a running static pod found in the runtime goes through its terminating step', async () => {
    runtime.add({ uid: 'st1', static: true, grace: 30 });
    const s = await open();
    await s.requestKill({ uid: 'st1', gracePeriodSeconds: 3 });
    expect((await s.waitTerminated(['st1'], WAIT)).get('st1')).toBe('terminated');
    expect(runtime.attempts.filter((a) => a.uid === 'st1').map((a) => [a.kind, a.grace])).toEqual([['pod', 3]]);
    expect(runtime.pods.get('st1')!.running).toBe(false);
  });

  it('lists runtime-only pods, owned pods and their owner', async () => {
    runtime.add({ uid: 'r1' });
    runtime.add({ uid: 'r2', stopDelayMs: 60_000 });
    const s = await open();
    await s.requestKill({ uid: 'r2' });
    const pods = new Map((await s.listPods()).map((p) => [p.uid, p]));
    expect(pods.get('r1')).toMatchObject({ state: 'runtime', containersRunning: 1, containersTotal: 1, name: 'pod-r1' });
    expect(pods.get('r1')?.owner).toBeUndefined();
    expect(pods.get('r2')).toMatchObject({ state: 'terminating', gracePeriod: 30, owner: { pid: process.pid, alive: true } });
    expect(pods.get('r2')?.graceDeadline).toBeGreaterThan(Date.now() + 20_000);
  });

  it('refuses an unknown pod with a clear error', async () => {
    const s = await open();
    await expect(s.requestKill({ uid: 'nope' })).rejects.toMatchObject({ message: 'pod not found on this node: nope', exitCode: 4 });
  });

  it('waitTerminated is bounded: a pod that does not stop times out', async () => {
    runtime.add({ uid: 'slow', stopDelayMs: 60_000 });
    const s = await open();
    await s.requestKill({ uid: 'slow' });
    const started = Date.now();
    const outcome = await s.waitTerminated(['slow'], { timeoutMs: 300 });
    expect(outcome.get('slow')).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe('session: hand-over between processes', () => {
  it('a second kill with a shorter grace is delegated to the owner and shortens the running termination', async () => {
    runtime.add({ uid: 'p2', grace: 30, stopDelayMs: 60_000 });
    const owner = await open();
    await owner.requestKill({ uid: 'p2' });
    const other = await open();
    const handle = await other.requestKill({ uid: 'p2', gracePeriodSeconds: 1 });
    expect(handle).toEqual({ uid: 'p2', handledBy: 'delegated', ownerPid: process.pid });
    const outcome = await other.waitTerminated(['p2'], WAIT);
    expect(outcome.get('p2')).toBe('terminated');
    const graces = runtime.attempts.filter((a) => a.uid === 'p2').map((a) => a.grace);
    expect(graces[0]).toBe(30);
    expect(graces.at(-1)).toBe(1);
    expect(runtime.stops.filter((u) => u === 'p2')).toHaveLength(1);
    const pod = await other.getPod('p2');
    expect(pod?.history.some((h) => h.type === 'request-applied' && h.detail.includes('grace 1s'))).toBe(true);
    // The cancelled attempt is shown as such, not as a runtime error with a backoff.
    expect(pod?.history.some((h) => h.detail === 'terminating sync cancelled (new intent: re-running at once)')).toBe(true);
    expect(pod?.history.some((h) => h.type === 'requeued')).toBe(false);
    expect(pod?.lastError).toBeUndefined();
    expect((await store.inbox.pendingUids()).size).toBe(0);
  });

  it('a longer grace from another process never lengthens the termination', async () => {
    runtime.add({ uid: 'p3', grace: 30, stopDelayMs: 60_000 });
    const owner = await open();
    await owner.requestKill({ uid: 'p3', gracePeriodSeconds: 4 });
    const other = await open();
    await other.requestKill({ uid: 'p3', gracePeriodSeconds: 20 });
    await until('the other request applied to p3', async () => (await other.getPod('p3'))?.history.some((h) => h.type === 'request-applied') ?? false, POLL);
    const info = await other.getPod('p3');
    expect(info?.gracePeriod).toBe(4);
    expect(runtime.attempts.filter((a) => a.uid === 'p3').every((a) => (a.grace ?? 99) <= 4)).toBe(true);
  });

  it('resumes a terminating pod released by its owner with the remembered grace, never longer', async () => {
    runtime.add({ uid: 'p4', grace: 30, stopDelayMs: 60_000 });
    const first = await open();
    await first.requestKill({ uid: 'p4', gracePeriodSeconds: 7 });
    await first.close();
    const saved = await store.checkpoints.read('p4');
    expect(saved?.status.terminatingAt).toBeDefined();
    expect(saved?.status.gracePeriod).toBe(7);
    runtime.pods.get('p4')!.stopDelayMs = 50;
    const attemptsBefore = runtime.attempts.length;
    const second = await open();
    const result = await second.syncKnown([]);
    expect(result.resumed).toEqual(['p4']);
    const resumedGraces = runtime.attempts
      .slice(attemptsBefore)
      .filter((a) => a.uid === 'p4')
      .map((a) => a.grace);
    expect(resumedGraces.length).toBeGreaterThan(0);
    expect(resumedGraces.every((g) => g !== undefined && g <= 7)).toBe(true);
    expect(runtime.pods.get('p4')!.running).toBe(false);
    expect(result.forgotten).toContain('p4');
    expect(await store.checkpoints.read('p4')).toBeUndefined();
    // forgotten, but the runtime still lists it: shown as it ended, not as a pod nobody acted on
    const pod = (await second.listPods()).find((p) => p.uid === 'p4');
    expect(pod).toMatchObject({ state: 'finished', forgotten: true });
    expect(pod?.history.map((h) => h.type)).toContain('forgotten');
  });

  it('a finished pod stays finished after a takeover: no new kill, forgotten by sync-known', async () => {
    runtime.add({ uid: 'p5' });
    const first = await open();
    await first.requestKill({ uid: 'p5', gracePeriodSeconds: 2 });
    await first.waitTerminated(['p5'], WAIT);
    await new Promise((r) => setTimeout(r, 50));
    await first.close();
    expect((await store.checkpoints.read('p5'))?.status.finished).toBe(true);
    const attempts = runtime.attempts.length;
    const second = await open();
    const result = await second.syncKnown([]);
    expect(runtime.attempts.length).toBe(attempts);
    expect(result.resumed).toEqual([]);
    expect(result.forgotten).toEqual(['p5']);
  });

  it('sync-known terminates runtime pods no worker knows, but not desired ones', async () => {
    runtime.add({ uid: 'orphan' });
    runtime.add({ uid: 'wanted' });
    runtime.specless.add('orphan');
    const s = await open();
    const result = await s.syncKnown([runtime.specFor('wanted')]);
    expect(result.orphanedRuntimePods).toEqual(['orphan']);
    expect(runtime.pods.get('orphan')!.running).toBe(false);
    expect(runtime.attempts.filter((a) => a.uid === 'orphan').map((a) => a.kind)).toEqual(['runtime']);
    expect(runtime.pods.get('wanted')!.running).toBe(true);
    expect(runtime.attempts.some((a) => a.uid === 'wanted')).toBe(false);
  });

  it('sync-known leaves pods of a live owner alone', async () => {
    runtime.add({ uid: 'busy', stopDelayMs: 60_000 });
    const owner = await open();
    await owner.requestKill({ uid: 'busy' });
    const other = await open();
    const result = await other.syncKnown([]);
    expect(result.resumed).toEqual([]);
    expect(result.orphanedRuntimePods).toEqual([]);
    expect(runtime.attempts.filter((a) => a.uid === 'busy')).toHaveLength(1);
  });
});

describe('session: following other processes', () => {
  it('waitTerminated takes over a pod whose owner went away mid-termination and finishes it', async () => {
    runtime.add({ uid: 'w1', grace: 30, stopDelayMs: 60_000 });
    const first = await open();
    await first.requestKill({ uid: 'w1', gracePeriodSeconds: 6 });
    await first.close();
    runtime.pods.get('w1')!.stopDelayMs = 20;
    const second = await open();
    const outcome = await second.waitTerminated(['w1'], WAIT);
    expect(outcome.get('w1')).toBe('terminated');
    const pod = await second.getPod('w1');
    expect(pod?.owner?.pid).toBe(process.pid);
    const types = pod?.history.map((h) => h.type) ?? [];
    expect(types.filter((t) => t === 'lease-taken')).toHaveLength(2);
    expect(pod?.history.find((h) => h.type === 'resumed')?.detail).toBe('resumed terminating with 6s of grace left');
    expect(runtime.attempts.filter((a) => a.uid === 'w1').every((a) => (a.grace ?? 99) <= 6)).toBe(true);
  });

  it("subscribers see other sessions' checkpoint and lease changes, but not heartbeats", async () => {
    runtime.add({ uid: 's1', stopDelayMs: 60_000 });
    const watcher = await open();
    const events: string[] = [];
    const seen = new Promise<void>((resolve) => {
      watcher.subscribe((event) => {
        if (event.source === 'store' && event.uid === 's1') {
          events.push(event.kind);
          if (events.includes('checkpoint-changed') && events.includes('lease-changed')) resolve();
        }
      });
    });
    const actor = await open({ heartbeatMs: 20 });
    await actor.requestKill({ uid: 's1' });
    await seen;
    const leaseEvents = (): number => events.filter((k) => k === 'lease-changed').length;
    const count = leaseEvents();
    await new Promise((r) => setTimeout(r, 150)); // several heartbeats (mtime updates) of the actor
    expect(leaseEvents()).toBe(count);
  });
});

describe('session: the inbox re-scan', () => {
  it('a session that holds no lease does not read the inbox every re-scan; one that drives a pod does', async () => {
    const { Inbox } = await import('../../src/store/inbox.js');
    const reads = vi.spyOn(Inbox.prototype, 'pendingUids');
    try {
      runtime.add({ uid: 'r1', stopDelayMs: 60_000 });
      const s = await open({ rescanMs: 20 });
      // a follower (watch, status -w): a dozen re-scan ticks, not one read of the folder
      await new Promise((r) => setTimeout(r, 300));
      expect(reads).not.toHaveBeenCalled();
      // driving a pod, the session re-scans its inbox for requests the folder watch missed
      await s.requestKill({ uid: 'r1' });
      await until('the inbox re-scanned', async () => reads.mock.calls.length >= 2, POLL);
    } finally {
      reads.mockRestore();
    }
  });
});

describe('session: write-ahead', () => {
  it("every pod's kill is on disk before the runtime is asked to stop it, also with slow writes and kills at once", async () => {
    const uids = Array.from({ length: 12 }, (_, i) => `w${i}`);
    for (const uid of uids) runtime.add({ uid, grace: 30 });
    // What the store holds for a pod at the moment its terminating step starts.
    const seenAtStop = new Map<string, string | undefined>();
    const inner = runtime.syncer;
    const syncer = {
      ...inner,
      syncTerminatingPod: async (...args: Parameters<typeof inner.syncTerminatingPod>) => {
        const uid = args[1].metadata!.uid!;
        const checkpoint = await store.checkpoints.read(uid);
        seenAtStop.set(uid, checkpoint?.status.terminatingAt !== undefined ? `grace ${checkpoint.status.gracePeriod}` : undefined);
        return inner.syncTerminatingPod(...args);
      },
    };
    const { nodeFileOps } = await import('../../src/store/files.js');
    // Slow fsyncs keep batches in flight while other pods' intents arrive.
    const s = await open({
      runtime: { ...runtime.session(), syncer },
      storeOps: {
        ...nodeFileOps,
        fsync: async (handle) => {
          await new Promise((r) => setTimeout(r, 15));
          return nodeFileOps.fsync(handle);
        },
      },
    });
    await Promise.all(uids.map((uid, i) => s.requestKill({ uid, gracePeriodSeconds: 2 + (i % 3) })));
    const outcomes = await s.waitTerminated(uids, WAIT);
    expect([...outcomes.values()].every((o) => o === 'terminated')).toBe(true);
    for (const [i, uid] of uids.entries()) expect(seenAtStop.get(uid)).toBe(`grace ${2 + (i % 3)}`);
  });
});

describe('session: durability of what it writes', () => {
  it('a kill is fsynced (file and folder) before the pod is stopped; the progress after it is written without fsync', async () => {
    runtime.add({ uid: 'f1', stopDelayMs: 30 });
    const { nodeFileOps } = await import('../../src/store/files.js');
    const log: string[] = [];
    const paths = new WeakMap<object, string>();
    const inner = runtime.session();
    const syncer = {
      ...inner.syncer,
      syncTerminatingPod: async (...args: Parameters<typeof inner.syncer.syncTerminatingPod>) => {
        log.push('stop');
        return inner.syncer.syncTerminatingPod(...args);
      },
    };
    const s = await open({
      runtime: { ...inner, syncer },
      storeOps: {
        ...nodeFileOps,
        open: async (path, flags, mode) => {
          const handle = await nodeFileOps.open(path, flags, mode);
          paths.set(handle, path);
          return handle;
        },
        rename: async (from, to) => {
          if (to.endsWith('.ckpt')) log.push('rename');
          return nodeFileOps.rename(from, to);
        },
        fsync: async (handle) => {
          if (paths.get(handle)?.includes('.ckpt.tmp-')) log.push('fsync');
          return nodeFileOps.fsync(handle);
        },
        fsyncDir: async (path) => {
          if (path === store.layout.pods) log.push('fsync folder');
          return nodeFileOps.fsyncDir(path);
        },
      },
    });
    await s.requestKill({ uid: 'f1', gracePeriodSeconds: 5 });
    expect(await s.waitTerminated(['f1'], WAIT)).toEqual(new Map([['f1', 'terminated']]));
    await s.close();
    // write-ahead: the intent is on disk before the stop; later writes (terminated, finished) only rename
    expect(log.slice(0, 4)).toEqual(['fsync', 'rename', 'fsync folder', 'stop']);
    const later = log.slice(4);
    expect(later.filter((e) => e === 'rename').length).toBeGreaterThan(0);
    expect(later.filter((e) => e.startsWith('fsync'))).toEqual([]);
    expect((await store.checkpoints.read('f1'))?.status).toMatchObject({ finished: true });
    expect((await store.checkpoints.read('f1'))?.status.terminatedAt).toBeDefined();
  });
});

describe('session: what its close writes', () => {
  it('writes a pod whose cleanup the close waits for once, after that cleanup, not also while it runs', async () => {
    runtime.add({ uid: 'w1' });
    const { nodeFileOps } = await import('../../src/store/files.js');
    const inner = runtime.session();
    let closing = false;
    const renamesWhileClosing: string[] = [];
    const syncer = {
      ...inner.syncer,
      // the terminated phase's cleanup (its final check) takes a while: longer than the flush delay
      syncTerminatedPod: async (...args: Parameters<typeof inner.syncer.syncTerminatedPod>) => {
        await new Promise((r) => setTimeout(r, 150));
        return inner.syncer.syncTerminatedPod(...args);
      },
    };
    const s = await open({
      runtime: { ...inner, syncer },
      storeOps: {
        ...nodeFileOps,
        rename: async (from, to) => {
          if (closing && to.endsWith('.ckpt')) renamesWhileClosing.push(to);
          return nodeFileOps.rename(from, to);
        },
      },
    });
    await s.requestKill({ uid: 'w1', gracePeriodSeconds: 5 });
    expect(await s.waitTerminated(['w1'], WAIT)).toEqual(new Map([['w1', 'terminated']]));
    closing = true;
    await s.close();
    expect(renamesWhileClosing).toEqual([store.checkpoints.pathOf('w1')]);
    const final = await store.checkpoints.read('w1');
    expect(final?.status).toMatchObject({ finished: true });
    expect(final?.history.some((h) => h.detail === 'terminating → terminated')).toBe(true);
    expect((await store.leases.inspect('w1'))?.released).toBe(true);
  });
});

describe('session: persistence failures', () => {
  it('a corrupt checkpoint is quarantined with one warning; the other pods are listed and resumed', async () => {
    runtime.add({ uid: 'c1', stopDelayMs: 60_000 });
    runtime.add({ uid: 'c2', stopDelayMs: 60_000 });
    const first = await open();
    await first.requestKill({ uid: 'c1', gracePeriodSeconds: 3 });
    await first.requestKill({ uid: 'c2', gracePeriodSeconds: 3 });
    await first.close();
    const { truncate } = await import('node:fs/promises');
    await truncate(store.checkpoints.pathOf('c1'), 40);
    const warnings: string[] = [];
    const second = await openSession({ stateDir, log: (level, message) => level === 'warn' && warnings.push(message) }, { runtime: runtime.session(), rescanMs: 200 });
    sessions.push(second);
    const pods = new Map((await second.listPods()).map((p) => [p.uid, p]));
    expect(pods.get('c2')?.state).toBe('terminating');
    expect(pods.get('c1')?.state).toBe('runtime'); // its worker state is lost, the pod is still seen
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^checkpoint .*c1\.ckpt truncated .*; moved to .*quarantine/);
    runtime.pods.get('c2')!.stopDelayMs = 10;
    const result = await second.syncKnown([runtime.specFor('c1'), runtime.specFor('c2')]);
    expect(result.resumed).toEqual(['c2']);
    expect(runtime.pods.get('c2')!.running).toBe(false);
  });

  it('disk full while persisting: the kill reports it in one line, old checkpoints stay intact, nothing is done to the pod; with space back the kill works', async () => {
    runtime.add({ uid: 'd1', stopDelayMs: 60_000 });
    runtime.add({ uid: 'd2', stopDelayMs: 60_000 });
    const ok = await open();
    await ok.requestKill({ uid: 'd1', gracePeriodSeconds: 9 });
    await ok.close();
    const before = await readFile(store.checkpoints.pathOf('d1'));
    const { nodeFileOps } = await import('../../src/store/files.js');
    const checkpointHandles = new WeakSet<object>();
    let full = true;
    const warnings: string[] = [];
    const s = await openSession(
      { stateDir, log: (level, message) => level === 'warn' && warnings.push(message) },
      {
        runtime: runtime.session(),
        rescanMs: 200,
        storeOps: {
          ...nodeFileOps,
          open: async (path, flags, mode) => {
            const handle = await nodeFileOps.open(path, flags, mode);
            if (path.includes('.ckpt.tmp-')) checkpointHandles.add(handle);
            return handle;
          },
          write: async (handle, data) => {
            if (full && checkpointHandles.has(handle)) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
            return nodeFileOps.write(handle, data);
          },
        },
      },
    );
    sessions.push(s);
    const error = await s.requestKill({ uid: 'd2' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ENOSPC' });
    expect((error as Error).message).toMatch(/^no space left on device writing checkpoint .*d2\.ckpt; the previous version is kept/);
    expect(warnings.filter((w) => w.startsWith('no space left'))).toHaveLength(1);
    expect(await readFile(store.checkpoints.pathOf('d1'))).toEqual(before);
    expect(await store.checkpoints.read('d2')).toBeUndefined();
    expect((error as Error).message).toMatch(/nothing was done to the pod$/);
    expect(await temporariesIn(store.layout.pods)).toEqual([]);
    // write-ahead: the kill that could not be written was not done, and is not done later
    expect(runtime.attempts.filter((a) => a.uid === 'd2')).toEqual([]);
    full = false;
    await new Promise((r) => setTimeout(r, 300));
    expect(await store.checkpoints.read('d2')).toBeUndefined();
    expect(runtime.pods.get('d2')!.running).toBe(true);
    // Space comes back: the kill asked again is written and done.
    const handle = await s.requestKill({ uid: 'd2' });
    expect(handle.handledBy).toBe('local');
    await until('d2 terminating on disk', async () => (await store.checkpoints.read('d2'))?.status.terminatingAt !== undefined, POLL);
  });
});
