/**
 * The store's cheap re-reads (what a watch following a drain leans on): a checkpoint or lease file
 * that has not changed is not decoded again, a changed one always is, a shared checkpoint cannot be
 * changed through a reader, and a read of many leases looks each owner up in /proc once.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rename, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LeaseManager, openStore, type Store } from '../../src/store/index.js';
import { encodeCheckpoint } from '../../src/store/format.js';
import type { ProcReadings } from '../../src/store/proc.js';
import { checkpointFor, tempDir } from './support/fixtures.js';

let dir: { path: string; cleanup: () => Promise<void> };
let store: Store;

beforeEach(async () => {
  dir = await tempDir();
  store = await openStore({ stateDir: join(dir.path, 'state') });
});
afterEach(async () => {
  await dir.cleanup();
});

describe('checkpoint reads', () => {
  it('a shared read is the store’s frozen copy, the same object while the file is unchanged; a private read is a copy of its own', async () => {
    await store.checkpoints.write(checkpointFor('a-1'));
    const first = await store.checkpoints.read('a-1', { shared: true });
    const again = await store.checkpoints.read('a-1', { shared: true });
    expect(again).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first!.status)).toBe(true);
    expect(Object.isFrozen(first!.history)).toBe(true);
    expect(() => (first!.history as unknown[]).push({})).toThrow(TypeError);
    const own = await store.checkpoints.read('a-1');
    expect(own).toEqual(first);
    expect(own).not.toBe(first);
    own!.status.gracePeriod = 1;
    own!.history.push({ at: 1, type: 'x', detail: 'x', pid: 1 });
    expect((await store.checkpoints.read('a-1', { shared: true }))!.status.gracePeriod).toBe(first!.status.gracePeriod);
    expect((await store.checkpoints.read('a-1'))!.history).toHaveLength(first!.history.length);
  });

  it('a changed file is read again, whether another writer replaced it or it was rewritten in place', async () => {
    await store.checkpoints.write(checkpointFor('a-1', { since: 1_000 }));
    expect((await store.checkpoints.read('a-1', { shared: true }))!.since).toBe(1_000);
    // another process's write: a new file renamed over the name
    const other = join(dir.path, 'other.ckpt');
    await writeFile(other, encodeCheckpoint(checkpointFor('a-1', { since: 2_000 })));
    await rename(other, store.checkpoints.pathOf('a-1'));
    expect((await store.checkpoints.read('a-1', { shared: true }))!.since).toBe(2_000);
    // the same inode rewritten in place (new size and times)
    await writeFile(store.checkpoints.pathOf('a-1'), encodeCheckpoint(checkpointFor('a-1', { since: 30_000 })));
    expect((await store.checkpoints.read('a-1', { shared: true }))!.since).toBe(30_000);
  });

  it('readSome of a few pods reads those that exist and skips the others', async () => {
    for (const uid of ['a-1', 'b-2']) await store.checkpoints.write(checkpointFor(uid));
    const read = await store.checkpoints.readSome(['a-1', 'ghost', 'b-2'], { shared: true });
    expect([...read.keys()].sort()).toEqual(['a-1', 'b-2']);
    const many = await store.checkpoints.readSome(['a-1', ...Array.from({ length: 80 }, (_, i) => `ghost-${i}`)]);
    expect([...many.keys()]).toEqual(['a-1']);
  });
});

describe('lease reads', () => {
  it('an unchanged lease is not parsed again; a heartbeat (new mtime) and a new generation are seen', async () => {
    const owner = new LeaseManager({ layout: store.layout });
    expect((await owner.tryAcquire('p-1')).acquired).toBe(true);
    const reader = new LeaseManager({ layout: store.layout });
    const first = await reader.inspect('p-1');
    expect(first).toMatchObject({ generation: 1, alive: true, released: false });
    const path = join(store.layout.leases, 'p-1@1');
    await utimes(path, new Date(), new Date(Date.now() + 60_000));
    const beat = await reader.inspect('p-1');
    expect(beat!.heartbeatAt).toBeGreaterThan(first!.heartbeatAt + 30_000);
    await owner.release('p-1');
    expect(await reader.inspect('p-1')).toMatchObject({ generation: 2, released: true, alive: false });
  });

  it('a heartbeat alone is no new read: a lease generation is written once, so the same file (inode, birth time, size) is the same record', async () => {
    const owner = new LeaseManager({ layout: store.layout });
    await owner.tryAcquire('p-1');
    const reader = new LeaseManager({ layout: store.layout });
    const first = await reader.inspect('p-1');
    const path = join(store.layout.leases, 'p-1@1');
    const { readFile } = await import('node:fs/promises');
    // what a re-read would see: the same size, another pid (podctl never writes a lease so)
    const text = await readFile(path, 'utf8');
    const pid = String(process.pid);
    const other = String((Number(pid[0]) % 9) + 1) + pid.slice(1);
    expect(other).toHaveLength(pid.length);
    expect(text).toContain(`"pid":${pid}`);
    await writeFile(path, text.replace(`"pid":${pid}`, `"pid":${other}`));
    await utimes(path, new Date(), new Date(Date.now() + 60_000));
    const beat = await reader.inspect('p-1');
    expect(beat!.record!.pid).toBe(process.pid);
    expect(beat!.heartbeatAt).toBeGreaterThan(first!.heartbeatAt + 30_000);
  });

  it('a lease rewritten in place with content of another size is read again', async () => {
    const owner = new LeaseManager({ layout: store.layout });
    await owner.tryAcquire('p-1');
    const reader = new LeaseManager({ layout: store.layout });
    expect((await reader.inspect('p-1'))!.record!.pid).toBe(process.pid);
    const path = join(store.layout.leases, 'p-1@1');
    const { readFile } = await import('node:fs/promises');
    const record = JSON.parse(await readFile(path, 'utf8')) as { pid: number };
    await writeFile(path, JSON.stringify({ ...record, pid: 4_000_000 }));
    expect((await reader.inspect('p-1'))!.record!.pid).toBe(4_000_000);
  });

  it('inspectSome asks about each owner with one set of /proc readings for the whole read', async () => {
    const owner = new LeaseManager({ layout: store.layout });
    for (const uid of ['p-1', 'p-2', 'p-3']) await owner.tryAcquire(uid);
    const seen: (ProcReadings | undefined)[] = [];
    const reader = new LeaseManager({
      layout: store.layout,
      isAlive: (_record, _heartbeatAt, readings) => {
        seen.push(readings);
        return true;
      },
    });
    const views = await reader.inspectSome(['p-1', 'p-2', 'p-3', 'ghost']);
    expect([...views.keys()].sort()).toEqual(['p-1', 'p-2', 'p-3']);
    expect(seen).toHaveLength(3);
    expect(seen[0]).toBeDefined();
    expect(new Set(seen).size).toBe(1);
    // a later read looks again
    await reader.inspectSome(['p-1']);
    expect(seen[3]).not.toBe(seen[0]);
  });

  it('inspectSome reads the highest generation of each pod it is asked about, and only those', async () => {
    const owner = new LeaseManager({ layout: store.layout });
    for (const uid of ['p-1', 'p-2', 'p-3']) await owner.tryAcquire(uid);
    const { readFile } = await import('node:fs/promises');
    // p-2 taken over twice since: generation 3 rules (a released generation 1 is still on disk)
    const record = JSON.parse(await readFile(join(store.layout.leases, 'p-2@1'), 'utf8')) as { generation: number; pid: number };
    await writeFile(join(store.layout.leases, 'p-2@3'), JSON.stringify({ ...record, generation: 3, pid: 4_000_000 }));
    const reader = new LeaseManager({ layout: store.layout, isAlive: () => true });
    const views = await reader.inspectSome(['p-2', 'p-3', 'ghost']);
    expect([...views.keys()].sort()).toEqual(['p-2', 'p-3']);
    expect(views.get('p-2')).toMatchObject({ generation: 3, record: { pid: 4_000_000 } });
    expect(views.get('p-3')).toMatchObject({ generation: 1, record: { pid: process.pid } });
  });

  it('the default liveness check reads /proc once per owner within one set of readings', async () => {
    const { isIdentityAlive, processIdentity, procReadings } = await import('../../src/store/proc.js');
    const readings = procReadings();
    const me = processIdentity();
    expect(isIdentityAlive(me, { readings })).toBe(true);
    expect(readings.stats.size).toBe(1);
    expect(isIdentityAlive({ ...me, startTicks: me.startTicks + 1 }, { readings })).toBe(false);
    expect(readings.stats.size).toBe(1);
  });
});
