/**
 * The report of a guarded shutdown that survives the reboot: one record per shutdown in
 * `<state-dir>/shutdowns/`, read by `podctl status --last-shutdown` and by the agent's
 * `podctl_shutdown_*` metrics when it starts again.
 *
 * Invariants:
 * - A record is written whole or not at all (store/files.ts `writeFileAtomic`: temporary file,
 *   fsync, rename, folder fsync), so power going off, or the guard being killed, mid-write leaves
 *   the previous version. The guard writes it when the drain starts (every pod `pending`) and again
 *   when it ends; a record still `draining` after its guard is gone says the guard ended first.
 * - One schema (valibot) decides what a record may hold; a file that fails it is skipped with a
 *   one-line reason, never half-read. At most `KEEP_RECORDS` are kept, the oldest removed first.
 */
import { mkdir, readdir, rm } from '../../lib/fs-async.js';
import path from 'node:path';
import * as v from 'valibot';
import { DIR_MODE, MAX_RECORD_BYTES, readFileNoFollow, writeFileAtomic } from '../../store/files.js';

export const SHUTDOWN_FORMAT = 'podctl/shutdown';
const KEEP_RECORDS = 10;
const FOLDER = 'shutdowns';

/**
 * What became of a pod by the time the guard let the shutdown go on. `handed-on`: still running
 * when the guard, stopped (SIGTERM) while it deferred to the kubelet, left it to the kubelet's
 * graceful shutdown.
 */
export const POD_OUTCOMES = ['stopped', 'killed', 'running', 'kubelet', 'handed-on', 'pending'] as const;
export type ShutdownPodOutcome = (typeof POD_OUTCOMES)[number];

const count = () => v.pipe(v.number(), v.safeInteger(), v.minValue(0));

const shutdownRecordSchema = v.object({
  format: v.literal(SHUTDOWN_FORMAT),
  version: v.literal(1),
  id: v.pipe(v.string(), v.regex(/^[0-9TZ-]+$/)),
  /** What started it: logind's PrepareForShutdown, or the guard's own stop (SIGTERM) without it. */
  trigger: v.picklist(['logind', 'sigterm']),
  /**
   * draining: the drain had not ended when this was written; done; cancelled (PrepareForShutdown(false));
   * handed-on: the guard was stopped (SIGTERM) while it deferred to the kubelet's graceful shutdown,
   * stopped only what the kubelet does not own within its stop timeout and left the rest to the kubelet.
   */
  state: v.picklist(['draining', 'done', 'cancelled', 'handed-on']),
  guardPid: count(),
  startedAt: count(),
  endedAt: v.optional(count()),
  /** The delay logind grants a delay lock (InhibitDelayMaxUSec), or the stop timeout after SIGTERM. */
  windowMs: count(),
  /** What the priority groups ask for in all. */
  groupsTotalMs: count(),
  /** The kubelet's own inhibitor: none, deferred to (how long), or gone before podctl started. */
  kubelet: v.object({ inhibitor: v.boolean(), deferredMs: count(), owned: count() }),
  groups: v.array(v.object({ priority: v.number(), budgetSeconds: count(), givenSeconds: count(), critical: v.boolean() })),
  pods: v.array(
    v.object({
      uid: v.string(),
      namespace: v.string(),
      name: v.string(),
      group: v.number(),
      graceSeconds: count(),
      outcome: v.picklist(POD_OUTCOMES),
      elapsedMs: v.optional(count()),
    }),
  ),
});

export type ShutdownRecord = v.InferOutput<typeof shutdownRecordSchema>;

export function shutdownsFolder(stateDir: string): string {
  return path.join(stateDir, FOLDER);
}

/** A record's id: its start time, sortable, one path segment. */
export function recordId(startedAt: number): string {
  return new Date(startedAt).toISOString().replace(/[:.]/g, '-');
}

export async function writeShutdownRecord(stateDir: string, record: ShutdownRecord): Promise<void> {
  const folder = shutdownsFolder(stateDir);
  await mkdir(folder, { recursive: true, mode: DIR_MODE });
  await writeFileAtomic(path.join(folder, `${record.id}.json`), Buffer.from(`${JSON.stringify(record)}\n`), 'shutdown record');
  const names = (await readdir(folder)).filter((n) => n.endsWith('.json')).sort();
  for (const name of names.slice(0, Math.max(0, names.length - KEEP_RECORDS))) await rm(path.join(folder, name), { force: true });
}

export interface LastShutdown {
  record?: ShutdownRecord;
  /** Records that could not be used (one line each). */
  skipped: string[];
}

/** The newest readable record, skipping (and naming) damaged ones. */
export async function readLastShutdown(stateDir: string): Promise<LastShutdown> {
  const folder = shutdownsFolder(stateDir);
  let names: string[];
  try {
    names = (await readdir(folder)).filter((n) => n.endsWith('.json')).sort();
  } catch {
    return { skipped: [] };
  }
  const skipped: string[] = [];
  for (const name of names.reverse()) {
    const file = path.join(folder, name);
    const read = await readFileNoFollow(file, MAX_RECORD_BYTES);
    if (read.kind !== 'ok') {
      skipped.push(`${file}: ${read.kind}`);
      continue;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(read.data.toString('utf8'));
    } catch {
      skipped.push(`${file}: not JSON`);
      continue;
    }
    const result = v.safeParse(shutdownRecordSchema, parsed, { abortEarly: true });
    if (result.success) return { record: result.output, skipped };
    skipped.push(`${file}: ${v.getDotPath(result.issues[0]) ?? '(root)'}: ${result.issues[0].message}`);
  }
  return { skipped };
}
