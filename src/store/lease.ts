/**
 * Per-pod leases: which process drives a pod's worker. Exactly one live holder per pod.
 *
 * Algorithm (generation files; no advisory locks, no clocks in the decision):
 * - A pod's lease is a sequence of immutable files `leases/<uid>@<generation>`; the *current* lease
 *   is the one with the highest generation. Each file holds the holder's identity: PID, kernel
 *   start time (so a reused PID is not mistaken for the holder) and a per-manager token (so two
 *   sessions inside one process are told apart). The heartbeat is the file's mtime.
 * - To acquire: read the current generation N. If its holder is alive (same PID *and* start time
 *   in the same PID namespace, not a zombie: proc.ts's take-over rule) and it is not a release tombstone, the pod is owned by someone else: stop. Else
 *   create generation N+1 with `link(tmp, name)`, which is atomic and fails if the name exists
 *   (files.ts `createExclusive`): of all processes racing from the same N, exactly one wins, and its
 *   file is complete the instant it is visible. The winner then lists the generations again and
 *   holds the lease only if N+1 is still the highest (a process that read an old N whose later
 *   generations were already swept could re-create a low name; this check makes it lose).
 * - A live holder's generation is never superseded: others only create N+1 after seeing N dead or
 *   released. The highest file is never deleted (only generations below the holder's are swept,
 *   by the holder), so a re-created low name never becomes the highest, and "I created the highest
 *   generation" cannot be true of two processes at once.
 * - To release: create a tombstone generation N+1 marked `released` (close, forget), then remove
 *   N (the only generation below it: see the release). A crash releases nothing; the next process
 *   that touches the pod sees the dead holder and takes over.
 * - Housekeeping (`sweepReleased`, run by sync-known and the agent) deletes the files of pods that
 *   have no checkpoint and whose tombstone is over an hour old, or whose dead owner (a crash, no
 *   tombstone) last touched the lease over an hour ago: the only deletion of a highest generation, safe
 *   because no acquirer races from a generation it read an hour ago.
 *
 * Liveness is a property of the holder process, not of heartbeat age: a live but busy process keeps
 * its pods. The heartbeat is shown to operators (`status`) and refreshed every few seconds.
 *
 * Reading is cheap for followers (watch, the agent): a lease file that is still the one parsed
 * (inode, size, birth time: a heartbeat moves only its times) is not read again, and a read of many
 * leases looks each owner up in /proc once (proc.ts's `ProcReadings`).
 *
 * Why not proper-lockfile: its staleness is an mtime age, so a live but stalled owner
 * loses its lock and a dead owner keeps it for the stale period, and its stale-lock takeover (stat,
 * rmdir, mkdir) lets two processes that both saw the stale lock both end up holding it. Ownership
 * here must follow the owner's life exactly, under 8 racing processes, which the immutable
 * generations above give without any timing assumption.
 */
import * as fsp from '../lib/fs-async.js';
import type { LeaseInfo } from '../domain/session-api.js';
import { createExclusive, identityOf, listNames, MAX_LEASE_BYTES, nodeFileOps, readFileNoFollow, sameWrittenOnce, type FileIdentity, type FileOps } from './files.js';
import { decodeUid, encodeUid, fileIn, type StateLayout } from './state-dir.js';
import { errnoOf } from './errors.js';
import { isIdentityAlive, processIdentity, procReadings, type ProcessIdentity, type ProcReadings } from './proc.js';
import type { StoreReporter } from './checkpoints.js';
import { checkRecord, leaseRecordSchema, type LeaseRecord } from './records.js';

export type { LeaseRecord };

/** The current lease of a pod, as anyone can read it. */
export interface LeaseView {
  uid: string;
  generation: number;
  /** undefined when the lease file could not be read or validated (treated as stale). */
  record?: LeaseRecord;
  heartbeatAt: number;
  /** The holder is running and has not released the lease. */
  alive: boolean;
  released: boolean;
}

export type AcquireResult = { acquired: true; generation: number; previous?: LeaseView } | { acquired: false; owner: LeaseView };

export interface LeaseManagerOptions {
  layout: StateLayout;
  report?: StoreReporter;
  ops?: FileOps;
  clock?: () => number;
  /** Test seam: decides whether a recorded holder is alive (default: /proc check, proc.ts's rule). */
  isAlive?: (record: LeaseRecord, heartbeatAt: number, readings?: ProcReadings) => boolean;
  /** Test seam: the identity written into new leases (default: this process). */
  identity?: ProcessIdentity;
}

const SEPARATOR = '@';
/**
 * Lease files are not fsynced: a lease matters only among live processes, and a power cut ends
 * every holder. A lease file lost in one reads as no lease, a torn one (linked name, data not yet
 * on disk) as unreadable, i.e. stale: either way the next process takes the pod over, as after a
 * crash. Creation stays atomic (link of a complete temporary), which is what exclusivity needs.
 */
const NOT_DURABLE = { durable: false } as const;
const MAX_ACQUIRE_ATTEMPTS = 16;
/** Managers given a token by this process so far (see newToken). */
let tokensIssued = 0;

/**
 * A token no other lease manager has had, in this process or any other: this process's PID, the
 * wall clock (ms) and the monotonic clock (ns) when it was made, and a per-process count. Another
 * process would need the same PID (only in another PID namespace) read at the same nanosecond, an
 * earlier boot also the same millisecond; the count tells apart the managers of one process. Unique
 * rather than secret (lease files are readable by every podctl process): made without node:crypto,
 * whose load a reader of leases never pays and a writer need not.
 */
function newToken(): string {
  tokensIssued += 1;
  return `${process.pid.toString(36)}-${Date.now().toString(36)}-${process.hrtime.bigint().toString(36)}-${tokensIssued.toString(36)}`;
}
/** Lease records kept parsed (see #parsed): a node's worth of pods, twice over. */
const MAX_PARSED_LEASES = 4096;

export function leaseInfoOf(view: LeaseView): LeaseInfo | undefined {
  if (!view.record) return undefined;
  return { pid: view.record.pid, startedAt: view.record.startedAt, heartbeatAt: view.heartbeatAt, alive: view.alive };
}

export class LeaseManager {
  readonly #layout: StateLayout;
  readonly #report: StoreReporter;
  readonly #ops: FileOps;
  readonly #now: () => number;
  readonly #isAlive: (record: LeaseRecord, heartbeatAt: number, readings?: ProcReadings) => boolean;
  /**
   * The last valid record read from each lease file, with the file's identity then: a file that is
   * still the same one (inode, size, birth time; see files.ts's sameWrittenOnce) is not read nor
   * parsed again.
   */
  readonly #parsed = new Map<string, { identity: FileIdentity; record: LeaseRecord }>();
  /** This process's identity, read from /proc when a lease is first written (a reader never needs it). */
  #identity: ProcessIdentity | undefined;
  /** This manager's token, made when it first writes a lease (a reader never needs one). */
  #tokenValue: string | undefined;
  /** uid → generation we hold. */
  readonly #held = new Map<string, number>();
  /** uid → our own lease as anyone would read it (kept in memory: no file read to know it). */
  readonly #heldViews = new Map<string, LeaseView>();
  /** The folder listing in flight, and the one queued behind it (see #listFolder). */
  #listing: Promise<string[]> | undefined;
  #queuedListing: Promise<string[]> | undefined;
  readonly #reportedUnreadable = new Set<string>();

  constructor(options: LeaseManagerOptions) {
    this.#layout = options.layout;
    this.#report = options.report ?? (() => {});
    this.#ops = options.ops ?? nodeFileOps;
    this.#now = options.clock ?? Date.now;
    this.#isAlive = options.isAlive ?? ((r, heartbeatAt, readings) => isIdentityAlive(r, { heartbeatAt, now: this.#now(), ...(readings ? { readings } : {}) }));
    this.#identity = options.identity;
  }

  get identity(): ProcessIdentity {
    return (this.#identity ??= processIdentity());
  }

  holds(uid: string): boolean {
    return this.#held.has(uid);
  }

  /**
   * The lease of a pod this manager holds, without reading the folder: what `inspect` would return
   * while nobody supersedes it (a take-over shows on the next `verify`/heartbeat). Undefined when
   * not held.
   */
  heldView(uid: string): LeaseView | undefined {
    return this.#held.has(uid) ? this.#heldViews.get(uid) : undefined;
  }

  heldUids(): string[] {
    return [...this.#held.keys()];
  }

  /** The lease-file folder (watched by sessions for 'lease-changed'). */
  get folder(): string {
    return this.#layout.leases;
  }

  /** The UID a lease file name belongs to. */
  uidOfName(name: string): string | undefined {
    if (name.startsWith('.')) return undefined;
    const at = name.lastIndexOf(SEPARATOR);
    if (at <= 0) return undefined;
    return decodeUid(name.slice(0, at));
  }

  #pathOf(uid: string, generation: number): string {
    return fileIn(this.#layout.leases, `${encodeUid(uid)}${SEPARATOR}${generation}`);
  }

  /**
   * The folder's names from a readdir that started after this call: the one queued behind the
   * readdir in flight, shared by every caller that arrives meanwhile. Concurrent acquisitions of a
   * node's worth of pods then share a few listings instead of each listing the folder three times,
   * and no caller ever decides on a listing that started before it asked.
   */
  #listFolder(): Promise<string[]> {
    if (!this.#listing) {
      const listing = listNames(this.#layout.leases).finally(() => {
        if (this.#listing === listing) this.#listing = undefined;
      });
      this.#listing = listing;
      return listing;
    }
    this.#queuedListing ??= this.#listing
      .catch(() => undefined)
      .then(() => {
        this.#queuedListing = undefined;
        return this.#listFolder();
      });
    return this.#queuedListing;
  }

  /** Generations present for every UID (one readdir). */
  /** The UIDs that have lease files (one folder listing, no reads). */
  async uids(): Promise<Set<string>> {
    return new Set((await this.#generationsByUid()).keys());
  }

  async #generationsByUid(): Promise<Map<string, number[]>> {
    const out = new Map<string, number[]>();
    for (const name of await this.#listFolder()) {
      if (name.startsWith('.')) continue;
      const at = name.lastIndexOf(SEPARATOR);
      if (at <= 0) continue;
      const generation = Number(name.slice(at + 1));
      const uid = decodeUid(name.slice(0, at));
      if (uid === undefined || !Number.isInteger(generation) || generation <= 0) continue;
      const list = out.get(uid);
      if (list) list.push(generation);
      else out.set(uid, [generation]);
    }
    return out;
  }

  async #generationsOf(uid: string): Promise<number[]> {
    const prefix = `${encodeUid(uid)}${SEPARATOR}`;
    const out: number[] = [];
    for (const name of await this.#listFolder()) {
      if (!name.startsWith(prefix)) continue;
      const generation = Number(name.slice(prefix.length));
      if (Number.isInteger(generation) && generation > 0) out.push(generation);
    }
    return out;
  }

  async #readView(uid: string, generation: number, readings?: ProcReadings): Promise<LeaseView | 'vanished'> {
    const path = this.#pathOf(uid, generation);
    let record: LeaseRecord | undefined;
    let heartbeatAt = 0;
    const known = this.#parsed.get(path);
    const identity = known ? await identityOf(path).catch(() => undefined) : undefined;
    if (known && identity && sameWrittenOnce(identity, known.identity)) {
      // a lease generation is written once (a release is the next generation, a heartbeat only
      // moves the file's mtime): the same file is the same record, with the heartbeat of now
      record = known.record;
      heartbeatAt = identity.mtimeMs;
    } else {
      this.#parsed.delete(path);
      const outcome = await readFileNoFollow(path, MAX_LEASE_BYTES);
      if (outcome.kind === 'missing') return 'vanished';
      if (outcome.kind === 'ok') {
        try {
          const check = checkRecord(leaseRecordSchema, JSON.parse(outcome.data.toString('utf8')));
          if (check.ok && check.value.uid === uid && check.value.generation === generation) record = check.value;
        } catch {
          record = undefined;
        }
        // the heartbeat as of the read (fstat of the same open file)
        heartbeatAt = outcome.identity.mtimeMs;
        if (record) this.#remember(path, outcome.identity, record);
      }
      if (!record && !this.#reportedUnreadable.has(path)) {
        this.#reportedUnreadable.add(path);
        this.#report(`lease ${path} is unreadable (${outcome.kind === 'ok' ? 'invalid content' : outcome.kind}); treating it as stale`);
      }
    }
    const released = record?.released ?? false;
    const alive = record !== undefined && !released && this.#isAlive(record, heartbeatAt, readings);
    return { uid, generation, record: record && { ...record }, heartbeatAt: Math.round(heartbeatAt), alive, released };
  }

  #remember(path: string, identity: FileIdentity, record: LeaseRecord): void {
    // superseded generations are never read again: a full cache starts over rather than grow
    if (this.#parsed.size >= MAX_PARSED_LEASES) this.#parsed.clear();
    this.#parsed.set(path, { identity, record });
  }

  /** The current lease of `uid` (highest generation), or undefined if it never had one. */
  async inspect(uid: string, readings?: ProcReadings): Promise<LeaseView | undefined> {
    for (let attempt = 0; attempt < MAX_ACQUIRE_ATTEMPTS; attempt += 1) {
      const generations = await this.#generationsOf(uid);
      if (generations.length === 0) return undefined;
      const view = await this.#readView(uid, Math.max(...generations), readings);
      if (view !== 'vanished') return view;
    }
    return undefined;
  }

  /**
   * The current leases of `uids` (those that have one), their owners looked up once each. One
   * folder listing, grouped by UID once: picking each UID's generations out of it by a scan made a
   * re-read of a node's worth of pods cost pods × files.
   */
  async inspectSome(uids: readonly string[]): Promise<Map<string, LeaseView>> {
    return this.#inspectListed(uids);
  }

  /** The current lease of every UID that has one. */
  async inspectAll(): Promise<Map<string, LeaseView>> {
    return this.#inspectListed(undefined);
  }

  /** The current leases of `uids` (all listed when undefined), from one folder listing and one set of /proc readings. */
  async #inspectListed(uids: readonly string[] | undefined): Promise<Map<string, LeaseView>> {
    const out = new Map<string, LeaseView>();
    const byUid = await this.#generationsByUid();
    const readings = procReadings();
    const wanted = uids === undefined ? [...byUid.keys()] : uids.filter((uid) => byUid.has(uid));
    // one after another: each read is synchronous underneath (files.ts), one file open at a time
    for (const uid of wanted) {
      const view = await this.#readView(uid, Math.max(...byUid.get(uid)!), readings);
      // superseded meanwhile: look again, as inspect does
      const current = view !== 'vanished' ? view : await this.inspect(uid, readings);
      if (current) out.set(uid, current);
    }
    return out;
  }

  /** A lease is ours only if this manager wrote it: one that has written nothing has no token yet. */
  #isOurs(view: LeaseView): boolean {
    return this.#tokenValue !== undefined && view.record !== undefined && !view.released && view.record.token === this.#tokenValue;
  }

  #hold(uid: string, view: LeaseView): void {
    this.#held.set(uid, view.generation);
    this.#heldViews.set(uid, view);
  }

  #drop(uid: string): void {
    this.#held.delete(uid);
    this.#heldViews.delete(uid);
  }

  #recordFor(uid: string, generation: number, released: boolean): LeaseRecord {
    const me = this.identity;
    const record: LeaseRecord = {
      uid,
      generation,
      pid: me.pid,
      startTicks: me.startTicks,
      startedAt: me.startedAt,
      ...(me.pidNs !== undefined ? { pidNs: me.pidNs } : {}),
      token: (this.#tokenValue ??= newToken()),
      acquiredAt: this.#now(),
      released,
    };
    return record;
  }

  /**
   * Takes the lease of `uid` if it is free, released, or held by a dead process. `previous` (when
   * acquired) is the lease that was superseded: a dead holder's means this is a takeover.
   */
  async tryAcquire(uid: string): Promise<AcquireResult> {
    for (let attempt = 0; attempt < MAX_ACQUIRE_ATTEMPTS; attempt += 1) {
      const current = await this.inspect(uid);
      if (current && this.#isOurs(current)) {
        this.#hold(uid, current);
        return { acquired: true, generation: current.generation };
      }
      if (current && current.alive) return { acquired: false, owner: current };
      const next = (current?.generation ?? 0) + 1;
      const record = this.#recordFor(uid, next, false);
      const created = await createExclusive(this.#pathOf(uid, next), Buffer.from(JSON.stringify(record), 'utf8'), 'lease', this.#ops, NOT_DURABLE);
      if (!created) continue; // someone else won generation `next`: look again
      const generations = await this.#generationsOf(uid);
      const highest = Math.max(...generations);
      if (highest !== next) {
        // We re-created a swept low generation; a higher one rules. Drop ours and look again.
        await this.#unlinkQuietly(this.#pathOf(uid, next));
        continue;
      }
      this.#hold(uid, { uid, generation: next, record, heartbeatAt: record.acquiredAt, alive: true, released: false });
      // Generations below ours are never re-created once ours is the highest: this listing serves.
      await this.#sweepBelow(uid, next, generations);
      return current ? { acquired: true, generation: next, previous: current } : { acquired: true, generation: next };
    }
    const owner = await this.inspect(uid);
    if (owner) return { acquired: false, owner };
    throw new Error(`lease for pod ${uid}: no decision after ${MAX_ACQUIRE_ATTEMPTS} attempts`);
  }

  /**
   * Checks that we still hold `uid` (nobody superseded our generation). A lost lease is dropped
   * from the held set and reported false.
   */
  async verify(uid: string): Promise<boolean> {
    const generation = this.#held.get(uid);
    if (generation === undefined) return false;
    const generations = await this.#generationsOf(uid);
    if (generations.length > 0 && Math.max(...generations) === generation) return true;
    this.#drop(uid);
    this.#report(`lease of pod ${uid} was taken over by another process; this process stops driving it`);
    return false;
  }

  /** Refreshes the heartbeat (mtime) of every held lease; returns the UIDs whose lease was lost. */
  async heartbeat(): Promise<string[]> {
    const lost: string[] = [];
    const now = new Date(this.#now());
    await Promise.all(
      [...this.#held].map(async ([uid, generation]) => {
        try {
          await fsp.utimes(this.#pathOf(uid, generation), now, now);
          const view = this.#heldViews.get(uid);
          if (view) this.#heldViews.set(uid, { ...view, heartbeatAt: now.getTime() });
        } catch (error) {
          if (errnoOf(error) !== 'ENOENT') return; // keep the lease; a later beat retries
        }
        if (!(await this.verify(uid))) lost.push(uid);
      }),
    );
    return lost;
  }

  /** Releases `uid` with a tombstone generation; a no-op if we do not hold it. */
  async release(uid: string): Promise<void> {
    const generation = this.#held.get(uid);
    if (generation === undefined) return;
    this.#drop(uid);
    const next = generation + 1;
    const created = await createExclusive(this.#pathOf(uid, next), Buffer.from(JSON.stringify(this.#recordFor(uid, next, true)), 'utf8'), 'lease', this.#ops, NOT_DURABLE);
    // Below the tombstone lies only our generation: those below it were swept when we took it, and
    // a low name re-created since is removed by its own creator (tryAcquire). No folder listing.
    if (created) await this.#unlinkQuietly(this.#pathOf(uid, generation));
  }

  async releaseAll(): Promise<void> {
    await Promise.all(this.heldUids().map((uid) => this.release(uid)));
  }

  /** Forgets held leases without writing tombstones (what a crash does); for tests. */
  abandonAll(): void {
    this.#held.clear();
    this.#heldViews.clear();
  }

  /**
   * Housekeeping: deletes the lease files of pods whose lease was released (a tombstone) more than
   * `olderThanMs` ago and which `keep` does not claim (e.g. they still have a checkpoint). Returns
   * how many pods were swept. Deleting a pod's highest generation is the one exception to "the
   * highest file is never deleted": it is safe only because a tombstone this old cannot be the
   * generation an acquirer is still racing from (that window is milliseconds); a re-acquisition
   * afterwards simply starts again at generation 1.
   */
  async sweepReleased(olderThanMs: number, keep: (uid: string) => boolean): Promise<number> {
    let swept = 0;
    const cutoff = this.#now() - olderThanMs;
    for (const [uid, generations] of await this.#generationsByUid()) {
      if (keep(uid) || this.#held.has(uid)) continue;
      const highest = Math.max(...generations);
      const view = await this.#readView(uid, highest);
      if (view === 'vanished' || view.alive) continue;
      // a tombstone an hour old, or a dead owner's lease (no release written: a crash) not touched
      // for an hour — or a lease file nobody can read that old — of a pod that has no checkpoint
      const old = view.released ? view.record !== undefined && view.record.acquiredAt <= cutoff : view.heartbeatAt <= cutoff;
      if (!old) continue;
      for (const generation of generations.sort((a, b) => a - b)) await this.#unlinkQuietly(this.#pathOf(uid, generation));
      swept += 1;
    }
    return swept;
  }

  async #sweepBelow(uid: string, generation: number, listed?: number[]): Promise<void> {
    for (const old of listed ?? (await this.#generationsOf(uid))) {
      if (old < generation) await this.#unlinkQuietly(this.#pathOf(uid, old));
    }
  }

  async #unlinkQuietly(path: string): Promise<void> {
    try {
      await this.#ops.unlink(path);
    } catch {
      // Swept by someone else.
    }
  }
}
