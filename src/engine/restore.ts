/**
 * Rebuilding records from checkpointed views (the restore path).
 *
 * Invariants (on top of those of status.ts):
 * - Lifecycle order is repaired, never relaxed: finished ⇒ terminated ⇒ termination requested;
 *   terminated ⇒ the worker observed termination.
 * - A finished record stays finished and gets no update: it only waits to be forgotten.
 * - A terminated record replays its last update so that only the terminated step runs; one with no
 *   pod spec left has nothing to clean up and is marked finished.
 * - A terminating record replays its last update with a grace override no longer than the saved grace.
 * - A record in `sync` replays only an update that was still pending; otherwise it waits for the
 *   next update.
 * - Callbacks never survive a checkpoint.
 */
import { copyUpdate, PodSyncRecord, updateFromView, type PodUpdate } from './status.js';
import type { PodSyncStatusView } from './types.js';

export function recordFromView(view: PodSyncStatusView, now: number): PodSyncRecord {
  const record = new PodSyncRecord(view.fullname, view.syncedAt ?? now);
  record.startedAt = view.startedAt;
  record.terminatingAt = view.terminatingAt;
  record.terminatedAt = view.terminatedAt;
  record.gracePeriod = Number.isFinite(view.gracePeriod) && view.gracePeriod > 0 ? view.gracePeriod : 0;
  record.startedTerminating = view.startedTerminating;
  record.deleted = view.deleted;
  record.evicted = view.evicted;
  record.finished = view.finished;
  record.restartRequested = view.restartRequested;
  record.observedRuntime = view.observedRuntime;
  if (view.activeUpdate !== undefined) {
    record.activeUpdate = updateFromView(view.activeUpdate);
    record.activeUpdate.startTime = undefined;
  }
  // repair the lifecycle order
  if (record.finished && record.terminatedAt === undefined) {
    record.terminatedAt = record.terminatingAt ?? record.syncedAt;
  }
  if (record.terminatedAt !== undefined) {
    if (record.terminatingAt === undefined) record.terminatingAt = record.terminatedAt;
    record.startedTerminating = true;
  }
  return record;
}

/**
 * The update a restored record's worker must process next, or undefined when it has none.
 * May mark a terminated record finished when nothing is left to replay.
 */
export function replayUpdateFor(record: PodSyncRecord, view: PodSyncStatusView): PodUpdate | undefined {
  if (record.finished) return undefined;
  const pending = view.pendingUpdate !== undefined ? updateFromView(view.pendingUpdate) : undefined;
  const state = record.state();
  if (state === 'sync') return pending;

  const replay = pending ?? (record.activeUpdate !== undefined ? copyUpdate(record.activeUpdate) : undefined);
  if (state === 'terminated') {
    if (replay?.pod === undefined) {
      record.finished = true;
      return undefined;
    }
    replay.runningPod = undefined;
    return replay;
  }
  if (replay === undefined || (replay.pod === undefined && replay.runningPod === undefined)) return undefined;
  if (record.gracePeriod > 0) {
    const override = replay.killPodOptions?.gracePeriodSecondsOverride;
    if (override !== undefined && override >= 1 && override < record.gracePeriod) record.gracePeriod = override;
    replay.killPodOptions = {
      ...(replay.killPodOptions?.evict ? { evict: true } : {}),
      gracePeriodSecondsOverride: record.gracePeriod,
    };
  }
  return replay;
}
