import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { openSession, type SessionSeams } from '../../src/services/session.js';
import type { NodeSession } from '../../src/services/session-api.js';
import { openStore, type Store } from '../../src/store/index.js';
import { tempDir } from '../store/support/fixtures.js';
import { FakeRuntime } from './support/fake-runtime.js';

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
    await expect(s.requestKill({ uid: 'nope' })).rejects.toThrow('pod nope is not known to the runtime or the state dir');
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
    expect((await store.inbox.pendingUids()).size).toBe(0);
  });

  it('a longer grace from another process never lengthens the termination', async () => {
    runtime.add({ uid: 'p3', grace: 30, stopDelayMs: 60_000 });
    const owner = await open();
    await owner.requestKill({ uid: 'p3', gracePeriodSeconds: 4 });
    const other = await open();
    await other.requestKill({ uid: 'p3', gracePeriodSeconds: 20 });
    await new Promise((r) => setTimeout(r, 300));
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
    const resumedGraces = runtime.attempts.slice(attemptsBefore).filter((a) => a.uid === 'p4').map((a) => a.grace);
    expect(resumedGraces.length).toBeGreaterThan(0);
    expect(resumedGraces.every((g) => g !== undefined && g <= 7)).toBe(true);
    expect(runtime.pods.get('p4')!.running).toBe(false);
    expect(result.forgotten).toContain('p4');
    expect(await store.checkpoints.read('p4')).toBeUndefined();
    const pod = (await second.listPods()).find((p) => p.uid === 'p4');
    expect(pod?.state).toBe('runtime');
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

describe('session: persistence failures', () => {
  it('disk full while persisting: the kill reports the error, the old checkpoint stays intact', async () => {
    runtime.add({ uid: 'd1', stopDelayMs: 60_000 });
    runtime.add({ uid: 'd2', stopDelayMs: 60_000 });
    const ok = await open();
    await ok.requestKill({ uid: 'd1', gracePeriodSeconds: 9 });
    await ok.close();
    const before = await store.checkpoints.read('d1');
    const { nodeFileOps } = await import('../../src/store/files.js');
    let full = false;
    const s = await open({
      storeOps: {
        ...nodeFileOps,
        write: async (handle, data) => {
          if (full) throw Object.assign(new Error('no space'), { code: 'ENOSPC' });
          return nodeFileOps.write(handle, data);
        },
      },
    });
    full = true;
    await expect(s.requestKill({ uid: 'd2' })).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(await store.checkpoints.read('d1')).toEqual(before);
    full = false;
  });
});
