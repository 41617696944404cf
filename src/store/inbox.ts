/**
 * The request inbox: how a process asks a pod's owner to change it (kill, shorten grace, evict).
 *
 * Each request is one immutable file `inbox/<uid>@<time>-<pid>-<random>.req`, written atomically
 * (temporary name, fsync, rename), so the owner never sees half a request. The owner is woken by
 * `fs.watch` on the inbox folder (a slow re-scan backs it up), reads the requests for the pods it
 * holds in arrival order, applies each through the engine's `updatePod`, persists the result, and
 * only then deletes the request file (`acknowledge`). A crash between applying and deleting replays
 * the request on takeover, which is harmless: a kill is idempotent and a grace period only shrinks.
 *
 * Invariants: a request names exactly one pod; an unreadable or invalid request file is moved to
 * quarantine and reported in one line, never applied and never blocking the others.
 */
import * as fsp from '../lib/fs-async.js';
import { join } from 'node:path';
import { listNames, MAX_RECORD_BYTES, nodeFileOps, readFileNoFollow, uniqueName, writeFileAtomic, type FileOps } from './files.js';
import { decodeUid, encodeUid, type StateLayout } from './state-dir.js';
import { checkRecord, inboxRequestSchema, type InboxRequest, type StoreReporter } from './records.js';

const REQUEST_SUFFIX = '.req';
const SEPARATOR = '@';

export type { InboxRequest } from './records.js';

export type NewInboxRequest = Omit<InboxRequest, 'id' | 'at' | 'fromPid'>;

export interface InboxOptions {
  layout: StateLayout;
  report?: StoreReporter;
  ops?: FileOps;
  clock?: () => number;
  /** A reader's store: bad requests are reported, not moved. */
  readOnly?: boolean;
}

export class Inbox {
  readonly #layout: StateLayout;
  readonly #report: StoreReporter;
  readonly #ops: FileOps;
  readonly #now: () => number;

  constructor(options: InboxOptions) {
    this.#layout = options.layout;
    this.#report = options.report ?? (() => {});
    this.#ops = options.ops ?? nodeFileOps;
    this.#now = options.clock ?? Date.now;
    this.#readOnly = options.readOnly === true;
  }

  readonly #readOnly: boolean;
  readonly #reportedInPlace = new Set<string>();

  get folder(): string {
    return this.#layout.inbox;
  }

  /** The UID a request file name is addressed to, or undefined for other names. */
  uidOfName(name: string): string | undefined {
    if (name.startsWith('.') || !name.endsWith(REQUEST_SUFFIX)) return undefined;
    const at = name.indexOf(SEPARATOR);
    if (at <= 0) return undefined;
    return decodeUid(name.slice(0, at));
  }

  /** Writes a request atomically; returns it with its id. Throws a one-line StoreError. */
  async post(request: NewInboxRequest): Promise<InboxRequest> {
    const at = this.#now();
    const id = `${String(at).padStart(14, '0')}-${uniqueName()}`;
    const full: InboxRequest = { ...request, id, at, fromPid: process.pid };
    const path = join(this.#layout.inbox, `${encodeUid(request.uid)}${SEPARATOR}${id}${REQUEST_SUFFIX}`);
    await writeFileAtomic(path, Buffer.from(JSON.stringify(full), 'utf8'), 'request', this.#ops);
    return full;
  }

  /** UIDs with at least one pending request. */
  async pendingUids(): Promise<Set<string>> {
    const out = new Set<string>();
    for (const name of await listNames(this.#layout.inbox)) {
      const uid = this.uidOfName(name);
      if (uid !== undefined) out.add(uid);
    }
    return out;
  }

  /** Pending requests for `uid`, oldest first; invalid files are quarantined and skipped. */
  async pending(uid: string): Promise<InboxRequest[]> {
    const prefix = `${encodeUid(uid)}${SEPARATOR}`;
    const names = (await listNames(this.#layout.inbox)).filter((n) => n.startsWith(prefix) && n.endsWith(REQUEST_SUFFIX)).sort();
    const out: InboxRequest[] = [];
    for (const name of names) {
      const path = join(this.#layout.inbox, name);
      const outcome = await readFileNoFollow(path, MAX_RECORD_BYTES);
      if (outcome.kind === 'missing') continue;
      const request = outcome.kind === 'ok' ? parseRequest(outcome.data) : undefined;
      if (outcome.kind === 'too-large') {
        await this.#quarantine(path, name, `is ${outcome.size} bytes, over the ${MAX_RECORD_BYTES}-byte cap for a request`);
        continue;
      }
      if (request && request.uid === uid && `${prefix}${request.id}${REQUEST_SUFFIX}` === name) {
        out.push(request);
        continue;
      }
      await this.#quarantine(path, name, outcome.kind === 'ok' ? 'is not a valid request' : `is a ${outcome.kind}`);
    }
    return out;
  }

  /**
   * Housekeeping: deletes inbox files older than `olderThanMs` that no owner will ever take: names
   * that are not requests (not `<uid>@<id>.req`, not a temporary of a write in flight) and
   * requests for pods `known` does not know (no lease, no checkpoint, not in the runtime). Returns
   * how many were deleted.
   */
  async sweepUnknown(olderThanMs: number, known: (uid: string) => boolean): Promise<number> {
    const cutoff = this.#now() - olderThanMs;
    let swept = 0;
    for (const name of await listNames(this.#layout.inbox)) {
      if (name.startsWith('.')) continue; // temporaries: sweepTemporaries' (a write may be in flight)
      const uid = this.uidOfName(name);
      if (uid !== undefined && known(uid)) continue;
      const path = join(this.#layout.inbox, name);
      try {
        const stat = await fsp.lstat(path);
        if (stat.mtimeMs > cutoff) continue;
        await this.#ops.unlink(path);
        swept += 1;
        this.#report(`inbox ${path}: ${uid === undefined ? 'not a request' : `a request for pod ${uid}, which no longer exists`}; removed`);
      } catch {
        // gone already
      }
    }
    return swept;
  }

  /** Deletes an applied request. */
  async acknowledge(request: InboxRequest): Promise<void> {
    const path = join(this.#layout.inbox, `${encodeUid(request.uid)}${SEPARATOR}${request.id}${REQUEST_SUFFIX}`);
    try {
      await this.#ops.unlink(path);
    } catch {
      // Already acknowledged by an earlier pass.
    }
  }

  async #quarantine(path: string, name: string, reason: string): Promise<void> {
    if (this.#readOnly) {
      if (!this.#reportedInPlace.has(path)) this.#report(`request ${path} ${reason}; left in place (read-only: the next podctl that writes moves it to quarantine)`);
      this.#reportedInPlace.add(path);
      return;
    }
    const target = join(this.#layout.quarantine, `${name}.${this.#now()}-${process.pid}`);
    try {
      await fsp.rename(path, target);
      this.#report(`request ${path} ${reason}; moved to ${target}`);
    } catch {
      // Moved by another reader.
    }
  }
}

function parseRequest(data: Buffer): InboxRequest | undefined {
  try {
    const check = checkRecord(inboxRequestSchema, JSON.parse(data.toString('utf8')));
    return check.ok ? check.value : undefined;
  } catch {
    return undefined;
  }
}
