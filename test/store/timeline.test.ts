import { describe, expect, it } from 'vitest';
import { lastErrorAfter, transitionOf } from '../../src/store/timeline.js';
import type { PodWorkerEvent } from '../../src/engine/types.js';

const base = { uid: 'u', fullname: 'n_ns', at: 1_000 };

describe('timeline', () => {
  it('records transitions operators need and leaves routine syncs out', () => {
    const shortened: PodWorkerEvent = { ...base, type: 'grace-shortened', from: 30, to: 5 };
    expect(transitionOf(shortened, 7)).toEqual({ at: 1_000, type: 'grace-shortened', detail: 'grace 30s → 5s', pid: 7 });
    expect(transitionOf({ ...base, type: 'state-changed', from: 'sync', to: 'terminating' }, 7)?.detail).toBe('sync → terminating');
    expect(transitionOf({ ...base, type: 'sync-started', phase: 'terminating' }, 7)).toBeUndefined();
    expect(transitionOf({ ...base, type: 'sync-succeeded', phase: 'sync' }, 7)).toBeUndefined();
    expect(transitionOf({ ...base, type: 'requeued', delayMs: 60_000, reason: 'resync' }, 7)).toBeUndefined();
    expect(transitionOf({ ...base, type: 'update-queued', updateType: 'kill' }, 7)?.detail).toBe('kill queued');
  });

  it('keeps the last runtime error with its retry time until a sync succeeds', () => {
    const failed: PodWorkerEvent = { ...base, type: 'sync-failed', phase: 'terminating', error: 'StopContainer: DeadlineExceeded', retryInMs: 10_000 };
    const error = lastErrorAfter(undefined, failed);
    expect(error).toEqual({ message: 'terminating: StopContainer: DeadlineExceeded', at: 1_000, retryAt: 11_000 });
    expect(lastErrorAfter(error, { ...base, type: 'state-changed', from: 'sync', to: 'terminating' })).toBe(error);
    expect(lastErrorAfter(error, { ...base, at: 2_000, type: 'sync-succeeded', phase: 'terminating' })).toEqual({
      message: 'terminating: StopContainer: DeadlineExceeded',
      at: 1_000,
    });
  });

  it('a cancelled sync (grace shortened) is not a runtime error', () => {
    const cancelled: PodWorkerEvent = { ...base, type: 'sync-failed', phase: 'terminating', error: 'aborted', retryInMs: 10_000, aborted: true };
    expect(lastErrorAfter(undefined, cancelled)).toBeUndefined();
    expect(transitionOf(cancelled, 1)?.detail).toBe('terminating sync cancelled (new intent: re-running at once)');
  });
});
