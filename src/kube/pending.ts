/**
 * API actions podctl owes the API server, kept in the state dir (`<state-dir>/api-pending/`, one
 * small JSON file per action) so that the runtime side of a kill never waits for the API: when the
 * API server cannot be reached the action is recorded here, and the next podctl run that has a
 * kubeconfig performs it.
 *
 * Invariants:
 * - One file per (pod UID, action, reason): recording the same action twice keeps one (Events stay
 *   deduplicated per pod and reason across runs).
 * - Files are written to a temporary name and renamed, so a crash leaves either the old file or
 *   the new one, never a torn one; an unreadable file is skipped, not fatal.
 * - An action is removed only after it succeeded or was answered final (404/409: the pod is gone
 *   or replaced, nothing left to do).
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from '../lib/fs-async.js';
import path from 'node:path';

export type PendingAction =
  { kind: 'event'; type: 'Normal' | 'Warning'; reason: string; message: string } | { kind: 'status'; phase: 'Failed'; reason: string; message: string } | { kind: 'final-delete' };

export interface PendingRecord {
  id: string;
  pod: { namespace: string; name: string; uid: string; resourceVersion?: string };
  action: PendingAction;
  recordedAt: string;
  attempts: number;
  lastError: string;
}

const PENDING_DIR = 'api-pending';

export function pendingId(uid: string, action: PendingAction): string {
  const part = action.kind === 'event' ? `event-${action.reason}` : action.kind;
  return `${uid}-${part}`.replace(/[^A-Za-z0-9._-]/g, '_');
}

export class PendingApiActions {
  readonly dir: string;
  constructor(stateDir: string) {
    this.dir = path.join(stateDir, PENDING_DIR);
  }

  async record(pod: PendingRecord['pod'], action: PendingAction, error: string): Promise<PendingRecord> {
    await mkdir(this.dir, { recursive: true });
    const id = pendingId(pod.uid, action);
    const previous = await this.#read(id);
    const record: PendingRecord = { id, pod, action, recordedAt: previous?.recordedAt ?? new Date().toISOString(), attempts: (previous?.attempts ?? 0) + 1, lastError: error };
    const file = path.join(this.dir, `${id}.json`);
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(record));
    await rename(tmp, file);
    return record;
  }

  async list(): Promise<PendingRecord[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return [];
    }
    const records: PendingRecord[] = [];
    for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
      const r = await this.#read(name.slice(0, -'.json'.length));
      if (r) records.push(r);
    }
    return records;
  }

  async remove(id: string): Promise<void> {
    await rm(path.join(this.dir, `${id}.json`), { force: true });
  }

  async #read(id: string): Promise<PendingRecord | undefined> {
    try {
      return JSON.parse(await readFile(path.join(this.dir, `${id}.json`), 'utf8')) as PendingRecord;
    } catch {
      return undefined;
    }
  }
}
