import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LeaseManager, nodeFileOps, openStore, type Store } from '../../src/store/index.js';
import { isIdentityAlive, parseProcStat, processIdentity } from '../../src/store/proc.js';
import { entriesOf, tempDir } from './support/fixtures.js';

let dir: { path: string; cleanup: () => Promise<void> };
let store: Store;

beforeEach(async () => {
  dir = await tempDir();
  store = await openStore({ stateDir: join(dir.path, 'state') });
});
afterEach(async () => {
  await dir.cleanup();
});

function manager(options: Partial<ConstructorParameters<typeof LeaseManager>[0]> = {}): LeaseManager {
  return new LeaseManager({ layout: store.layout, ...options });
}

/** The PID of a process that has exited and been reaped. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

describe('process identity', () => {
  it('reads the start time from /proc/<pid>/stat, even with spaces and parens in the command', () => {
    const stat = parseProcStat('1234 (my (odd) cmd) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 12345 ');
    expect(stat).toEqual({ state: 'S', startTicks: 987654 });
  });

  it('tells our own identity alive, a reused PID (other start time) and a dead PID not', () => {
    const me = processIdentity();
    expect(me.startTicks).toBeGreaterThan(0);
    expect(Math.abs(me.startedAt - (Date.now() - process.uptime() * 1000))).toBeLessThan(5_000);
    expect(isIdentityAlive(me)).toBe(true);
    expect(isIdentityAlive({ pid: me.pid, startTicks: me.startTicks + 1 })).toBe(false);
    expect(isIdentityAlive({ pid: deadPid(), startTicks: 1 })).toBe(false);
  });
});

describe('leases', () => {
  it('one holder: a second manager (another session) sees the live owner', async () => {
    const a = manager();
    const b = manager();
    expect(await a.tryAcquire('pod-1')).toMatchObject({ acquired: true, generation: 1 });
    const second = await b.tryAcquire('pod-1');
    expect(second.acquired).toBe(false);
    if (!second.acquired) {
      expect(second.owner.record?.pid).toBe(process.pid);
      expect(second.owner.alive).toBe(true);
    }
    expect(await a.tryAcquire('pod-1')).toMatchObject({ acquired: true, generation: 1 });
    expect(a.holds('pod-1')).toBe(true);
    expect(b.holds('pod-1')).toBe(false);
    expect((await stat(join(store.layout.leases, 'pod-1@1'))).mode & 0o777).toBe(0o600);
  });

  it('a dead owner is taken over by the next generation', async () => {
    const dead = manager({ identity: { pid: deadPid(), startTicks: 1, startedAt: 0 } });
    await dead.tryAcquire('pod-2');
    const view = await store.leases.inspect('pod-2');
    expect(view?.alive).toBe(false);
    const taker = manager();
    const result = await taker.tryAcquire('pod-2');
    expect(result).toMatchObject({ acquired: true, generation: 2, previous: { generation: 1, alive: false } });
    expect(await entriesOf(store.layout.leases)).toEqual(['pod-2@2']);
  });

  it('a reused PID (same PID, other start time) does not keep the lease', async () => {
    const me = processIdentity();
    const impostor = manager({ identity: { ...me, startTicks: me.startTicks - 1 } });
    await impostor.tryAcquire('pod-3');
    expect((await store.leases.inspect('pod-3'))?.alive).toBe(false);
    expect(await manager().tryAcquire('pod-3')).toMatchObject({ acquired: true, generation: 2 });
  });

  it('release writes a tombstone; the next process acquires without a takeover', async () => {
    const a = manager();
    await a.tryAcquire('pod-4');
    await a.release('pod-4');
    const view = await store.leases.inspect('pod-4');
    expect(view).toMatchObject({ generation: 2, released: true, alive: false });
    expect(await manager().tryAcquire('pod-4')).toMatchObject({ acquired: true, generation: 3 });
  });

  it('heartbeat refreshes the mtime; a lost lease is reported by the next beat', async () => {
    let t = Date.now() + 60_000;
    const a = manager({ clock: () => t });
    await a.tryAcquire('pod-5');
    expect(await a.heartbeat()).toEqual([]);
    expect(Math.abs((await store.leases.inspect('pod-5'))!.heartbeatAt - t)).toBeLessThan(1_000);
    // Someone wrongly judging `a` dead takes over: `a` must notice and stop driving the pod.
    const judge = manager({ isAlive: () => false });
    expect(await judge.tryAcquire('pod-5')).toMatchObject({ acquired: true });
    t += 1_000;
    expect(await a.heartbeat()).toEqual(['pod-5']);
    expect(a.holds('pod-5')).toBe(false);
  });

  it('housekeeping deletes old tombstones of pods without a checkpoint, and nothing else', async () => {
    let t = 1_000_000;
    const a = manager({ clock: () => t });
    for (const uid of ['gone', 'kept', 'recent', 'held']) await a.tryAcquire(uid);
    await a.release('gone');
    await a.release('kept');
    t += 2 * 3_600_000;
    await a.release('recent');
    const swept = await a.sweepReleased(3_600_000, (uid) => uid === 'kept');
    expect(swept).toBe(1);
    const left = await entriesOf(store.layout.leases);
    expect(left).toEqual(['held@1', 'kept@2', 'recent@2']);
    // A later acquisition of the swept pod starts again and works.
    expect(await manager().tryAcquire('gone')).toMatchObject({ acquired: true, generation: 1 });
  });

  it('an unreadable lease file is treated as stale and superseded', async () => {
    await writeFile(join(store.layout.leases, 'pod-6@1'), 'garbage', { mode: 0o600 });
    const reports: string[] = [];
    const a = manager({ report: (m) => reports.push(m) });
    expect(await a.tryAcquire('pod-6')).toMatchObject({ acquired: true, generation: 2 });
    expect(reports[0]).toMatch(/lease .*pod-6@1 is unreadable/);
  });

  it('a slow acquirer that re-creates a swept low generation loses to the higher one', async () => {
    const dead = manager({ identity: { pid: deadPid(), startTicks: 1, startedAt: 0 } });
    await dead.tryAcquire('pod-7'); // gen 1, stale
    const fast = manager();
    let interleaved = false;
    const slow = manager({
      ops: {
        ...nodeFileOps,
        async link(existing, newPath) {
          if (!interleaved) {
            interleaved = true;
            // Between the slow one's read of gen 1 and its link of gen 2, another process takes
            // over (gen 2), releases (gen 3) and acquires again (gen 4), sweeping gens 1–3.
            await fast.tryAcquire('pod-7');
            await fast.release('pod-7');
            await fast.tryAcquire('pod-7');
            expect((await readdir(store.layout.leases)).filter((n) => !n.startsWith('.'))).toEqual(['pod-7@4']);
          }
          await nodeFileOps.link(existing, newPath);
        },
      },
    });
    const result = await slow.tryAcquire('pod-7');
    expect(interleaved).toBe(true);
    expect(result.acquired).toBe(false);
    expect(slow.holds('pod-7')).toBe(false);
    expect(fast.holds('pod-7')).toBe(true);
    expect(await entriesOf(store.layout.leases)).toEqual(['pod-7@4']);
  });

  it('many managers racing for a stale lease in one process: exactly one wins', async () => {
    const dead = manager({ identity: { pid: deadPid(), startTicks: 1, startedAt: 0 } });
    await dead.tryAcquire('pod-8');
    const racers = Array.from({ length: 16 }, () => manager());
    const results = await Promise.all(racers.map((r) => r.tryAcquire('pod-8')));
    expect(results.filter((r) => r.acquired)).toHaveLength(1);
    expect(racers.filter((r) => r.holds('pod-8'))).toHaveLength(1);
  });

  it('8 processes racing for 40 pods (20 of them with dead owners): each pod has exactly one holder', async () => {
    const uids = Array.from({ length: 40 }, (_, i) => `race-${i}`);
    const dead = manager({ identity: { pid: deadPid(), startTicks: 1, startedAt: 0 } });
    for (const uid of uids.slice(0, 20)) await dead.tryAcquire(uid);
    const goFile = join(dir.path, 'go');
    const script = join(import.meta.dirname, 'support/lease-racer.ts');
    const children = Array.from({ length: 8 }, () => spawn(process.execPath, ['--import', 'tsx', script, store.layout.root, goFile, ...uids], { stdio: ['pipe', 'pipe', 'inherit'] }));
    const outputs = children.map(
      (child) =>
        new Promise<string[]>((resolve, reject) => {
          let out = '';
          child.stdout.on('data', (d: Buffer) => {
            out += d.toString();
            if (out.includes('\n')) resolve(JSON.parse(out) as string[]);
          });
          child.on('exit', (code) => reject(new Error(`racer exited ${code} before answering`)));
        }),
    );
    await new Promise((r) => setTimeout(r, 50));
    await writeFile(goFile, 'go');
    const won = await Promise.all(outputs);
    const all = won.flat();
    expect(all.sort()).toEqual([...uids].sort());
    const views = await store.leases.inspectAll();
    for (const uid of uids) expect(views.get(uid)?.alive).toBe(true);
    for (const child of children) child.stdin.end();
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.on('exit', r)))));
    const after = await store.leases.inspectAll();
    for (const uid of uids) expect(after.get(uid)?.alive).toBe(false);
    expect((await stat(store.layout.leases)).mode & 0o777).toBe(0o700);
  }, 30_000);
});
