/**
 * The safety flags of commands that stop pods (docs/operator-guide.md#safety-rules), and the hidden
 * flags of the background driver that a handing process starts.
 *
 * Invariants: `--dry-run` changes nothing and prints the result the real run would return, in the
 * same shape; `--yes` is the only way past the destructive-scope gate without a terminal; a driver's
 * wait for its handing process is bounded (AFTER_PID_WAIT_MS) and shown in its log.
 */
import { Flags } from '@oclif/core';
import { setTimeout as sleep } from 'node:timers/promises';
import { pidAlive } from '../store/proc.js';

export const safetyFlags = {
  'dry-run': Flags.boolean({ summary: 'Print exactly what would be done (same shape as the result) and change nothing.', default: false }),
  yes: Flags.boolean({
    char: 'y',
    summary: 'Answer yes to the confirmation of destructive scopes (--all -A, static or system-critical pods).',
    description: 'Without a terminal podctl cannot ask, so such a scope is refused (exit 2) unless --yes is given.',
    default: false,
  }),
};

/** Flags only the background driver is started with (hand-off.ts); hidden from --help. */
export const driverFlags = {
  drive: Flags.boolean({ summary: 'Drive the pods until they are terminated, without a wait bound (background driver).', hidden: true, default: false }),
  'after-pid': Flags.integer({ summary: 'Take the pods over once this process has exited (background driver).', hidden: true, min: 1 }),
};

/** How long a background driver waits for the process that handed it the pods to exit. */
export const AFTER_PID_WAIT_MS = 60_000;

/** Resolves once process `pid` is gone, or after `boundMs` (true when it is gone). */
export async function waitForExit(pid: number, boundMs = AFTER_PID_WAIT_MS, signal?: AbortSignal): Promise<boolean> {
  const until = Date.now() + boundMs;
  while (pidAlive(pid)) {
    if (Date.now() >= until || signal?.aborted) return false;
    await sleep(25);
  }
  return true;
}

/** `--metrics-textfile` of the one-shot commands that act (kill, evict, drain, sync-known). */
export const metricsTextfileFlags = {
  'metrics-textfile': Flags.string({
    summary: "When the command ends, write its metrics (Prometheus text format) to FILE atomically, for node_exporter's textfile collector.",
    helpValue: 'FILE',
  }),
};
