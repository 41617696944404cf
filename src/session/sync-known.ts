/**
 * SyncKnownPods for the node (`podctl sync-known`, the agent's housekeeping): resume the pods whose
 * owner is gone, let the engine forget finished orphans and drive unfinished ones on, kill runtime
 * pods no worker knows, wait (bounded) for what this started, then sweep the state dir.
 *
 * Invariants:
 * - A pod a live process drives is never touched here (its lease says so); a pod is acted on only
 *   after this session holds its lease.
 * - A pod the desired list names is never killed as an orphan; a runtime pod with nothing running
 *   is not killed either (there is nothing to stop).
 * - An abort stops the sync between steps and ends the bounded wait; the pods adopted so far stay
 *   owned until close() persists them and releases their leases.
 * - Housekeeping deletes only what no process will need: leases of pods long gone (no checkpoint),
 *   inbox files no owner will take and the endings of pods the runtime no longer lists (both judged
 *   only with a runtime listing), idle hand-off logs.
 */
import { hostname } from 'node:os';
import type { PodWorkers, PodWorkerSync, V1Pod } from '../engine/types.js';
import { podFullName } from '../engine/pod-kinds.js';
import type { Logger, SessionOptions, SyncKnownCallOptions, SyncKnownResult } from '../domain/session-api.js';
import type { Store } from '../store/index.js';
import { sessionTransition } from '../store/timeline.js';
import type { PodMemory } from './memory.js';
import type { Ownership } from './ownership.js';
import type { Persistence } from './persistence.js';
import { isRunningSomething } from './pod-views.js';
import { RECENT_LISTING_MS } from './seams.js';
import type { PodView } from './view.js';
import { driveToCompletion } from './waits.js';

/** Released leases of forgotten pods are deleted by sync-known after this long. */
const RELEASED_LEASE_RETENTION_MS = 60 * 60 * 1000;
/** Hand-off logs not written for this long are deleted by housekeeping. */
const HAND_OFF_LOG_RETENTION_MS = 24 * 60 * 60 * 1000;

export interface SyncKnownDeps {
  store: Pick<Store, 'checkpoints' | 'leases' | 'inbox' | 'layout' | 'ended'>;
  engine: Pick<PodWorkers, 'snapshot' | 'subscribe' | 'syncKnownPods' | 'updatePod'>;
  view: Pick<PodView, 'runtimeIndex'>;
  ownership: Pick<Ownership, 'adopt' | 'holds'>;
  memory: PodMemory;
  persistence: Pick<Persistence, 'flush'>;
  now: () => number;
  pid: number;
  log: Logger;
  closed: () => boolean;
  desiredPods: () => Promise<V1Pod[]>;
}

/** The engine's SyncKnownPods, noting the pods it forgets. */
function syncKnownPods(engine: SyncKnownDeps['engine'], desired: V1Pod[], forgotten: Set<string>): Map<string, PodWorkerSync> {
  const unsubscribe = engine.subscribe((event) => {
    if (event.type === 'forgotten') forgotten.add(event.uid);
  });
  try {
    return engine.syncKnownPods(desired);
  } finally {
    unsubscribe();
  }
}

export async function syncKnown(deps: SyncKnownDeps, desired: V1Pod[] | undefined, options?: SyncKnownCallOptions): Promise<SyncKnownResult> {
  const { store, engine, ownership } = deps;
  const signal = options?.signal;
  signal?.throwIfAborted();
  const desiredPods = desired ?? (await deps.desiredPods());
  const desiredUids = new Set(desiredPods.map((p) => p.metadata?.uid).filter((u): u is string => !!u));
  const runtime = await deps.view.runtimeIndex(0, signal);
  const [stored, leaseViews] = await Promise.all([store.checkpoints.readAll(), store.leases.inspectAll()]);

  // 1. Resume pods whose owner is gone (or released them), from their checkpoints.
  const resumed: string[] = [];
  for (const [uid, checkpoint] of stored) {
    if (ownership.holds(uid)) continue;
    if (leaseViews.get(uid)?.alive) continue;
    signal?.throwIfAborted();
    if ((await ownership.adopt(uid, 'sync-known')) && !checkpoint.status.finished) resumed.push(uid);
  }
  signal?.throwIfAborted();

  // 2. The engine's housekeeping: forget finished orphans, drive unfinished orphans on.
  const forgotten = new Set<string>();
  let workers = syncKnownPods(engine, desiredPods, forgotten);

  // 3. Runtime pods still running that no worker (here or in a live process) knows: kill them.
  const orphanedRuntimePods: string[] = [];
  const snapshot = engine.snapshot();
  for (const [uid, pod] of runtime) {
    if (desiredUids.has(uid) || snapshot.has(uid) || !isRunningSomething(pod.status)) continue;
    if (leaseViews.get(uid)?.alive && !ownership.holds(uid)) continue;
    if (!(await ownership.adopt(uid, 'sync-known'))) continue;
    if (engine.snapshot().has(uid)) continue; // restored from a checkpoint after all
    engine.updatePod({ updateType: 'kill', startTime: deps.now(), runningPod: pod.runningPod });
    deps.memory.record(deps.memory.ownedPod(uid, podFullName(pod.name, pod.namespace)), sessionTransition('orphan-killed', 'runtime pod unknown to any worker: terminating', deps.now(), deps.pid));
    orphanedRuntimePods.push(uid);
  }
  await deps.persistence.flush().catch(() => {});
  signal?.throwIfAborted();

  // 4. Drive what this sync started to completion (bounded), then forget what finished.
  if (options?.wait !== false) await driveToCompletion({ engine, holds: (uid) => ownership.holds(uid), now: deps.now, closed: deps.closed }, signal);
  signal?.throwIfAborted();
  workers = syncKnownPods(engine, desiredPods, forgotten);
  await deps.persistence.flush().catch(() => {});
  await sweepStateDir(deps);
  return { workers, orphanedRuntimePods, resumed, forgotten: [...forgotten] };
}

/**
 * Housekeeping, so the state dir does not grow forever: the leases of pods long gone (no
 * checkpoint; released, or their owner dead for an hour), inbox files no owner will take (not
 * requests, or requests for pods that no longer exist, an hour old), the endings of pods the
 * runtime no longer lists, hand-off logs idle for a day.
 */
async function sweepStateDir(deps: SyncKnownDeps): Promise<void> {
  const { store } = deps;
  try {
    const withCheckpoint = new Set(await store.checkpoints.uids());
    await store.leases.sweepReleased(RELEASED_LEASE_RETENTION_MS, (uid) => withCheckpoint.has(uid));
    const withLease = await store.leases.uids();
    const inRuntime = await deps.view.runtimeIndex(RECENT_LISTING_MS).catch(() => undefined);
    // without a runtime listing no request is judged orphaned
    if (inRuntime) {
      await store.inbox.sweepUnknown(RELEASED_LEASE_RETENTION_MS, (uid) => withCheckpoint.has(uid) || withLease.has(uid) || inRuntime.has(uid));
      for (const uid of await store.ended.uids()) if (!inRuntime.has(uid)) await store.ended.remove(uid);
    }
    const { sweepHandOffLogs } = await import('./hand-off.js');
    await sweepHandOffLogs(store.layout.root, HAND_OFF_LOG_RETENTION_MS, deps.now());
  } catch (error) {
    deps.log('debug', `state dir housekeeping: ${(error as Error).message}`);
  }
}

/** The desired pods the API server lists for this node (sync-known's `api` source). */
export async function desiredPodsFromApi(options: Pick<SessionOptions, 'kubeconfig' | 'node' | 'rpcTimeoutMs'>): Promise<V1Pod[]> {
  const kube = await import('../kube/index.js');
  const source = kube.detectKube(options.kubeconfig);
  if (!source) {
    throw new Error('no API server configured for desired pods: pass --kubeconfig, or --desired FILE / --desired-from runtime');
  }
  const client = await kube.connectKube(source, { node: options.node ?? hostname(), ...(options.rpcTimeoutMs ? { timeoutMs: options.rpcTimeoutMs } : {}) });
  return client.listNodePods();
}
