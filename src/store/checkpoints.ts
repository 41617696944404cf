/**
 * The checkpoint store: reads, writes and quarantines the per-pod checkpoint files in `pods/`.
 *
 * Invariants:
 * - Writes are atomic and durable (files.ts); a failed write leaves the previous checkpoint intact
 *   and throws one line (a full disk says so).
 * - Reads never throw on bad content: a truncated, corrupt, unknown-version, misfiled or symlinked
 *   file is moved aside into `quarantine/` and reported in one line through `report`; the caller sees
 *   "no checkpoint" for that pod and every other pod's checkpoint is read as usual.
 * - Quarantine never destroys a good checkpoint written concurrently: the suspect file is renamed
 *   away first, then its identity (inode) is compared with the one judged bad; a different (newer)
 *   file is put back with an exclusive link unless an even newer one already took its place.
 * - Only the pod's lease holder writes its checkpoint (enforced by the session); anyone reads.
 * - A decoded checkpoint is kept (deep-frozen) with its file's identity; a read of an unchanged
 *   file is one lstat. A caller gets its own copy unless it asks for the shared frozen one.
 */
import * as fsp from '../lib/fs-async.js';
import type { Stats } from 'node:fs';
import { join } from 'node:path';
import { decodeCheckpoint, encodeCheckpoint, type PodCheckpoint } from './format.js';
import { salvageTerminating } from './salvage.js';
import { identityOf, listNames, MAX_RECORD_BYTES, nodeFileOps, readFileNoFollow, sameIdentity, syncFolder, writeFileAtomic, type FileIdentity, type FileOps } from './files.js';
import { decodeUid, encodeUid, fileIn, type StateLayout } from './state-dir.js';
import { errnoOf } from './errors.js';

const CHECKPOINT_SUFFIX = '.ckpt';
/** `readSome` of at most this many pods reads each directly instead of listing the folder first. */
const DIRECT_LOOKUPS = 64;

export interface ReadOptions {
  /**
   * The store's own decoded copy, deep-frozen and shared by every such read until the file changes,
   * for readers that only look (the session's merged view, which a watch re-reads on every change):
   * no copy per read. Default: a private copy the caller may change.
   */
  shared?: boolean;
}

/** Freezes a decoded (plain JSON) value and everything in it; returns it. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    const members = value as Record<string, unknown>;
    for (const key in members) {
      const member = members[key];
      if (typeof member === 'object' && member !== null) deepFreeze(member);
    }
  }
  return value;
}

export type { StoreReporter } from './records.js';
import type { StoreReporter } from './records.js';

export interface CheckpointStoreOptions {
  layout: StateLayout;
  report?: StoreReporter;
  ops?: FileOps;
  clock?: () => number;
  /** Test seam: awaited between judging a file bad and moving it aside (to inject a racing writer). */
  beforeQuarantine?: (path: string) => Promise<void>;
  /** A reader's store (status, watch, --dry-run): bad files are reported, not moved. */
  readOnly?: boolean;
  /** A damaged file of a pod on its way out is salvaged terminating (default); false: quarantined only (the `ended/` records). */
  salvage?: boolean;
}

/** What a reader found bad: a regular file (by inode), or a symlink / non-file at the name. */
type JudgedEntry = { kind: 'file'; ino: number } | { kind: 'symlink' } | { kind: 'not-a-file' };

function isSameAsJudged(stat: Stats, judged: JudgedEntry): boolean {
  switch (judged.kind) {
    case 'file':
      return stat.isFile() && stat.ino === judged.ino;
    case 'symlink':
      return stat.isSymbolicLink();
    case 'not-a-file':
      return !stat.isFile() && !stat.isSymbolicLink();
  }
}

/** The file of a pod's checkpoint in a state dir's layout (pure: nothing is read). */
export function checkpointFile(layout: Pick<StateLayout, 'pods'>, uid: string): string {
  return fileIn(layout.pods, `${encodeUid(uid)}${CHECKPOINT_SUFFIX}`);
}

export class CheckpointStore {
  readonly #layout: StateLayout;
  readonly #report: StoreReporter;
  readonly #ops: FileOps;
  readonly #now: () => number;
  readonly #beforeQuarantine: ((path: string) => Promise<void>) | undefined;
  /** Read-only: bad files are reported (once each), never moved. */
  readonly #readOnly: boolean;
  readonly #salvage: boolean;
  readonly #reportedInPlace = new Set<string>();
  /**
   * Checkpoints as last decoded, with the identity of the file they came from: a reader that looks
   * again (watch, on every change of any pod) re-reads only the files that changed since.
   */
  readonly #decoded = new Map<string, { identity: FileIdentity; checkpoint: PodCheckpoint }>();

  constructor(options: CheckpointStoreOptions) {
    this.#beforeQuarantine = options.beforeQuarantine;
    this.#readOnly = options.readOnly === true;
    this.#salvage = options.salvage !== false;
    this.#layout = options.layout;
    this.#report = options.report ?? (() => {});
    this.#ops = options.ops ?? nodeFileOps;
    this.#now = options.clock ?? Date.now;
  }

  get folder(): string {
    return this.#layout.pods;
  }

  pathOf(uid: string): string {
    return checkpointFile(this.#layout, uid);
  }

  /** The UID a checkpoint file name stands for, or undefined for other names. */
  uidOfName(name: string): string | undefined {
    if (!name.endsWith(CHECKPOINT_SUFFIX) || name.startsWith('.')) return undefined;
    return decodeUid(name.slice(0, -CHECKPOINT_SUFFIX.length));
  }

  /** Writes (replaces) a pod's checkpoint atomically; throws a one-line StoreError on failure. */
  async write(checkpoint: PodCheckpoint, options: { syncFolder?: boolean; durable?: boolean } = {}): Promise<void> {
    await writeFileAtomic(this.pathOf(checkpoint.uid), encodeCheckpoint(checkpoint), 'checkpoint', this.#ops, options);
  }

  /** Makes the writes done with `syncFolder: false` durable (one fsync of the folder). */
  async syncFolder(): Promise<void> {
    await syncFolder(this.#layout.pods, 'checkpoint', this.#ops);
  }

  /**
   * Reads one pod's checkpoint; bad files are quarantined and read as undefined. The result is the
   * caller's own copy, or with `shared` the store's deep-frozen one (see ReadOptions).
   */
  async read(uid: string, options?: ReadOptions): Promise<PodCheckpoint | undefined> {
    const path = this.pathOf(uid);
    const own = (checkpoint: PodCheckpoint): PodCheckpoint => (options?.shared === true ? checkpoint : structuredClone(checkpoint));
    const cached = this.#decoded.get(uid);
    if (cached) {
      // Unchanged since it was decoded (same inode, size and times): no read, checksum or parse.
      const identity = await identityOf(path).catch(() => undefined);
      if (identity && sameIdentity(identity, cached.identity)) return own(cached.checkpoint);
      this.#decoded.delete(uid);
    }
    const outcome = await readFileNoFollow(path, MAX_RECORD_BYTES);
    switch (outcome.kind) {
      case 'missing':
        return undefined;
      case 'too-large':
        await this.#quarantine(path, { kind: 'file', ino: outcome.ino }, `is ${outcome.size} bytes, over the ${MAX_RECORD_BYTES}-byte cap for a checkpoint`);
        return undefined;
      case 'symlink':
        await this.#quarantine(path, { kind: 'symlink' }, 'is a symlink');
        return undefined;
      case 'not-a-file':
        await this.#quarantine(path, { kind: 'not-a-file' }, 'is not a regular file');
        return undefined;
      case 'ok': {
        const decoded = decodeCheckpoint(outcome.data, uid);
        if (decoded.kind === 'ok') {
          const checkpoint = deepFreeze(decoded.checkpoint);
          this.#decoded.set(uid, { identity: outcome.identity, checkpoint });
          return own(checkpoint);
        }
        // a pod on its way out stays on its way out (salvage.ts): never resurrected by a bad file
        const salvaged = this.#salvage ? salvageTerminating(outcome.data, uid, this.#now(), process.pid, decoded.reason) : undefined;
        if (salvaged === undefined) {
          await this.#quarantine(path, { kind: 'file', ino: outcome.ino }, decoded.reason);
          return undefined;
        }
        const kept = `kept terminating with grace ${salvaged.status.gracePeriod}s from what could be read`;
        const moved = await this.#quarantine(path, { kind: 'file', ino: outcome.ino }, `${decoded.reason}; ${kept}`);
        // a reader only reports; a writer that moved the bad file puts the salvaged state in its place
        if (moved) await this.write(salvaged).catch((error: unknown) => this.#report(`checkpoint ${path}: the salvaged state could not be written: ${(error as Error).message}`));
        return salvaged;
      }
    }
  }

  /** UIDs that have a checkpoint file (not validated). */
  async uids(): Promise<string[]> {
    const out: string[] = [];
    for (const name of await listNames(this.#layout.pods)) {
      const uid = this.uidOfName(name);
      if (uid !== undefined) out.push(uid);
    }
    return out;
  }

  /**
   * The valid checkpoints among `uids`: one listing of the folder, then a read of each that has a
   * file (pods new to the store cost no lookup each). Bad files are quarantined and skipped.
   */
  async readSome(uids: Iterable<string>, options?: ReadOptions): Promise<Map<string, PodCheckpoint>> {
    const wanted = [...uids];
    // a few are looked up directly (a missing one costs one failed open, less than listing the folder)
    if (wanted.length <= DIRECT_LOOKUPS) return this.#readEach(wanted, options);
    const present = new Set(await this.uids());
    this.#forgetAbsent(present);
    return this.#readEach(
      wanted.filter((uid) => present.has(uid)),
      options,
    );
  }

  /** Every valid checkpoint; bad files are quarantined on the way and skipped. */
  async readAll(options?: ReadOptions): Promise<Map<string, PodCheckpoint>> {
    const uids = await this.uids();
    this.#forgetAbsent(new Set(uids));
    return this.#readEach(uids, options);
  }

  /** Reads one after another: each read is synchronous underneath (files.ts), one file open at a time. */
  async #readEach(uids: readonly string[], options: ReadOptions | undefined): Promise<Map<string, PodCheckpoint>> {
    const out = new Map<string, PodCheckpoint>();
    for (const uid of uids) {
      const checkpoint = await this.read(uid, options);
      if (checkpoint) out.set(uid, checkpoint);
    }
    return out;
  }

  #forgetAbsent(present: ReadonlySet<string>): void {
    for (const uid of this.#decoded.keys()) if (!present.has(uid)) this.#decoded.delete(uid);
  }

  /** Removes a pod's checkpoint (the pod was forgotten). Missing is fine. */
  async remove(uid: string): Promise<void> {
    this.#decoded.delete(uid);
    try {
      await this.#ops.unlink(this.pathOf(uid));
    } catch (error) {
      if (errnoOf(error) !== 'ENOENT') throw error;
    }
  }

  /** Moves a bad file aside; `judged` identifies what was found bad (see the module invariants). */
  /** Resolves true when this call moved the bad file aside (false: read-only, or someone else did or replaced it). */
  async #quarantine(path: string, judged: JudgedEntry, reason: string): Promise<boolean> {
    if (this.#readOnly) {
      // a reader reports; the next podctl that writes moves the file aside
      if (!this.#reportedInPlace.has(path)) this.#report(`checkpoint ${path} ${reason}; left in place (read-only: the next podctl that writes moves it to quarantine)`);
      this.#reportedInPlace.add(path);
      return false;
    }
    const name = path.slice(path.lastIndexOf('/') + 1);
    const target = join(this.#layout.quarantine, `${name}.${this.#now()}-${process.pid}`);
    await this.#beforeQuarantine?.(path);
    try {
      await fsp.rename(path, target);
    } catch (error) {
      if (errnoOf(error) === 'ENOENT') return false; // another reader moved it already
      this.#report(`checkpoint ${path} ${reason}; could not move it to quarantine: ${(error as Error).message}`);
      return false;
    }
    {
      const moved = await fsp.lstat(target);
      if (!isSameAsJudged(moved, judged)) {
        // A writer replaced the bad file between our read and the rename: put the good one back
        // unless something newer is already there.
        try {
          await fsp.link(target, path);
        } catch {
          // A newer checkpoint took its place; ours is superseded.
        }
        await fsp.unlink(target).catch(() => {});
        return false;
      }
    }
    this.#report(`checkpoint ${path} ${reason}; moved to ${target}`);
    return true;
  }
}
