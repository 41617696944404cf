/**
 * The write-ahead hold (engine/workers.ts): when `beforeWorkerWakes` answers false — the session
 * could not make the pod's intent durable — the worker does nothing for that update, the pod is not
 * working, and the same update is tried again after the back-off; once durable, it runs.
 */
import { describe, expect, it } from 'vitest';
import type { PodWorkerEvent } from '../../src/engine/types.js';
import { PodWorkerEngine } from '../../src/engine/workers.js';
import { FakeCache, RecordingSyncer, newNamedPod } from './harness.js';
import { until } from '../support/wait.js';

describe('write-ahead hold', () => {
  it('acts on nothing until the intent is durable, then runs the held update', async () => {
    const syncer = new RecordingSyncer();
    const cache = new FakeCache();
    let durable = false;
    const asked: string[] = [];
    const events: PodWorkerEvent[] = [];
    const workers = new PodWorkerEngine({
      syncer,
      cache,
      backOffPeriodMs: 30,
      onEvent: (e) => events.push(e),
      beforeWorkerWakes: (uid) => {
        asked.push(uid);
        return durable;
      },
    });
    try {
      const pod = newNamedPod('p', 'ns', 'p', false);
      workers.updatePod({ updateType: 'create', pod });
      await workers.whenIdle();
      // held: no sync ran, the update is still pending, the pod is not working
      expect(syncer.processed.has('p')).toBe(false);
      expect(workers.statusOf('p')!.pendingUpdate?.updateType).toBe('create');
      expect(workers.statusOf('p')!.working).toBe(false);
      expect(events.filter((e) => e.type === 'requeued').map((e) => (e as { reason: string }).reason)).toEqual(['write-ahead']);
      // a kill while held: still nothing reaches the runtime, and the intent is recorded
      workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 5 } });
      await workers.whenIdle();
      expect(syncer.processed.has('p')).toBe(false);
      expect(workers.isPodTerminationRequested('p')).toBe(true);
      const retriesBefore = asked.length;
      // the back-off retries it (without a new update)
      await new Promise((r) => setTimeout(r, 120));
      expect(asked.length).toBeGreaterThan(retriesBefore);
      expect(syncer.processed.has('p')).toBe(false);
      durable = true;
      await until('p known terminated', () => workers.isPodKnownTerminated('p'), { timeoutMs: 2_000, everyMs: 20 });
      expect(syncer.processed.get('p')!.length).toBeGreaterThan(0);
    } finally {
      await workers.close();
    }
  });

  it('a throwing seam is ignored: the worker goes on', async () => {
    const syncer = new RecordingSyncer();
    const workers = new PodWorkerEngine({
      syncer,
      cache: new FakeCache(),
      beforeWorkerWakes: () => {
        throw new Error('seam failed');
      },
    });
    try {
      workers.updatePod({ updateType: 'create', pod: newNamedPod('q', 'ns', 'q', false) });
      await workers.whenIdle();
      expect(syncer.processed.has('q')).toBe(true);
    } finally {
      await workers.close();
    }
  });
});
