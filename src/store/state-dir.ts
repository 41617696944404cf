/**
 * The state dir: where it is, what it contains, and the checks that make it safe to trust.
 *
 * Layout (every folder 0700, every file 0600, no symlinks inside):
 * ```
 * <stateDir>/
 *   pods/<uid>.ckpt            one checkpoint per pod (see format.ts)
 *   leases/<uid>@<generation>  lease generations (see lease.ts)
 *   inbox/<uid>@<id>.req       requests for a pod's owner (see inbox.ts)
 *   ended/<uid>.ckpt           the last checkpoint of a pod whose worker was forgotten, kept while
 *                              the runtime still lists the pod (checkpoints.ts; same format)
 *   api-waits/<uid>.json       the waits in the API server of a pod stopped through it (api-waits.ts)
 *   quarantine/                files that failed validation, moved aside for inspection
 *   reports/drain-<time>-<pid>.json
 *                              the data of the last drains' reports (reports.ts; made at the first)
 *   pods/.tmp/, leases/.tmp/, inbox/.tmp/, ended/.tmp/
 *                              writes in preparation (files.ts), swept when their writer is gone
 * ```
 *
 * Invariants:
 * - The state dir itself may be reached through a symlink (an operator's choice, e.g. onto a data
 *   disk); it is resolved once. Everything *inside* it must be a plain folder or file.
 * - The state dir and its folders must be owned by the current user and not writable by group or
 *   others; otherwise opening fails with one line naming the path and the fix. A missing state dir
 *   (and missing folders) is created 0700.
 * - A pod UID maps to a file name reversibly; no UID can escape its folder.
 */
import { lstatSync, realpathSync, type Stats } from 'node:fs';
import * as fsp from '../lib/fs-async.js';
import { dirname, join, resolve } from 'node:path';
import { DIR_MODE, temporaryFolderOf } from './files.js';
import { StoreError, errnoOf } from './errors.js';

export interface StateLayout {
  root: string;
  pods: string;
  leases: string;
  inbox: string;
  /** Last checkpoints of forgotten workers (how their pods ended), kept while the runtime lists them. */
  ended: string;
  quarantine: string;
}

/**
 * A record's file in one of a layout's folders: the two joined as they stand. The folders are
 * normalised once (layoutOf) and a record's name is one segment, so path.join's normalising pass,
 * paid on every read, would change nothing.
 */
export function fileIn(folder: string, name: string): string {
  return `${folder}/${name}`;
}

/** Where each part of a state dir lives (pure: nothing is created or read). */
export function layoutOf(root: string): StateLayout {
  return {
    root,
    pods: join(root, 'pods'),
    leases: join(root, 'leases'),
    inbox: join(root, 'inbox'),
    ended: join(root, 'ended'),
    quarantine: join(root, 'quarantine'),
  };
}

function octal(mode: number): string {
  return `0${(mode & 0o777).toString(8)}`;
}

/** The one-line StoreError when `stat` is not of a folder we own that no one else can write. */
function folderProblem(path: string, stat: Stats, isRoot: boolean): StoreError | undefined {
  if (stat.isSymbolicLink()) {
    return new StoreError('ESYMLINK', path, `refusing to use ${path}: it is a symlink inside the state dir; remove it`);
  }
  if (!stat.isDirectory()) {
    return new StoreError('EPERMS', path, `${isRoot ? 'state dir' : 'state folder'} ${path} is not a directory; ${isRoot ? 'choose another with --state-dir or PODCTL_STATE_DIR' : 'move it aside'}`);
  }
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) {
    return new StoreError('EPERMS', path, `${isRoot ? 'state dir' : 'state folder'} ${path} is owned by uid ${stat.uid}, not by the current user (uid ${uid}); run: chown ${uid} ${path}`);
  }
  if ((stat.mode & 0o022) !== 0) {
    return new StoreError('EPERMS', path, `${isRoot ? 'state dir' : 'state folder'} ${path} is writable by group or others (mode ${octal(stat.mode)}); run: chmod 0700 ${path}`);
  }
  return undefined;
}

/** Throws a one-line StoreError unless `path` is a folder we own that no one else can write. */
async function checkFolder(path: string, isRoot: boolean): Promise<void> {
  const problem = folderProblem(path, await fsp.lstat(path), isRoot);
  if (problem) throw problem;
}

/** The folders of a layout that openStateDir creates and checks, the root first. */
function foldersOf(layout: StateLayout): string[] {
  const written = [layout.pods, layout.leases, layout.inbox, layout.ended];
  return [layout.root, ...written, layout.quarantine, ...written.map(temporaryFolderOf)];
}

/**
 * The state dir as every command but the first finds it — each folder there, ours and closed to
 * others — checked with one direct system call per folder; undefined when anything is missing or
 * wrong (openStateDir's path then creates what is missing and reports what is wrong, as before).
 * Direct calls because the checks are on every command's start-up path, beside the runtime's first
 * answer: a thread-pool round trip per step made the state dir the last part of the open to finish.
 */
function soundLayout(requested: string): StateLayout | undefined {
  try {
    // the root may be an operator's symlink: its target is what is checked, as below; resolved
    // in one system call (realpath(3)), not an lstat per component of the path
    const layout = layoutOf(realpathSync.native(requested));
    return foldersOf(layout).every((folder, i) => folderProblem(folder, lstatSync(folder), i === 0) === undefined) ? layout : undefined;
  } catch {
    return undefined;
  }
}

/**
 * mkdir, then (for the root) its missing parents one level at a time, each tried at most twice:
 * the work is bounded by the path's depth. (Node's `recursive: true` retries a parent that exists
 * for ever when the file system answers ENOENT for a name it will never create, as /proc does.)
 */
async function makeFolder(path: string, withParents: boolean): Promise<void> {
  try {
    await fsp.mkdir(path, { mode: DIR_MODE });
    return;
  } catch (error) {
    const code = errnoOf(error);
    if (code === 'EEXIST') return;
    const parent = dirname(path);
    if (code !== 'ENOENT' || !withParents || parent === path) throw error;
    await makeFolder(parent, true);
  }
  // The parent exists now: this second answer is final.
  try {
    await fsp.mkdir(path, { mode: DIR_MODE });
  } catch (error) {
    if (errnoOf(error) !== 'EEXIST') throw error;
  }
}

/** The one line for a state dir (or folder) that cannot be created: the path, why, and the flag. */
function cannotCreate(path: string, isRoot: boolean, error: unknown): StoreError {
  const code = errnoOf(error) ?? 'EIO';
  const what = isRoot ? 'state dir' : 'state folder';
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new StoreError('ENOSPC', path, `no space left on device creating ${what} ${path}`, { cause: error });
  }
  const why =
    code === 'EACCES' || code === 'EPERM'
      ? 'permission denied'
      : code === 'EROFS'
        ? 'read-only file system'
        : code === 'ENOTDIR'
          ? 'a part of the path is not a directory'
          : code === 'ENOENT'
            ? 'its file system does not allow creating it'
            : error instanceof Error
              ? error.message
              : String(error);
  const storeCode = code === 'EACCES' || code === 'EPERM' || code === 'EROFS' || code === 'ENOTDIR' || code === 'ENOENT' ? 'EPERMS' : 'EIO';
  return new StoreError(storeCode, path, `cannot create ${what} ${path}: ${why} (${code}); choose another with --state-dir or PODCTL_STATE_DIR`, { cause: error });
}

/** Creates (if needed) and checks one folder inside an opened state dir (0700, ours, not a symlink). */
export async function ensureStateFolder(path: string): Promise<void> {
  await ensureFolder(path, false);
}

async function ensureFolder(path: string, isRoot: boolean): Promise<void> {
  try {
    await makeFolder(path, isRoot);
  } catch (error) {
    throw cannotCreate(path, isRoot, error);
  }
  await checkFolder(path, isRoot);
}

/**
 * Creates (if needed) and checks the state dir and its folders; returns the layout with the root
 * resolved through any symlink the operator put at the state dir's own path.
 */
export async function openStateDir(stateDir: string): Promise<StateLayout> {
  const requested = resolve(stateDir);
  const sound = soundLayout(requested);
  if (sound) return sound;
  await ensureFolder(requested, true).catch(async (error: unknown) => {
    // The root itself may be an operator's symlink: accept it if its target passes the checks.
    if (error instanceof StoreError && error.code === 'ESYMLINK') {
      await checkFolder(await fsp.realpath(requested), true);
      return;
    }
    throw error;
  });
  const root = await fsp.realpath(requested);
  const layout = layoutOf(root);
  // The folders are independent: created and checked side by side; the failure reported is the
  // first in this order, as when they were checked one after the other.
  const written = [layout.pods, layout.leases, layout.inbox, layout.ended];
  await ensureFolders([...written, layout.quarantine]);
  // each written folder's temporary folder, checked the same way (a write is prepared there)
  await ensureFolders(written.map(temporaryFolderOf));
  return layout;
}

/** Creates and checks folders side by side; throws the failure of the first in their order. */
async function ensureFolders(folders: readonly string[]): Promise<void> {
  const checked = await Promise.allSettled(folders.map((folder) => ensureFolder(folder, false)));
  const failed = checked.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

const SAFE_CHAR = /[A-Za-z0-9_-]/;
const ALL_SAFE = /^[A-Za-z0-9_-]+$/;

/**
 * A UID as a file-name stem: unsafe characters (and '.', '@', '%') become %XX, so the mapping is
 * reversible and no UID can contain a separator, start a hidden name, or climb out of its folder.
 */
export function encodeUid(uid: string): string {
  if (uid.length === 0 || uid.length > 200) {
    throw new StoreError('EBADUID', uid, `pod UID ${JSON.stringify(uid.slice(0, 40))} is empty or longer than 200 characters`);
  }
  // the usual UID (a UUID) is all safe characters: itself
  if (ALL_SAFE.test(uid)) return uid;
  let out = '';
  for (const ch of uid) {
    if (SAFE_CHAR.test(ch)) out += ch;
    else for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function decodeUid(stem: string): string | undefined {
  // a name with no escape is the UID itself (every listing of a folder decodes each name)
  if (!stem.includes('%')) return stem;
  try {
    return decodeURIComponent(stem);
  } catch {
    return undefined;
  }
}
