/**
 * Transition events: emitted synchronously, in order, stamped with the engine's clock; listeners
 * can come and go and a throwing listener breaks nothing.
 */
import { describe, expect, it } from 'vitest';
import type { PodWorkerEvent } from '../../src/engine/types.js';
import { SECOND, createHarness, newNamedPod, runningPod } from './harness.js';

const kinds = (events: PodWorkerEvent[]): string[] =>
  events.map((e) => {
    switch (e.type) {
      case 'state-changed':
        return `state ${e.from}→${e.to}`;
      case 'sync-started':
      case 'sync-succeeded':
        return `${e.type} ${e.phase}`;
      case 'requeued':
        return `requeued ${e.reason}`;
      case 'update-queued':
        return `queued ${e.updateType}`;
      default:
        return e.type;
    }
  });

describe('transition events', () => {
  it('follow a pod from create to forgotten, in order', async () => {
    const h = createHarness();
    const pod = newNamedPod('e', 'ns', 'evented', false);
    h.workers.updatePod({ updateType: 'create', pod });
    expect(kinds(h.events)).toEqual(['state new→sync', 'queued create']); // synchronous
    await h.workers.whenIdle();
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 9 } });
    await h.workers.whenIdle();
    h.workers.syncKnownPods([]);
    expect(kinds(h.events)).toEqual([
      'state new→sync',
      'queued create',
      'sync-started sync',
      'sync-succeeded sync',
      'requeued resync',
      'state sync→terminating',
      'termination-requested',
      'queued kill',
      'sync-started terminating',
      'sync-succeeded terminating',
      'state terminating→terminated',
      'requeued replay',
      'requeued phase-change',
      'sync-started terminated',
      'sync-succeeded terminated',
      'finished',
      'forgotten',
    ]);
    expect(h.events.find((e) => e.type === 'termination-requested')).toEqual({
      type: 'termination-requested',
      uid: 'e',
      fullname: 'evented_ns',
      at: 1 * SECOND,
      gracePeriod: 9,
      evicted: false,
      deleted: false,
    });
    for (const e of h.events) expect(e.uid).toBe('e');
  });

  it('are stamped with the engine clock', async () => {
    const h = createHarness();
    h.clock.t = 42 * SECOND;
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('c', 'ns', 'c', false) });
    await h.workers.whenIdle();
    expect(new Set(h.events.map((e) => e.at))).toEqual(new Set([42 * SECOND]));
  });

  it('report restarts, grace shortening and runtime-only pods', async () => {
    const h = createHarness();
    const pod = newNamedPod('g', 'ns', 'g', false);
    h.hold('g');
    h.workers.updatePod({ updateType: 'kill', pod });
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 2 } });
    h.workers.updatePod({ updateType: 'create', pod });
    expect(h.events.filter((e) => e.type === 'grace-shortened')).toEqual([{ type: 'grace-shortened', uid: 'g', fullname: 'g_ns', at: SECOND, from: 30, to: 2 }]);
    expect(h.events.at(-1)).toMatchObject({ type: 'restart-requested', uid: 'g' });
    h.release('g');
    await h.workers.whenIdle();

    h.events.length = 0;
    h.workers.updatePod({ updateType: 'kill', runningPod: runningPod('r', 'orphan', 'ns') });
    await h.workers.whenIdle();
    expect(kinds(h.events)).toEqual([
      'state new→terminating',
      'termination-requested',
      'queued kill',
      'sync-started terminating-runtime',
      'sync-succeeded terminating-runtime',
      'state terminating→terminated',
      'finished',
      'forgotten',
    ]);
  });

  it('reach late subscribers only, stop after unsubscribe, and survive a throwing listener', async () => {
    const h = createHarness();
    const seen: string[] = [];
    h.workers.subscribe(() => {
      throw new Error('bad listener');
    });
    const off = h.workers.subscribe((e) => seen.push(e.type));
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('s', 'ns', 's', false) });
    await h.workers.whenIdle();
    off();
    h.workers.updatePod({ updateType: 'kill', pod: newNamedPod('s', 'ns', 's', false) });
    await h.workers.whenIdle();
    expect(seen).toEqual(['state-changed', 'update-queued', 'sync-started', 'sync-succeeded', 'requeued']);
    expect(h.workers.statusOf('s')!.finished).toBe(true);
  });

  it('report failures with the error, the retry delay and whether the sync was aborted', async () => {
    const h = createHarness({ backOffPeriodMs: 10_000 });
    h.syncer.onSyncPod = () => {
      throw new Error('image pull failed');
    };
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('f', 'ns', 'f', false) });
    await h.workers.whenIdle();
    const failed = h.events.find((e) => e.type === 'sync-failed');
    expect(failed).toMatchObject({ type: 'sync-failed', phase: 'sync', error: 'image pull failed', aborted: false });
    const requeued = h.events.find((e) => e.type === 'requeued');
    expect(requeued).toMatchObject({ reason: 'backoff' });
    expect((failed as { retryInMs: number }).retryInMs).toBe((requeued as { delayMs: number }).delayMs);
  });
});
