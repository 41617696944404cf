/**
 * The running shutdown guard's budget, written atomically beside the records (`guard.state`) while a
 * guard runs, and its `podctl status` header line.
 *
 * Invariant: apart from report.ts (and prom-client), so that `podctl status` reads the header without
 * loading the metrics library; a guard state whose process is gone is not shown.
 */
import { mkdir, readFile } from '../../lib/fs-async.js';
import path from 'node:path';
import { formatDuration } from '../../lib/duration.js';
import { DIR_MODE, writeFileAtomic } from '../../store/files.js';
import { pidAlive } from '../../store/proc.js';
import type { BudgetCheck } from './budget.js';
import { shutdownsFolder } from './record.js';

const GUARD_STATE = 'guard.state';

/** The guard's budget while it runs, for `podctl status`. */
interface GuardState extends BudgetCheck {
  pid: number;
  startedAt: number;
}

export async function writeGuardState(stateDir: string, budget: BudgetCheck): Promise<void> {
  const folder = shutdownsFolder(stateDir);
  await mkdir(folder, { recursive: true, mode: DIR_MODE });
  const state: GuardState = { ...budget, pid: process.pid, startedAt: Date.now() };
  await writeFileAtomic(path.join(folder, GUARD_STATE), Buffer.from(JSON.stringify(state)), 'shutdown guard state', undefined, { durable: false });
}

/** The `podctl status` header line of a running guard; undefined when none runs. */
export async function guardHeader(stateDir: string): Promise<string | undefined> {
  let state: GuardState;
  try {
    state = JSON.parse(await readFile(path.join(shutdownsFolder(stateDir), GUARD_STATE), 'utf8')) as GuardState;
  } catch {
    return undefined;
  }
  if (typeof state.pid !== 'number' || !pidAlive(state.pid)) return undefined;
  if (state.short && typeof state.warning === 'string') return `shutdown guard (pid ${state.pid}): ${state.warning}`;
  return `shutdown guard (pid ${state.pid}): logind grants ${formatDuration(state.delayMs)}, the shutdown groups ask for ${state.groupsTotalSeconds}s`;
}
