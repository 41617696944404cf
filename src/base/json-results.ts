/**
 * The JSON form of the one-shot commands' results (kill, evict, drain, sync-known; status's is
 * `statusJson` in status.ts, which loads nothing more): the
 * service's result with every documented field present (null when it has no value), as
 * `lib/json-vocabulary.ts` requires. Commands print (`-o json|yaml`) and return (`--json`) these,
 * so both paths give the same object; tables keep rendering the service result.
 *
 * Owns: which optional fields of each documented result shape are filled with null. Pure.
 * Invariant: only fills; never renames, removes or converts a field the service set.
 */
import { withNulls } from '../lib/json-vocabulary.js';
import type { DrainResult } from '../services/drain/drain.js';
import type { SyncKnownResult } from '../services/housekeeping/sync-known.js';
import type { TerminateResult } from '../services/terminate/terminate.js';

/** kill / evict: each pod's handledBy, ownerPid, elapsedMs, error, ordering, note; the result's handedOffTo, apiServer, kubelet. */
export function terminateJson<T extends TerminateResult & { kubelet?: unknown }>(result: T) {
  return {
    ...withNulls(result, ['handedOffTo', 'apiServer', 'kubelet']),
    pods: result.pods.map((p) => withNulls(p, ['handledBy', 'ownerPid', 'elapsedMs', 'error', 'ordering', 'note'])),
  };
}

/** drain: each group's startedAtMs and elapsedMs; each pod's criticalReason, elapsedMs, error, ordering; handedOffTo, apiServer, shutdownStatus. */
export function drainJson<T extends DrainResult & { apiServer?: unknown; shutdownStatus?: unknown }>(result: T) {
  return {
    ...withNulls(result, ['handedOffTo', 'apiServer', 'shutdownStatus']),
    groups: result.groups.map((g) => ({
      ...withNulls(g, ['startedAtMs', 'elapsedMs']),
      pods: g.pods.map((p) => withNulls(p, ['criticalReason', 'elapsedMs', 'error', 'ordering'])),
    })),
  };
}

/** sync-known: each worker's error; the result's api and kubelet. */
export function syncKnownJson(result: SyncKnownResult) {
  return {
    ...withNulls(result, ['api', 'kubelet']),
    workers: result.workers.map((w) => withNulls(w, ['error'])),
  };
}
