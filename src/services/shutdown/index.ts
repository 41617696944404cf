/**
 * The node shutdown guard (`podctl agent --shutdown-guard`, docs/shutdown.md): what the agent and
 * `podctl status` reach of it. guard.ts holds the lock and drains; record.ts keeps the report;
 * report.ts reads it back.
 */
import { ShutdownGuard, type ShutdownGuardOptions } from './guard.js';
import { writeGuardState } from './guard-state.js';

export { exportShutdownMetrics, lastShutdown, lastShutdownText, type LastShutdownJson } from './report.js';

/** Starts the guard (lock taken, PrepareForShutdown heard) and leaves its budget for `podctl status`. */
export async function startShutdownGuard(options: ShutdownGuardOptions): Promise<ShutdownGuard> {
  const guard = await ShutdownGuard.start(options);
  await writeGuardState(options.stateDir, guard.facts).catch((error: Error) => options.reporter?.warn(`shutdown guard: its state for podctl status was not written: ${error.message}`));
  return guard;
}
