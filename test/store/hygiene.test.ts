/**
 * Hostile and odd files in the state dir (issue 16, point 5): size caps on what is read, readers
 * that report instead of moving files, hand-off logs created exclusively and never through a
 * symlink, and the housekeeping that keeps the state dir from growing (dead owners' leases of pods
 * without a checkpoint, inbox files no owner will take, idle hand-off logs).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lstat, readdir, readFile, symlink, truncate, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openStore, type Store } from '../../src/store/index.js';
import { MAX_RECORD_BYTES } from '../../src/store/files.js';
import { handOff, sweepHandOffLogs } from '../../src/session/hand-off.js';
import { checkpointFor, tempDir } from './support/fixtures.js';
import { until } from '../support/wait.js';
import { isProcessAlive } from '../../src/store/proc.js';

let dir: { path: string; cleanup: () => Promise<void> };
let reports: string[];
let store: Store;
let root: string;
const HOUR = 60 * 60 * 1000;

beforeEach(async () => {
  dir = await tempDir();
  reports = [];
  root = join(dir.path, 'state');
  store = await openStore({ stateDir: root, report: (m) => reports.push(m) });
});
afterEach(async () => {
  await dir.cleanup();
});

const old = async (path: string, ageMs: number): Promise<void> => {
  const t = new Date(Date.now() - ageMs);
  await utimes(path, t, t);
};

describe('size caps', () => {
  it('a checkpoint over the cap is quarantined unread, with its size and the cap in one line', async () => {
    await store.checkpoints.write(checkpointFor('big-1'));
    const path = store.checkpoints.pathOf('big-1');
    await truncate(path, MAX_RECORD_BYTES + 1);
    expect(await store.checkpoints.read('big-1')).toBeUndefined();
    expect(reports).toHaveLength(1);
    expect(reports[0]).toContain(`is ${MAX_RECORD_BYTES + 1} bytes, over the ${MAX_RECORD_BYTES}-byte cap for a checkpoint`);
    await expect(lstat(path)).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await readdir(store.layout.quarantine)).some((n) => n.startsWith('big-1'))).toBe(true);
  });

  it('an inbox request over the cap is quarantined unread', async () => {
    await store.inbox.post({ uid: 'req-1', kind: 'kill' });
    const [name] = (await readdir(store.layout.inbox)).filter((n) => n.endsWith('.req'));
    await truncate(join(store.layout.inbox, name!), MAX_RECORD_BYTES + 10);
    expect(await store.inbox.pending('req-1')).toEqual([]);
    expect(reports.join('\n')).toContain('over the 2097152-byte cap for a request');
  });
});

describe('readers do not move files', () => {
  it('a read-only store reports a bad checkpoint once and leaves it; the next writer quarantines it', async () => {
    await store.checkpoints.write(checkpointFor('bad-1'));
    const path = store.checkpoints.pathOf('bad-1');
    await writeFile(path, 'not a checkpoint');
    const readerReports: string[] = [];
    const reader = await openStore({ stateDir: root, report: (m) => readerReports.push(m), readOnly: true });
    expect(await reader.checkpoints.read('bad-1')).toBeUndefined();
    expect(await reader.checkpoints.read('bad-1')).toBeUndefined();
    expect(readerReports).toHaveLength(1);
    expect(readerReports[0]).toMatch(/left in place \(read-only: the next podctl that writes moves it to quarantine\)/);
    expect(await readFile(path, 'utf8')).toBe('not a checkpoint');
    expect(await store.checkpoints.read('bad-1')).toBeUndefined();
    await expect(lstat(path)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('hand-off logs', () => {
  it('each is a new file (unpredictable name, O_EXCL), never opened through a symlink; idle ones are swept', async () => {
    const a = handOff({ uids: ['u'], stateDir: root, afterPid: process.pid, bin: '/nonexistent/podctl-test-bin' });
    const b = handOff({ uids: ['u'], stateDir: root, afterPid: process.pid, bin: '/nonexistent/podctl-test-bin' });
    expect(a?.log).toMatch(/hand-off-\d+-[0-9a-f]{8}\.log$/);
    expect(a?.log).not.toBe(b?.log);
    // a symlink planted where a log would go is neither followed nor swept
    const victim = join(dir.path, 'victim');
    await writeFile(victim, 'keep me');
    const planted = join(root, 'hand-off-1-deadbeef.log');
    await symlink(victim, planted);
    // the children (a bin that does not exist) write their failure to their logs: aged only once
    // both are gone, else a late write renews the log's mtime
    await until('both hand-off children to exit', () => [a!, b!].every(({ pid }) => !isProcessAlive(pid)), 30_000);
    await old(a!.log, 25 * HOUR);
    expect(await sweepHandOffLogs(root, 24 * HOUR)).toBe(1);
    await expect(lstat(a!.log)).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await lstat(b!.log)).isFile()).toBe(true);
    expect((await lstat(planted)).isSymbolicLink()).toBe(true);
    expect(await readFile(victim, 'utf8')).toBe('keep me');
  });
});

describe('housekeeping', () => {
  it('inbox: files that are not requests and requests for unknown pods, an hour old, are removed', async () => {
    await store.inbox.post({ uid: 'known-1', kind: 'kill' });
    await store.inbox.post({ uid: 'gone-1', kind: 'kill' });
    await writeFile(join(store.layout.inbox, 'junk.txt'), 'x');
    await writeFile(join(store.layout.inbox, 'fresh-junk.txt'), 'x');
    for (const name of await readdir(store.layout.inbox)) if (name !== 'fresh-junk.txt') await old(join(store.layout.inbox, name), 2 * HOUR);
    const swept = await store.inbox.sweepUnknown(HOUR, (uid) => uid === 'known-1');
    expect(swept).toBe(2);
    const left = await readdir(store.layout.inbox);
    expect(left).toContain('fresh-junk.txt');
    expect(left.filter((n) => n.endsWith('.req'))).toHaveLength(1);
    expect(await store.inbox.pending('known-1')).toHaveLength(1);
  });

  it("leases: a dead owner's lease of a pod without a checkpoint, untouched for an hour, is swept; a fresh one is not", async () => {
    const dead = await openStore({ stateDir: root, leases: { isAlive: () => false } });
    await store.leases.tryAcquire('live-1');
    const crashed = await openStore({ stateDir: root });
    await crashed.leases.tryAcquire('crashed-1');
    crashed.leases.abandonAll(); // a crash: no tombstone
    for (const name of await readdir(store.layout.leases)) if (name.startsWith('crashed-1')) await old(join(store.layout.leases, name), 2 * HOUR);
    // as seen by a process for which the crashed owner is dead (and this store's own lease is held)
    expect(await dead.leases.sweepReleased(HOUR, () => false)).toBe(1);
    const left = await readdir(store.layout.leases);
    expect(left.some((n) => n.startsWith('crashed-1'))).toBe(false);
    expect(left.some((n) => n.startsWith('live-1'))).toBe(true);
  });
});
