/**
 * `podctl status -w`: kubectl's `get -w` for podctl's pods. After the first table (printed by the
 * command), one line per change of a selected pod — its state, its READY (containers ready/total,
 * sandbox), the grace in force — a pod that appears, or a pod that goes, until the signal aborts
 * (SIGINT/SIGTERM) or the optional bound passes.
 *
 * Owns: what counts as a change of a row; how a change is written (a table line aligned with the
 * first table, `ns/name`, or one JSON object per line) is the caller's `line` (watch/output.ts).
 *
 * Invariants:
 * - Follows the session through the watch feed (`watch-feed.ts`, used as it is): no timer of its own
 *   runs while nothing changes, and nothing is printed then; a grace counting down is not a change.
 * - Never loads Ink or React.
 * - Each change is one line; a JSON line is `{"type":"added"|"modified"|"deleted","at":ISO,"pod":row}`
 *   with `row` exactly a row of `status -o json` (for `deleted`, the pod's last row).
 * - Ends when the signal aborts, the bound passes, or stdout's reader goes away; it never throws for
 *   any of those, and it leaves no listener or timer behind.
 */
import { keepProcessAlive } from '../../lib/abortable.js';
import { resolveSelection, type PodSelection } from '../../lib/refs.js';
import { readyCell, sandboxCell } from '../diagnose/pod-ready.js';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import { statusRow, type NodeFacts, type StatusRow } from '../diagnose/status.js';
import { WATCH_COALESCE_MS, watchRuntimeMaxAgeMs } from './watch.js';
import { WatchFeed } from './watch-feed.js';

/** One change of a row as the line written for it (without its newline). */
export type StatusChangeLine = (type: StatusWatchRecord['type'], row: StatusRow, at: number) => Promise<string>;

/** The part of the watch feed this uses (a test seam). */
interface StatusFeed {
  start(): Promise<void>;
  snapshot(): { readonly pods: readonly PodInfo[]; readonly listedAt: number };
  subscribe(listener: () => void): () => void;
  close(): void;
}

/** Where change lines are written: stdout, or a test's capture. */
interface LineSink {
  write(chunk: string): unknown;
  on(event: 'error', listener: (error: NodeJS.ErrnoException) => void): unknown;
  off(event: 'error', listener: (error: NodeJS.ErrnoException) => void): unknown;
}

export interface StatusWatchOptions {
  session: NodeSession;
  selection: PodSelection;
  /** Writes one change as a line (watch/output.ts's `statusChangeLines`). */
  line: StatusChangeLine;
  /** The rows the first table (or the first JSON lines) showed. */
  initial: readonly StatusRow[];
  /** Where the lines go (stdout); an `error` event (EPIPE) ends the watch. */
  out: LineSink;
  signal: AbortSignal;
  /** Stop after this long (ms); default: until the signal. */
  forMs?: number;
  /** Node facts for the rows' blockedBy (the kubelet's state; no per-process facts while watching). */
  facts?: NodeFacts;
  now?: () => number;
  /** Test seam: the feed (default: a WatchFeed over `session`). */
  feed?: StatusFeed;
}

export interface StatusWatchResult {
  endedBy: 'signal' | 'bound' | 'epipe';
  /** Change lines written. */
  changes: number;
}

export type StatusWatchRecord = { type: 'added' | 'modified' | 'deleted'; at: string; pod: StatusRow };

/** What a line is printed for: state (and stuck), READY, sandbox, the grace in force. Not its countdown. */
function rowSignature(row: StatusRow): string {
  return [row.state, row.stuck, readyCell(row.ready), sandboxCell(row.ready), row.gracePeriodSeconds ?? '-'].join('|');
}

/** The changes from `before` to `after` (by UID), in `after`'s order, then the pods gone. */
export function rowChanges(before: ReadonlyMap<string, StatusRow>, after: readonly StatusRow[]): { type: StatusWatchRecord['type']; row: StatusRow }[] {
  const changes: { type: StatusWatchRecord['type']; row: StatusRow }[] = [];
  const seen = new Set<string>();
  for (const row of after) {
    seen.add(row.uid);
    const prev = before.get(row.uid);
    if (prev === undefined) changes.push({ type: 'added', row });
    else if (rowSignature(prev) !== rowSignature(row)) changes.push({ type: 'modified', row });
  }
  for (const [uid, row] of before) if (!seen.has(uid)) changes.push({ type: 'deleted', row });
  return changes;
}

/** Follows the selected pods and writes one line per change; see the module comment. */
export async function watchStatus(options: StatusWatchOptions): Promise<StatusWatchResult> {
  const now = options.now ?? Date.now;
  const { out } = options;
  let rows = new Map(options.initial.map((r) => [r.uid, r]));
  let changes = 0;
  let endedBy: StatusWatchResult['endedBy'] = 'signal';
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal.addEventListener('abort', onAbort, { once: true });
  if (options.signal.aborted) stop.abort();
  const onError = (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') endedBy = 'epipe';
    stop.abort();
  };
  out.on('error', onError);
  const timer =
    options.forMs === undefined
      ? undefined
      : setTimeout(() => {
          if (!stop.signal.aborted) endedBy = 'bound';
          stop.abort();
        }, options.forMs);

  // a chain of writes, so lines keep the order of the changes
  let writing: Promise<void> = Promise.resolve();
  const onSnapshot = (pods: readonly PodInfo[]) => {
    if (stop.signal.aborted) return;
    const at = now();
    let selected: PodInfo[];
    try {
      selected = resolveSelection([...pods], options.selection).targets;
    } catch {
      return; // a selection that no longer resolves (an ambiguous UID prefix) shows nothing new
    }
    const next = selected.map((p) => statusRow(p, at, options.facts));
    const found = rowChanges(rows, next);
    rows = new Map(next.map((r) => [r.uid, r]));
    if (found.length === 0) return;
    writing = writing.then(async () => {
      for (const change of found) {
        if (stop.signal.aborted) return;
        out.write(`${await options.line(change.type, change.row, at)}\n`);
        changes += 1;
      }
    });
  };

  const feed = options.feed ?? new WatchFeed(options.session, { coalesceMs: WATCH_COALESCE_MS, runtimeMaxAgeMs: watchRuntimeMaxAgeMs });
  let last: readonly PodInfo[] | undefined;
  const off = feed.subscribe(() => {
    const pods = feed.snapshot().pods;
    if (pods === last) return;
    last = pods;
    onSnapshot(pods);
  });
  // it ends by its signal, its bound or its reader, not when the runtime's connection closes
  const release = keepProcessAlive();
  try {
    if (!stop.signal.aborted) {
      await feed.start();
      const pods = feed.snapshot().pods;
      if (pods !== last) {
        last = pods;
        onSnapshot(pods);
      }
      await new Promise<void>((resolve) => {
        if (stop.signal.aborted) return resolve();
        stop.signal.addEventListener('abort', () => resolve(), { once: true });
      });
    }
    await writing;
  } finally {
    release();
    off();
    feed.close();
    if (timer !== undefined) clearTimeout(timer);
    options.signal.removeEventListener('abort', onAbort);
    out.off('error', onError);
  }
  return { endedBy, changes };
}
