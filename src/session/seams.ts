/**
 * The session's test seams and tunables, and the defaults of its timers.
 *
 * Owns: these settings only (no code). Every part of the session reads its own fields from here;
 * `open.ts` passes them through.
 */
import type { PodWorkers, PodWorkersOptions, V1Pod } from '../engine/types.js';
import type { FileOps } from '../store/index.js';
import type { SessionRuntime } from './runtime.js';

/** Test seams and tunables; every field is optional. */
export interface SessionSeams {
  runtime?: SessionRuntime;
  createEngine?: (options: PodWorkersOptions) => PodWorkers;
  /** Desired pods when `syncKnown(undefined)` is called (default: the API server via kubeconfig). */
  desiredPodsSource?: (signal?: AbortSignal) => Promise<V1Pod[]>;
  storeOps?: FileOps;
  /** Lease heartbeat period (default 2_000 ms). */
  heartbeatMs?: number;
  /** Safety re-scan of the inbox and re-check of awaited pods (default 1_000 ms). */
  rescanMs?: number;
  /** Persistence coalescing delay (default 15 ms). */
  flushDelayMs?: number;
  /** Engine options passed through (resync, backoff). */
  engine?: Pick<PodWorkersOptions, 'resyncIntervalMs' | 'backOffPeriodMs'>;
}

export const DEFAULT_HEARTBEAT_MS = 2_000;
export const DEFAULT_RESCAN_MS = 1_000;
export const DEFAULT_FLUSH_DELAY_MS = 15;
/** How old a runtime listing may be for decisions that do not need the latest state, ms. */
export const RECENT_LISTING_MS = 1_000;
