/** Shared fixtures for store tests: temporary state dirs and well-formed checkpoints. */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PodSyncStatusView, V1Pod } from '../../../src/engine/types.js';
import type { PodCheckpoint } from '../../../src/store/format.js';

export async function tempDir(prefix = 'podctl-store-'): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) };
}

/**
 * The temporary files of a store folder: in its temporary folder (`.tmp/`, where writes are
 * prepared) and any hidden file beside its files (where earlier versions prepared them).
 */
export async function temporariesIn(folder: string): Promise<string[]> {
  const beside = (await readdir(folder)).filter((n) => n.startsWith('.') && n !== '.tmp');
  const inside = (await readdir(join(folder, '.tmp')).catch(() => [])).map((n) => join('.tmp', n));
  return [...beside, ...inside];
}

/** A store folder's own entries (its temporary folder and temporaries left out). */
export async function entriesOf(folder: string): Promise<string[]> {
  return (await readdir(folder)).filter((n) => !n.startsWith('.')).sort();
}

export function podFor(uid: string, name = `pod-${uid.slice(0, 6)}`, namespace = 'default'): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { uid, name, namespace, labels: { app: 'x' }, annotations: { 'kubernetes.io/config.source': 'api' } },
    spec: { containers: [{ name: 'c', image: 'pause' }], terminationGracePeriodSeconds: 30 },
  };
}

export function statusFor(uid: string, overrides: Partial<PodSyncStatusView> = {}): PodSyncStatusView {
  const pod = podFor(uid);
  return {
    uid,
    fullname: `${pod.metadata!.name}_${pod.metadata!.namespace}`,
    working: false,
    syncedAt: 1_700_000_000_000,
    startedAt: 1_700_000_000_000,
    terminatingAt: 1_700_000_001_000,
    gracePeriod: 12,
    startedTerminating: true,
    deleted: false,
    evicted: true,
    finished: false,
    restartRequested: false,
    observedRuntime: true,
    activeUpdate: { updateType: 'kill', startTime: 1_700_000_000_500, pod, killPodOptions: { evict: true, gracePeriodSecondsOverride: 12 } },
    pendingUpdate: {
      updateType: 'kill',
      runningPod: { id: uid, name: 'p', namespace: 'default', containers: [{ id: 'c1', name: 'c', state: 'running' }], sandboxes: [{ id: 's1', state: 'ready' }] },
    },
    ...overrides,
  };
}

export function checkpointFor(uid: string, overrides: Partial<PodCheckpoint> = {}): PodCheckpoint {
  const status = statusFor(uid);
  return {
    uid,
    namespace: 'default',
    name: `pod-${uid.slice(0, 6)}`,
    status,
    since: 1_700_000_001_000,
    history: [
      { at: 1_700_000_001_000, type: 'state-changed', detail: 'sync → terminating', pid: 42 },
      { at: 1_700_000_001_500, type: 'grace-shortened', detail: 'grace 30s → 12s', pid: 43 },
    ],
    lastError: { message: 'terminating: StopContainer: DeadlineExceeded', at: 1_700_000_002_000, retryAt: 1_700_000_012_000 },
    writtenAt: 1_700_000_002_000,
    writerPid: 43,
    ...overrides,
  };
}
