/**
 * Merging a consumed update into a record's `activeUpdate` (the kubelet's mergeLastUpdate).
 *
 * Invariants:
 * - The last real pod spec is kept: a runtime-only update never replaces a known pod, it only
 *   provides one when none is known.
 * - `runningPod` always reflects the latest update (it is remembered for replay, never persisted as config).
 * - A missing mirror pod keeps the previous one.
 * - Kill options are replaced by a callback-free copy (evict flag and grace override only).
 * - The active update's type stays `sync`: a replay of it is a plain re-sync. Start times are not copied.
 */
import { newUpdate, type PodSyncRecord, type PodUpdate } from './status.js';
import type { KillPodOptions } from './types.js';

export function mergeLastUpdate(record: PodSyncRecord, other: PodUpdate): void {
  let opts = record.activeUpdate;
  if (opts === undefined) {
    opts = newUpdate('sync', undefined, undefined, undefined, undefined, undefined);
    record.activeUpdate = opts;
  }
  if (opts.pod === undefined || other.runningPod === undefined) opts.pod = other.pod;
  opts.runningPod = other.runningPod;
  if (other.mirrorPod !== undefined) opts.mirrorPod = other.mirrorPod;
  const kill = other.killPodOptions;
  if (kill !== undefined) {
    const merged: KillPodOptions = {};
    if (kill.evict) merged.evict = true;
    if (kill.gracePeriodSecondsOverride !== undefined) merged.gracePeriodSecondsOverride = kill.gracePeriodSecondsOverride;
    opts.killPodOptions = merged;
  }
}
