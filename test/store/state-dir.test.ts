/**
 * Opening a state dir that cannot be used (a path under /proc, a regular file where a folder should
 * be, a read-only place) fails at once with one StoreError line naming the path and --state-dir;
 * it never retries for ever.
 */
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, StoreError } from '../../src/store/index.js';
import { decodeUid, encodeUid } from '../../src/store/state-dir.js';
import { checkpointFor, tempDir } from './support/fixtures.js';

/** A hang shows as a failed assertion naming the path instead of the test's own timeout. */
const HANG_BOUND_MS = 5_000;

async function openFailure(stateDir: string): Promise<StoreError> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`opening ${stateDir} still had no answer after ${HANG_BOUND_MS} ms`)), HANG_BOUND_MS);
  });
  try {
    const outcome = await Promise.race([
      openStore({ stateDir }).then(
        () => undefined,
        (e: unknown) => e,
      ),
      hung,
    ]);
    expect(outcome, `opening ${stateDir} should fail`).toBeInstanceOf(StoreError);
    return outcome as StoreError;
  } finally {
    clearTimeout(timer);
  }
}

function expectOneLineNaming(error: StoreError, path: string): void {
  expect(error.message).not.toContain('\n');
  expect(error.message).toContain(path);
  expect(error.message).toContain('--state-dir');
  expect(error.path).toBe(path);
}

let dir: { path: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(async () => {
  await dir.cleanup();
});

describe.runIf(process.platform === 'linux')('a state dir on a file system that refuses new names', () => {
  it('under /proc: fails at once, naming the path', async () => {
    const path = `/proc/podctl-no-such-dir-${process.pid}`;
    const error = await openFailure(path);
    expect(error.code).toBe('EPERMS');
    expectOneLineNaming(error, path);
    expect(error.message).toContain('(ENOENT)');
  });

  it('several levels below /proc: still bounded by the path depth', async () => {
    const path = `/proc/podctl-${process.pid}/a/b/c`;
    const error = await openFailure(path);
    expectOneLineNaming(error, path);
  });

  it('an existing /proc folder whose sub-folders cannot be created', async () => {
    const error = await openFailure('/proc/self');
    expect(error.code).toBe('EPERMS');
    expect(error.message).toMatch(/^cannot create state folder \/proc\/\d+\/pods: .*--state-dir/);
  });
});

describe('a regular file where a folder should be', () => {
  it('at the state dir itself', async () => {
    const path = join(dir.path, 'file');
    await writeFile(path, 'x');
    const error = await openFailure(path);
    expect(error.code).toBe('EPERMS');
    expect(error.message).toBe(`state dir ${path} is not a directory; choose another with --state-dir or PODCTL_STATE_DIR`);
  });

  it('as a parent of the state dir', async () => {
    const file = join(dir.path, 'file');
    await writeFile(file, 'x');
    const path = join(file, 'state');
    const error = await openFailure(path);
    expect(error.code).toBe('EPERMS');
    expectOneLineNaming(error, path);
    expect(error.message).toContain('(ENOTDIR)');
  });

  it('at a folder inside the state dir', async () => {
    const root = join(dir.path, 'state');
    await mkdir(root, { mode: 0o700 });
    await writeFile(join(root, 'leases'), 'x');
    const error = await openFailure(root);
    expect(error.code).toBe('EPERMS');
    expect(error.message).toContain(`state folder ${join(root, 'leases')} is not a directory`);
  });
});

/**
 * Makes `path` (an existing folder) one this process cannot create entries in: a read-only bind
 * mount when running as root (root ignores modes), mode 0500 otherwise. Undefined when neither can
 * be arranged here.
 */
function makeReadOnly(path: string): { release: () => void } | undefined {
  if (process.getuid?.() !== 0) {
    execFileSync('chmod', ['0500', path]);
    return { release: () => execFileSync('chmod', ['0700', path]) };
  }
  try {
    execFileSync('mount', ['--bind', path, path], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  try {
    execFileSync('mount', ['-o', 'remount,bind,ro', path], { stdio: 'ignore' });
  } catch {
    execFileSync('umount', [path], { stdio: 'ignore' });
    return undefined;
  }
  return { release: () => execFileSync('umount', [path], { stdio: 'ignore' }) };
}

describe('a state dir in a place this process cannot write', () => {
  it('fails at once with the reason, the path and --state-dir', async (context) => {
    const parent = join(dir.path, 'ro');
    await mkdir(parent, { mode: 0o700 });
    const ro = makeReadOnly(parent);
    if (!ro) return context.skip('no read-only folder can be arranged here (root without mount rights)');
    try {
      const path = join(parent, 'state', 'deeper');
      const error = await openFailure(path);
      expect(error.code).toBe('EPERMS');
      expectOneLineNaming(error, path);
      expect(error.message).toMatch(/\((EROFS|EACCES)\)/);
    } finally {
      ro.release();
    }
  });

  it('an existing state dir there opens for reading; its first write fails at once naming the path and --state-dir', async (context) => {
    const root = join(dir.path, 'state');
    const store = await openStore({ stateDir: root });
    await store.checkpoints.write(checkpointFor('a-1'));
    // (a mode only binds a non-root user in the folder it is set on; a read-only mount binds everything below)
    const ro = makeReadOnly(process.getuid?.() === 0 ? root : join(root, 'pods'));
    if (!ro) return context.skip('no read-only folder can be arranged here (root without mount rights)');
    try {
      const reader = await openStore({ stateDir: root });
      expect((await reader.checkpoints.read('a-1'))?.uid).toBe('a-1');
      const error = await reader.checkpoints.write(checkpointFor('b-2')).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).code).toBe('EPERMS');
      expect((error as StoreError).message).not.toContain('\n');
      expect((error as StoreError).message).toContain(join(root, 'pods'));
      expect((error as StoreError).message).toContain('--state-dir');
      expect((await reader.checkpoints.read('a-1'))?.uid).toBe('a-1');
    } finally {
      ro.release();
    }
  });

  it('the parents it may create are created 0700', async () => {
    const path = join(dir.path, 'a', 'b', 'state');
    const store = await openStore({ stateDir: path });
    expect(store.layout.root).toBe(path);
    for (const p of [join(dir.path, 'a'), join(dir.path, 'a', 'b'), path]) expect((await stat(p)).mode & 0o777).toBe(0o700);
  });
});

describe('a state dir opened before', () => {
  it('opens again without waiting on the event loop (no thread-pool round trip on the start-up path)', async () => {
    const root = join(dir.path, 'state');
    await openStore({ stateDir: root });
    let turned = false;
    setImmediate(() => (turned = true));
    const store = await openStore({ stateDir: root });
    expect(turned).toBe(false);
    expect(store.layout.root).toBe(root);
  });

  it('a folder opened to others since, or gone, is refused or made again as on the first open', async () => {
    const root = join(dir.path, 'state');
    await openStore({ stateDir: root });
    await rm(join(root, 'inbox'), { recursive: true });
    await openStore({ stateDir: root });
    expect((await stat(join(root, 'inbox', '.tmp'))).isDirectory()).toBe(true);
    await chmod(join(root, 'pods'), 0o777);
    const error = await openFailure(root);
    expect(error.code).toBe('EPERMS');
    expect(error.message).toBe(`state folder ${join(root, 'pods')} is writable by group or others (mode 0777); run: chmod 0700 ${join(root, 'pods')}`);
  });

  it('through an operator’s symlink at the state dir: the target is the root', async () => {
    const target = join(dir.path, 'disk', 'state');
    await openStore({ stateDir: target });
    const link = join(dir.path, 'link');
    await symlink(target, link);
    expect((await openStore({ stateDir: link })).layout.root).toBe(target);
    await chmod(target, 0o770);
    expect((await openFailure(link)).message).toContain(`state dir ${target} is writable by group or others`);
  });
});

describe('file names of pod UIDs', () => {
  it('are the UID itself when every character is safe, and decode back whatever the UID holds', () => {
    expect(encodeUid('0f9d1f0e-1111-2222-3333-444455556666')).toBe('0f9d1f0e-1111-2222-3333-444455556666');
    for (const uid of ['0f9d1f0e-1111-2222-3333-444455556666', 'a/b', '100%', 'ü ✓', '.hidden', 'x%41']) {
      const name = encodeUid(uid);
      expect(name).not.toContain('/');
      expect(name.startsWith('.')).toBe(false); // a follower of the folder skips hidden names
      expect(decodeUid(name)).toBe(uid);
    }
  });

  it('are refused when an escape is malformed', () => {
    expect(decodeUid('abc%4')).toBeUndefined();
    expect(decodeUid('%E2%9C')).toBeUndefined();
  });
});
