/**
 * The drain reports kept in the state dir: the data of each drain's report (podctl drain, the
 * agent's maintenance drain), so that `podctl report` can draw a past drain after its pods'
 * checkpoints are forgotten. `<stateDir>/reports/drain-<time>-<pid>.json`, one JSON document per
 * drain, whose shape the report service owns (this module stores and reads bytes and JSON only).
 *
 * Invariants:
 * - A report is written atomically (files.ts): a reader sees a whole report or none; the folder
 *   and its temporary folder are created 0700 and checked like the store's others on first use.
 *   It is not fsynced: it describes a drain that has ended, and keeping it is the last thing the
 *   drain does before it exits; a power cut may lose it (as it loses the pods' progress records,
 *   which the next run re-derives), never leave half of it.
 * - Names sort in the order the drains ended (the time is fixed-width, UTC); the newest
 *   `REPORTS_KEPT` are kept, older ones removed after each write.
 * - A read refuses a file over `MAX_REPORT_BYTES` or that is not a JSON object, with one line.
 */
import * as fsp from '../lib/fs-async.js';
import { basename, join } from 'node:path';
import { StoreError } from './errors.js';
import { listNames, nodeFileOps, readFileNoFollow, temporaryFolderOf, writeFileAtomic, type FileOps } from './files.js';
import { ensureStateFolder } from './state-dir.js';

/** Reports kept per state dir (older ones are removed when a new one is written). */
const REPORTS_KEPT = 20;
/** The largest report read (a 2,000-pod drain's is about 4 MB). */
const MAX_REPORT_BYTES = 64 * 1024 * 1024;
const NAME = /^drain-\d{8}T\d{9}Z-\d+\.json$/;

function reportsFolder(stateDir: string): string {
  return join(stateDir, 'reports');
}

/** `drain-20261128T013015123Z-4242.json`: the time it ended, then the writer's PID. */
function reportName(endedAt: number, pid: number): string {
  const stamp = new Date(endedAt).toISOString().replace(/[-:.]/g, '');
  return `drain-${stamp}-${pid}.json`;
}

/** Writes one drain's report data; returns its path. Removes the oldest past REPORTS_KEPT. */
export async function saveDrainReport(stateDir: string, data: object, endedAt: number, ops: FileOps = nodeFileOps): Promise<string> {
  const folder = reportsFolder(stateDir);
  await ensureStateFolder(folder);
  await ensureStateFolder(temporaryFolderOf(folder));
  const file = join(folder, reportName(endedAt, process.pid));
  await writeFileAtomic(file, Buffer.from(JSON.stringify(data)), 'drain report', ops, { durable: false });
  const names = await listDrainReports(stateDir);
  for (const old of names.slice(0, Math.max(0, names.length - REPORTS_KEPT))) {
    await fsp.rm(old, { force: true }).catch(() => undefined);
  }
  return file;
}

/** The kept reports' paths, oldest first. */
export async function listDrainReports(stateDir: string): Promise<string[]> {
  const folder = reportsFolder(stateDir);
  return (await listNames(folder))
    .filter((name) => NAME.test(name))
    .sort()
    .map((name) => join(folder, name));
}

/** The JSON of one kept report (a path from listDrainReports, or a file given by the operator). */
export async function readDrainReport(file: string): Promise<unknown> {
  let outcome;
  try {
    outcome = await readFileNoFollow(file, MAX_REPORT_BYTES);
  } catch (error) {
    throw new StoreError('EIO', file, `cannot read drain report ${file}: ${(error as Error).message}`, { cause: error });
  }
  if (outcome.kind === 'missing') throw new StoreError('EIO', file, `no drain report at ${file}`);
  if (outcome.kind !== 'ok') throw new StoreError('EIO', file, `drain report ${basename(file)} is ${outcome.kind === 'too-large' ? `too large (${outcome.size} bytes)` : 'not a plain file'}`);
  try {
    const value: unknown = JSON.parse(outcome.data.toString('utf8'));
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not a JSON object');
    return value;
  } catch (error) {
    throw new StoreError('EIO', file, `drain report ${file} is damaged: ${(error as Error).message}`, { cause: error });
  }
}
