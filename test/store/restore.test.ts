/**
 * Restore scenarios through the checkpoint: a worker's status is written by one engine, read back
 * through the on-disk format, and restored into a fresh engine, which must keep every invariant.
 */
import { describe, expect, it } from 'vitest';
import { createPodWorkers } from '../../src/engine/index.js';
import type { PodStatus, PodSyncer, PodSyncStatusView, PodWorkers, V1Pod } from '../../src/engine/types.js';
import { decodeCheckpoint, encodeCheckpoint, type PodCheckpoint } from '../../src/store/format.js';

interface Call {
  op: 'sync' | 'terminating' | 'terminating-runtime' | 'terminated';
  uid: string;
  grace?: number;
}

function pod(uid: string, grace = 30): V1Pod {
  return {
    metadata: { uid, name: `n-${uid}`, namespace: 'ns', annotations: { 'kubernetes.io/config.source': 'api' } },
    spec: { containers: [{ name: 'c' }], terminationGracePeriodSeconds: grace },
  };
}

function running(uid: string, isRunning: boolean): PodStatus {
  return {
    id: uid,
    name: `n-${uid}`,
    namespace: 'ns',
    containerStatuses: [{ id: 'c', name: 'c', state: isRunning ? 'running' : 'exited' }],
    sandboxStatuses: [{ id: 's', state: isRunning ? 'ready' : 'notready' }],
  };
}

/** An engine whose terminations block until released, recording every call. */
function harness(options: { blockTerminating?: boolean } = {}) {
  const calls: Call[] = [];
  const live = new Map<string, boolean>();
  const callListeners: (() => void)[] = [];
  /** Resolves once `count` syncTerminatingPod calls were made. */
  const terminatingCalls = async (count: number): Promise<void> => {
    while (calls.filter((c) => c.op === 'terminating').length < count) await new Promise<void>((r) => callListeners.push(r));
  };
  const syncer: PodSyncer = {
    syncPod: async (_s, _t, p) => {
      calls.push({ op: 'sync', uid: p.metadata!.uid! });
      live.set(p.metadata!.uid!, true);
      return false;
    },
    syncTerminatingPod: async (signal, p, _status, grace) => {
      calls.push({ op: 'terminating', uid: p.metadata!.uid!, grace });
      for (const notify of callListeners.splice(0)) notify();
      if (options.blockTerminating) {
        // Blocks until the attempt is aborted (a shorter grace, or the engine closing).
        await new Promise<void>((_resolve, reject) => {
          if (signal.aborted) return reject(signal.reason);
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        });
      }
      live.set(p.metadata!.uid!, false);
    },
    syncTerminatingRuntimePod: async (_s, rp) => {
      calls.push({ op: 'terminating-runtime', uid: rp.id });
    },
    syncTerminatedPod: async (_s, p) => {
      calls.push({ op: 'terminated', uid: p.metadata!.uid! });
    },
  };
  const engine = createPodWorkers({
    syncer,
    cache: {
      get: (uid) => running(uid, live.get(uid) ?? true),
      getNewerThan: async (uid) => running(uid, live.get(uid) ?? true),
    },
  });
  return { engine, calls, terminatingCalls };
}

/** Writes the view through the checkpoint format and reads it back. */
function throughDisk(view: PodSyncStatusView): PodSyncStatusView {
  const checkpoint: PodCheckpoint = { uid: view.uid, namespace: 'ns', name: 'n', status: view, since: 1, history: [], writtenAt: 1, writerPid: 1 };
  const decoded = decodeCheckpoint(encodeCheckpoint(checkpoint), view.uid);
  if (decoded.kind !== 'ok') throw new Error(decoded.reason);
  return decoded.checkpoint.status;
}

async function settle(engine: PodWorkers): Promise<void> {
  await engine.whenIdle();
}

describe('restore from a checkpoint', () => {
  it('a finished pod stays finished: no sync at all, forgotten by syncKnownPods', async () => {
    const a = harness();
    a.engine.updatePod({ updateType: 'create', pod: pod('f') });
    await settle(a.engine);
    a.engine.updatePod({ updateType: 'kill', pod: pod('f'), killPodOptions: { gracePeriodSecondsOverride: 3 } });
    await settle(a.engine);
    const view = a.engine.snapshot().get('f')!;
    expect(view.finished).toBe(true);
    await a.engine.close();

    const b = harness();
    b.engine.restore([throughDisk(view)]);
    await settle(b.engine);
    expect(b.calls).toEqual([]);
    expect(b.engine.snapshot().get('f')?.finished).toBe(true);
    b.engine.updatePod({ updateType: 'kill', pod: pod('f') });
    await settle(b.engine);
    expect(b.calls).toEqual([]);
    expect(b.engine.syncKnownPods([]).has('f')).toBe(false);
    await b.engine.close();
  });

  it('a terminating pod continues with its remembered (shortened) grace, never the longer spec', async () => {
    const a = harness({ blockTerminating: true });
    a.engine.updatePod({ updateType: 'create', pod: pod('t', 30) });
    await settle(a.engine);
    a.engine.updatePod({ updateType: 'kill', pod: pod('t', 30), killPodOptions: { gracePeriodSecondsOverride: 8 } });
    await a.terminatingCalls(1);
    a.engine.updatePod({ updateType: 'kill', pod: pod('t', 30), killPodOptions: { gracePeriodSecondsOverride: 4 } });
    await a.terminatingCalls(2);
    expect(a.calls.filter((c) => c.op === 'terminating').map((c) => c.grace)).toEqual([8, 4]);
    const view = a.engine.snapshot().get('t')!;
    expect(view.gracePeriod).toBe(4);
    expect(view.terminatingAt).toBeDefined();
    await a.engine.close(); // the process dies mid-termination

    const b = harness();
    b.engine.restore([throughDisk(view)]);
    await settle(b.engine);
    const terminating = b.calls.filter((c) => c.op === 'terminating');
    expect(terminating.length).toBeGreaterThan(0);
    expect(terminating.every((c) => c.grace !== undefined && c.grace <= 4)).toBe(true);
    expect(b.calls.some((c) => c.op === 'sync')).toBe(false);
    expect(b.engine.snapshot().get('t')).toMatchObject({ finished: true, gracePeriod: 4 });
    await b.engine.close();
  });

  it('a terminated (not finished) pod only runs the terminated step', async () => {
    const view: PodSyncStatusView = {
      uid: 'd',
      fullname: 'n-d_ns',
      working: true,
      syncedAt: 1_000,
      startedAt: 1_000,
      terminatingAt: 2_000,
      terminatedAt: 3_000,
      gracePeriod: 5,
      startedTerminating: true,
      deleted: false,
      evicted: false,
      finished: false,
      restartRequested: false,
      observedRuntime: true,
      activeUpdate: { updateType: 'kill', pod: pod('d'), killPodOptions: { gracePeriodSecondsOverride: 5 } },
    };
    const b = harness();
    b.engine.restore([throughDisk(view)]);
    await settle(b.engine);
    expect(b.calls.map((c) => c.op)).toEqual(['terminated']);
    expect(b.engine.snapshot().get('d')?.finished).toBe(true);
    await b.engine.close();
  });

  it('an orphan restored in terminating is driven on by syncKnownPods', async () => {
    const a = harness({ blockTerminating: true });
    a.engine.updatePod({ updateType: 'create', pod: pod('o', 6) });
    await settle(a.engine);
    a.engine.updatePod({ updateType: 'kill', pod: pod('o', 6) });
    await a.terminatingCalls(1);
    const view = a.engine.snapshot().get('o')!;
    await a.engine.close();

    const b = harness();
    b.engine.restore([throughDisk(view)]);
    const known = b.engine.syncKnownPods([]);
    expect(known.get('o')).toMatchObject({ orphan: true });
    await settle(b.engine);
    expect(b.calls.filter((c) => c.op === 'terminating').every((c) => (c.grace ?? 99) <= 6)).toBe(true);
    expect(b.engine.snapshot().get('o')?.finished).toBe(true);
    expect(b.engine.syncKnownPods([]).has('o')).toBe(false);
    await b.engine.close();
  });

  it('a pod in sync is tracked and only acts on its next update', async () => {
    const a = harness();
    a.engine.updatePod({ updateType: 'create', pod: pod('s') });
    await settle(a.engine);
    const view = a.engine.snapshot().get('s')!;
    await a.engine.close();

    const b = harness();
    b.engine.restore([throughDisk(view)]);
    await settle(b.engine);
    expect(b.calls).toEqual([]);
    expect(b.engine.snapshot().has('s')).toBe(true);
    b.engine.updatePod({ updateType: 'kill', pod: pod('s'), killPodOptions: { gracePeriodSecondsOverride: 2 } });
    await settle(b.engine);
    expect(b.calls.map((c) => c.op)).toEqual(['terminating', 'terminated']);
    await b.engine.close();
  });
});
