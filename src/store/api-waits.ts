/**
 * The API waits of pods stopped through the API server beside a running kubelet (no checkpoint of
 * podctl's holds their timeline): an eviction a PodDisruptionBudget refuses, and the wait for the
 * kubelet to finish the pod. `<stateDir>/api-waits/<uid>.json`, one JSON list per pod, so that
 * `podctl status` (from any process) shows a pod blocked now, and the drain report draws them.
 *
 * Invariants:
 * - A file is written atomically (files.ts): a reader sees the list before or after a change; the
 *   folder and its temporary folder are made 0700 and checked like the store's others on first use.
 * - A wait still open (`to` unset) names its writer's PID: a reader trusts it only while that
 *   process lives. Recording a wait closes nothing; `closeApiWait` ends the open one of its kind.
 * - A list keeps its newest `WAITS_KEPT` waits; a missing, damaged or oversized file reads as none.
 */
import { join } from 'node:path';
import { listNames, readFileNoFollow, temporaryFolderOf, writeFileAtomic } from './files.js';
import { isProcessAlive } from './proc.js';
import { decodeUid, encodeUid, ensureStateFolder } from './state-dir.js';

/** One wait in the API server for one pod. */
export interface ApiWaitRecord {
  kind: 'eviction-wait' | 'kubelet-wait';
  /** The PodDisruptionBudget ("PodDisruptionBudget web/pdb"), or "kubelet". */
  label: string;
  /** Epoch ms. */
  from: number;
  /** Epoch ms; unset while the wait goes on. */
  to?: number;
  /** waited (it ended as hoped), refused (podctl gave up), timeout. */
  outcome?: string;
  detail: string;
  /** The process waiting. */
  pid: number;
}

const WAITS_KEPT = 20;
const MAX_WAITS_BYTES = 256 * 1024;

const folderOf = (stateDir: string): string => join(stateDir, 'api-waits');
const fileOf = (stateDir: string, uid: string): string => join(folderOf(stateDir), `${encodeUid(uid)}.json`);

/** The pod's recorded waits, oldest first (none when nothing was recorded or the file is unreadable). */
export async function readApiWaits(stateDir: string, uid: string): Promise<ApiWaitRecord[]> {
  try {
    const outcome = await readFileNoFollow(fileOf(stateDir, uid), MAX_WAITS_BYTES);
    if (outcome.kind !== 'ok') return [];
    const value: unknown = JSON.parse(outcome.data.toString('utf8'));
    return Array.isArray(value) ? (value as ApiWaitRecord[]).filter((w) => typeof w?.from === 'number' && typeof w.kind === 'string') : [];
  } catch {
    return [];
  }
}

async function writeWaits(stateDir: string, uid: string, waits: readonly ApiWaitRecord[]): Promise<void> {
  const folder = folderOf(stateDir);
  await ensureStateFolder(folder);
  await ensureStateFolder(temporaryFolderOf(folder));
  await writeFileAtomic(fileOf(stateDir, uid), Buffer.from(JSON.stringify(waits.slice(-WAITS_KEPT))), 'API waits');
}

/** Adds a wait (open while `to` is unset). */
export async function recordApiWait(stateDir: string, uid: string, wait: ApiWaitRecord): Promise<void> {
  await writeWaits(stateDir, uid, [...(await readApiWaits(stateDir, uid)), wait]);
}

/** Ends the newest open wait of `kind` this process recorded for the pod. */
export async function closeApiWait(stateDir: string, uid: string, kind: ApiWaitRecord['kind'], end: { to: number; outcome: string; detail?: string }): Promise<void> {
  const waits = await readApiWaits(stateDir, uid);
  const open = waits.findLastIndex((w) => w.kind === kind && w.to === undefined && w.pid === process.pid);
  if (open < 0) return;
  waits[open] = { ...waits[open]!, to: end.to, outcome: end.outcome, ...(end.detail !== undefined ? { detail: end.detail } : {}) };
  await writeWaits(stateDir, uid, waits);
}

/**
 * The waits going on now, by pod UID: each pod's newest open wait whose process lives (one read of
 * the folder, then only the files in it).
 */
export async function openApiWaits(stateDir: string): Promise<Map<string, ApiWaitRecord>> {
  const open = new Map<string, ApiWaitRecord>();
  const names = await listNames(folderOf(stateDir)).catch(() => [] as string[]);
  for (const name of names) {
    const uid = name.endsWith('.json') ? decodeUid(name.slice(0, -'.json'.length)) : undefined;
    if (uid === undefined) continue;
    const wait = (await readApiWaits(stateDir, uid)).findLast((w) => w.to === undefined && isProcessAlive(w.pid));
    if (wait) open.set(uid, wait);
  }
  return open;
}
