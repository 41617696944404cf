import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { watch } from 'node:fs';
import { chmod, chown, lstat, mkdir, readdir, readFile, rm, stat, symlink, truncate, unlink, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { CheckpointStore, openStore, StoreError, nodeFileOps, type FileOps, type Store } from '../../src/store/index.js';
import { encodeCheckpoint } from '../../src/store/format.js';
import { checkpointFor, tempDir, temporariesIn } from './support/fixtures.js';

let dir: { path: string; cleanup: () => Promise<void> };
let reports: string[];
let store: Store;

beforeEach(async () => {
  dir = await tempDir();
  reports = [];
  store = await openStore({ stateDir: join(dir.path, 'state'), report: (m) => reports.push(m) });
});
afterEach(async () => {
  await dir.cleanup();
});

async function writeThree(): Promise<void> {
  for (const uid of ['a-1', 'b-2', 'c-3']) await store.checkpoints.write(checkpointFor(uid));
}

describe('state dir', () => {
  it('is created 0700 with 0700 folders, and checkpoints are 0600', async () => {
    const root = join(dir.path, 'state');
    expect((await stat(root)).mode & 0o777).toBe(0o700);
    for (const folder of ['pods', 'leases', 'inbox', 'quarantine', 'pods/.tmp', 'leases/.tmp', 'inbox/.tmp']) {
      expect((await stat(join(root, folder))).mode & 0o777).toBe(0o700);
    }
    await store.checkpoints.write(checkpointFor('a-1'));
    expect((await stat(store.checkpoints.pathOf('a-1'))).mode & 0o777).toBe(0o600);
  });

  it('refuses a group- or world-writable state dir with one line naming the path and the fix', async () => {
    const root = join(dir.path, 'open');
    await mkdir(root, { mode: 0o700 });
    await chmod(root, 0o777);
    const error = await openStore({ stateDir: root }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe('EPERMS');
    expect((error as StoreError).message).toBe(`state dir ${root} is writable by group or others (mode 0777); run: chmod 0700 ${root}`);
    expect((error as StoreError).message).not.toContain('\n');
  });

  it('refuses a state dir owned by another user', async () => {
    const root = join(dir.path, 'theirs');
    await mkdir(root, { mode: 0o700 });
    await chown(root, 65534, 65534);
    const error = await openStore({ stateDir: root }).catch((e: unknown) => e);
    expect((error as StoreError).code).toBe('EPERMS');
    expect((error as StoreError).message).toContain(`${root} is owned by uid 65534`);
  });

  it('refuses a folder inside the state dir that is a symlink', async () => {
    const root = join(dir.path, 'linked');
    await mkdir(root, { mode: 0o700 });
    await mkdir(join(dir.path, 'elsewhere'), { mode: 0o700 });
    await symlink(join(dir.path, 'elsewhere'), join(root, 'pods'));
    const error = await openStore({ stateDir: root }).catch((e: unknown) => e);
    expect((error as StoreError).code).toBe('ESYMLINK');
    expect((error as StoreError).message).toContain(join(root, 'pods'));
  });

  it('refuses a temporary folder that is a symlink: a write is never prepared outside the state dir', async () => {
    const root = join(dir.path, 'linked-tmp');
    await mkdir(join(root, 'leases'), { recursive: true, mode: 0o700 });
    await mkdir(join(dir.path, 'elsewhere'), { mode: 0o700 });
    await symlink(join(dir.path, 'elsewhere'), join(root, 'leases', '.tmp'));
    const error = await openStore({ stateDir: root }).catch((e: unknown) => e);
    expect((error as StoreError).code).toBe('ESYMLINK');
    expect((error as StoreError).message).toBe(`refusing to use ${join(root, 'leases', '.tmp')}: it is a symlink inside the state dir; remove it`);
  });

  it('accepts the state dir itself being a symlink to a safe folder', async () => {
    await mkdir(join(dir.path, 'target'), { mode: 0o700 });
    await symlink(join(dir.path, 'target'), join(dir.path, 'alias'));
    const other = await openStore({ stateDir: join(dir.path, 'alias') });
    expect(other.layout.root).toBe(join(dir.path, 'target'));
  });
});

describe('checkpoint store', () => {
  it('writes, reads back and lists checkpoints; odd UIDs map to safe names', async () => {
    await writeThree();
    const odd = '../etc/passwd uid.with@chars';
    await store.checkpoints.write(checkpointFor(odd));
    expect(store.checkpoints.pathOf(odd).startsWith(store.layout.pods + '/')).toBe(true);
    expect(await store.checkpoints.read('b-2')).toEqual(checkpointFor('b-2'));
    expect((await store.checkpoints.uids()).sort()).toEqual(['a-1', 'b-2', 'c-3', odd].sort());
    expect([...(await store.checkpoints.readAll()).keys()].sort()).toEqual(['a-1', 'b-2', 'c-3', odd].sort());
  });

  it('quarantines a truncated checkpoint, reports it in one line, keeps the other pods', async () => {
    await writeThree();
    const path = store.checkpoints.pathOf('b-2');
    await truncate(path, 50);
    const all = await store.checkpoints.readAll();
    expect([...all.keys()].sort()).toEqual(['a-1', 'c-3']);
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatch(new RegExp(`^checkpoint ${path} truncated .*; moved to ${store.layout.quarantine}/`));
    await expect(lstat(path)).rejects.toThrow(/ENOENT/);
    expect(await readdir(store.layout.quarantine)).toHaveLength(1);
  });

  it('quarantines a bit-flipped checkpoint (checksum mismatch); a pod on its way out stays terminating', async () => {
    await writeThree();
    const path = store.checkpoints.pathOf('a-1');
    const bytes = await readFile(path);
    bytes[bytes.length - 10] = bytes[bytes.length - 10]! ^ 0x04;
    await writeFile(path, bytes);
    const salvaged = await store.checkpoints.read('a-1');
    expect(reports[0]).toContain('checksum mismatch');
    expect(reports[0]).toContain('kept terminating with grace 12s');
    expect(salvaged?.status.terminatingAt).toBe(checkpointFor('a-1').status.terminatingAt);
    expect(salvaged?.status.gracePeriod).toBe(12);
    // the bad file is in quarantine, the salvaged state in its place
    expect((await readdir(store.layout.quarantine)).some((n) => n.startsWith('a-1'))).toBe(true);
    expect((await store.checkpoints.read('a-1'))?.history.at(-1)?.type).toBe('salvaged');
    expect(await store.checkpoints.read('c-3')).toEqual(checkpointFor('c-3'));
  });

  it('a forged grace (a year and a day) or a time in year 3000 keeps the pod terminating at its lower bound, never a longer grace', async () => {
    const path = store.checkpoints.pathOf('f-1');
    const forged = checkpointFor('f-1', { graceDeadline: 32_503_680_000_000 });
    forged.status.gracePeriod = 31_622_400;
    forged.status.activeUpdate!.killPodOptions = { gracePeriodSecondsOverride: 31_622_400 };
    // written past the guards, as a forger would (valid checksum, out-of-range values)
    const header = JSON.stringify({ format: 'podctl/pod-checkpoint', version: 1, length: 0, sha256: '' });
    const payload = Buffer.from(JSON.stringify({ ...forged, status: { ...forged.status, uid: 'f-1' } }), 'utf8');
    const { createHash } = await import('node:crypto');
    const realHeader = JSON.stringify({ ...JSON.parse(header), length: payload.length, sha256: createHash('sha256').update(payload).digest('hex') });
    await writeFile(path, Buffer.concat([Buffer.from(`${realHeader}\n`), payload]), { mode: 0o600 });
    const salvaged = await store.checkpoints.read('f-1');
    expect(salvaged?.status.gracePeriod).toBe(2);
    expect(salvaged?.status.activeUpdate?.killPodOptions?.gracePeriodSecondsOverride).toBe(2);
    expect(salvaged?.status.terminatingAt).toBe(forged.status.terminatingAt);
    // the deadline is the salvaged start + the salvaged grace, not year 3000
    expect(salvaged?.graceDeadline).toBe(forged.status.terminatingAt! + 2_000);
    expect(reports.join('\n')).toMatch(/f-1.*kept terminating with grace 2s/);
  });

  it('a bad checkpoint of a pod not on its way out is only quarantined (nothing to keep)', async () => {
    const path = store.checkpoints.pathOf('s-1');
    const running = checkpointFor('s-1');
    delete running.status.terminatingAt;
    running.status.startedTerminating = false;
    const bytes = encodeCheckpoint(running);
    bytes[bytes.length - 5] = bytes[bytes.length - 5]! ^ 0x02;
    await writeFile(path, bytes, { mode: 0o600 });
    expect(await store.checkpoints.read('s-1')).toBeUndefined();
  });

  it('quarantines an unknown-version checkpoint', async () => {
    const path = store.checkpoints.pathOf('a-1');
    const text = encodeCheckpoint(checkpointFor('a-1')).toString('utf8').replace('"version":1', '"version":7');
    await writeFile(path, text, { mode: 0o600 });
    expect(await store.checkpoints.read('a-1')).toBeUndefined();
    expect(reports[0]).toContain('unsupported version 7');
  });

  it('never follows a symlinked checkpoint: the link is quarantined, its target untouched', async () => {
    await writeThree();
    const outside = join(dir.path, 'outside.ckpt');
    await writeFile(outside, encodeCheckpoint(checkpointFor('a-1')));
    const path = store.checkpoints.pathOf('a-1');
    await unlink(path);
    await symlink(outside, path);
    expect(await store.checkpoints.read('a-1')).toBeUndefined();
    expect(reports[0]).toContain('is a symlink');
    const moved = await readdir(store.layout.quarantine);
    expect(moved).toHaveLength(1);
    expect((await lstat(join(store.layout.quarantine, moved[0]!))).isSymbolicLink()).toBe(true);
    expect((await readFile(outside)).length).toBeGreaterThan(0);
    expect(await store.checkpoints.read('b-2')).toEqual(checkpointFor('b-2'));
  });

  it('does not quarantine a good checkpoint that replaced a bad one after it was read', async () => {
    await store.checkpoints.write(checkpointFor('a-1'));
    const path = store.checkpoints.pathOf('a-1');
    await truncate(path, 10);
    let raced = 0;
    const reader = new CheckpointStore({
      layout: store.layout,
      report: (m) => reports.push(m),
      // The owner lands a good checkpoint after the reader judged the old file bad.
      beforeQuarantine: async () => {
        raced += 1;
        await store.checkpoints.write(checkpointFor('a-1', { writerPid: 7 }));
      },
    });
    expect(await reader.read('a-1')).toBeUndefined();
    expect(raced).toBe(1);
    expect(reports).toEqual([]);
    expect(await readdir(store.layout.quarantine)).toEqual([]);
    expect(await store.checkpoints.read('a-1')).toMatchObject({ writerPid: 7 });
  });

  it('quarantines the bad file when no writer raced', async () => {
    await store.checkpoints.write(checkpointFor('a-1'));
    await truncate(store.checkpoints.pathOf('a-1'), 10);
    const reader = new CheckpointStore({ layout: store.layout, report: (m) => reports.push(m), beforeQuarantine: async () => {} });
    expect(await reader.read('a-1')).toBeUndefined();
    expect(reports).toHaveLength(1);
    expect(await readdir(store.layout.quarantine)).toHaveLength(1);
  });

  it('disk full: the write fails with one clear line, no temporary is left, the old checkpoint is intact', async () => {
    await writeThree();
    const before = await readFile(store.checkpoints.pathOf('b-2'));
    const full: FileOps = {
      ...nodeFileOps,
      async write(handle, data) {
        await handle.write(data, 0, Math.floor(data.length / 2), 0);
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      },
    };
    const fullStore = await openStore({ stateDir: store.layout.root, ops: full });
    const error = await fullStore.checkpoints.write(checkpointFor('b-2', { writerPid: 99 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe('ENOSPC');
    expect((error as StoreError).message).toBe(`no space left on device writing checkpoint ${store.checkpoints.pathOf('b-2')}; the previous version is kept — free space and retry`);
    expect(await readFile(store.checkpoints.pathOf('b-2'))).toEqual(before);
    expect(await temporariesIn(store.layout.pods)).toEqual([]);
    expect([...(await store.checkpoints.readAll()).keys()].sort()).toEqual(['a-1', 'b-2', 'c-3']);
  });

  it('readSome reads only the wanted pods that have a file, and quarantines a damaged one', async () => {
    await writeThree();
    await truncate(store.checkpoints.pathOf('c-3'), 10);
    const some = await store.checkpoints.readSome(['a-1', 'c-3', 'new-pod']);
    expect([...some.keys()]).toEqual(['a-1']);
    expect(some.get('a-1')?.uid).toBe('a-1');
    expect(await readdir(store.layout.quarantine)).toHaveLength(1);
    expect(reports.some((r) => r.includes('c-3'))).toBe(true);
  });

  it('a checkpoint read again is served from its last decoding only while its file is unchanged', async () => {
    await store.checkpoints.write(checkpointFor('a-1', { name: 'first' }));
    const first = await store.checkpoints.read('a-1');
    expect(first?.name).toBe('first');
    // what a caller does with its copy does not reach the next reader
    first!.name = 'mutated';
    first!.history.push({ at: 1, type: 'x', detail: 'y', pid: 1 });
    const again = await store.checkpoints.read('a-1');
    expect(again?.name).toBe('first');
    expect(again?.history).toHaveLength(2);
    // rewritten (a new file renamed over it): read anew
    await store.checkpoints.write(checkpointFor('a-1', { name: 'second' }));
    expect((await store.checkpoints.read('a-1'))?.name).toBe('second');
    // changed in place to a damaged file of the same size: noticed, quarantined
    const path = store.checkpoints.pathOf('a-1');
    const bytes = await readFile(path);
    await writeFile(path, Buffer.alloc(bytes.length, 0x20));
    expect(await store.checkpoints.read('a-1')).toBeUndefined();
    expect(await readdir(store.layout.quarantine)).toHaveLength(1);
    // removed: gone
    await store.checkpoints.write(checkpointFor('a-1', { name: 'third' }));
    expect((await store.checkpoints.read('a-1'))?.name).toBe('third');
    await store.checkpoints.remove('a-1');
    expect(await store.checkpoints.read('a-1')).toBeUndefined();
  });

  it('disk full on fsync or rename also keeps the old checkpoint', async () => {
    await writeThree();
    for (const step of ['fsync', 'rename'] as const) {
      const before = await readFile(store.checkpoints.pathOf('c-3'));
      const failing: FileOps = {
        ...nodeFileOps,
        [step]: async () => {
          throw Object.assign(new Error('no space'), { code: 'ENOSPC' });
        },
      };
      const s = await openStore({ stateDir: store.layout.root, ops: failing });
      await expect(s.checkpoints.write(checkpointFor('c-3', { writerPid: 5 }))).rejects.toMatchObject({ code: 'ENOSPC' });
      expect(await readFile(store.checkpoints.pathOf('c-3'))).toEqual(before);
    }
  });

  it('sweeps temporaries left by dead writers when a store opens', async () => {
    await writeThree();
    const dead = join(store.layout.pods, '.a-1.ckpt.tmp-999999-abcdef');
    const live = join(store.layout.pods, `.a-1.ckpt.tmp-${process.pid}-abcdef`);
    const deadInside = join(store.layout.pods, '.tmp', '.b-2.ckpt.tmp-999999-abcdef');
    const liveInside = join(store.layout.pods, '.tmp', `.b-2.ckpt.tmp-${process.pid}-abcdef`);
    for (const path of [dead, live, deadInside, liveInside]) await writeFile(path, 'half');
    await openStore({ stateDir: store.layout.root });
    // a dead writer's, in the temporary folder and beside the files (an earlier version's), are gone
    expect((await temporariesIn(store.layout.pods)).sort()).toEqual([`.a-1.ckpt.tmp-${process.pid}-abcdef`, `.tmp/.b-2.ckpt.tmp-${process.pid}-abcdef`]);
  });

  it("each write shows in its folder's change events once, under its final name", async () => {
    const events: string[] = [];
    const watchers = [store.layout.pods, store.layout.leases, store.layout.inbox].map((folder) => watch(folder, (event, name) => events.push(`${basename(folder)} ${event} ${name}`)));
    try {
      await store.checkpoints.write(checkpointFor('a-1'));
      await store.checkpoints.write(checkpointFor('a-1', { name: 'again' }));
      expect(await store.leases.tryAcquire('a-1')).toMatchObject({ acquired: true });
      await store.inbox.post({ uid: 'a-1', kind: 'kill' });
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      for (const w of watchers) w.close();
    }
    const [request] = (await readdir(store.layout.inbox)).filter((n) => n.endsWith('.req'));
    expect(events).toEqual(['pods rename a-1.ckpt', 'pods rename a-1.ckpt', 'leases rename a-1@1', `inbox rename ${request}`]);
    expect(await temporariesIn(store.layout.pods)).toEqual([]);
  });

  it('a temporary folder removed while the store is open is made again by the next write', async () => {
    await rm(join(store.layout.pods, '.tmp'), { recursive: true });
    await store.checkpoints.write(checkpointFor('a-1'));
    expect((await store.checkpoints.read('a-1'))?.uid).toBe('a-1');
    expect((await stat(join(store.layout.pods, '.tmp'))).mode & 0o777).toBe(0o700);
  });
});

describe('checkpoint store: odd files', () => {
  it('a FIFO under a checkpoint name neither blocks the reader nor survives: it is quarantined', async () => {
    const { execFileSync } = await import('node:child_process');
    await store.checkpoints.write(checkpointFor('b-2'));
    execFileSync('mkfifo', [store.checkpoints.pathOf('a-1')]);
    const all = await store.checkpoints.readAll();
    expect([...all.keys()]).toEqual(['b-2']);
    expect(reports).toHaveLength(1);
    expect(reports[0]).toContain('is not a regular file');
  });
});
