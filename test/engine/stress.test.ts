/**
 * Randomised interleavings (seeded, deterministic): updates, kills with shrinking and growing grace
 * overrides, deletions, restarts and syncKnownPods race against a syncer that finishes after a
 * random number of turns, fails, or honours aborts. After every step and at the end, the engine's
 * invariants must hold:
 * - lifecycle only moves forward per record (sync → terminating → terminated → finished);
 * - a decided grace period never grows while the record lives;
 * - at most one syncer call per UID at any time;
 * - every onComplete is called at most once, and once every pod is finished, exactly once;
 * - every pod can be driven to finished.
 */
import { describe, expect, it } from 'vitest';
import type { PodWorkerState } from '../../src/engine/types.js';
import { createHarness, newNamedPod, withDeletionTimestamp } from './harness.js';
import { seededRandom } from '../support/random.js';

const rng = seededRandom;

const ORDER: Record<PodWorkerState, number> = { sync: 0, terminating: 1, terminated: 2 };

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await Promise.resolve();
}

describe('randomised interleavings keep the invariants', () => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    it(`seed ${seed}`, async () => {
      const random = rng(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
      const h = createHarness();
      const uids = ['a', 'b', 'c', 'd', 'e'];
      const inFlight = new Map<string, number>();
      let maxInFlight = 0;
      const behave = async (uid: string, signal: AbortSignal): Promise<void> => {
        const n = (inFlight.get(uid) ?? 0) + 1;
        inFlight.set(uid, n);
        maxInFlight = Math.max(maxInFlight, n);
        try {
          const hops = Math.floor(random() * 6);
          for (let i = 0; i < hops; i++) {
            if (signal.aborted) throw signal.reason;
            await Promise.resolve();
          }
          if (signal.aborted) throw signal.reason;
          if (random() < 0.15) throw new Error('transient runtime error');
        } finally {
          inFlight.set(uid, inFlight.get(uid)! - 1);
        }
      };
      h.syncer.onSyncPod = behave;
      h.syncer.onTerminating = behave;
      h.syncer.onTerminated = behave;

      // lifecycle monotonicity and grace from the event stream
      const state = new Map<string, PodWorkerState | 'new'>();
      const violations: string[] = [];
      h.workers.subscribe((e) => {
        if (e.type === 'forgotten') state.delete(e.uid);
        if (e.type === 'state-changed') {
          const current = state.get(e.uid) ?? 'new';
          if (current !== e.from) violations.push(`${e.uid}: state-changed from ${e.from} while ${current}`);
          if (e.from !== 'new' && ORDER[e.to] <= ORDER[e.from]) violations.push(`${e.uid}: ${e.from} → ${e.to}`);
          state.set(e.uid, e.to);
        }
        if (e.type === 'grace-shortened' && e.to >= e.from) violations.push(`${e.uid}: grace ${e.from} → ${e.to}`);
      });
      const lastGrace = new Map<string, number>();
      const checkGrace = (): void => {
        for (const uid of uids) {
          const view = h.workers.statusOf(uid);
          if (view === undefined) {
            lastGrace.delete(uid);
            continue;
          }
          const before = lastGrace.get(uid) ?? 0;
          if (before > 0 && view.gracePeriod > before) violations.push(`${uid}: grace grew ${before} → ${view.gracePeriod}`);
          if (view.finished && view.terminatedAt === undefined) violations.push(`${uid}: finished but not terminated`);
          if (view.terminatedAt !== undefined && view.terminatingAt === undefined) violations.push(`${uid}: terminated without terminating`);
          lastGrace.set(uid, view.gracePeriod);
        }
      };

      const completions: number[] = [];
      const kill = (uid: string, extra: { grace?: number; evict?: boolean } = {}): void => {
        const idx = completions.push(0) - 1;
        h.workers.updatePod({
          updateType: 'kill',
          pod: newNamedPod(uid, 'ns', uid, false),
          killPodOptions: { onComplete: () => completions[idx]!++, gracePeriodSecondsOverride: extra.grace, evict: extra.evict },
        });
      };

      for (let step = 0; step < 300; step++) {
        const uid = pick(uids);
        const op = random();
        if (op < 0.3) h.workers.updatePod({ updateType: pick(['create', 'update', 'sync'] as const), pod: newNamedPod(uid, 'ns', uid, false) });
        else if (op < 0.55) kill(uid, { grace: random() < 0.7 ? 1 + Math.floor(random() * 40) : undefined, evict: random() < 0.3 });
        else if (op < 0.65) h.workers.updatePod({ updateType: 'update', pod: withDeletionTimestamp(newNamedPod(uid, 'ns', uid, false), 0, Math.floor(random() * 30)) });
        else if (op < 0.75) h.workers.syncKnownPods(uids.filter(() => random() < 0.7).map((u) => newNamedPod(u, 'ns', u, false)));
        else if (op < 0.8) h.clock.tick(1000);
        checkGrace();
        await turns(Math.floor(random() * 4));
        checkGrace();
      }

      // drive everything to the end: kill all, re-deliver after failures, forget and repeat
      for (let round = 0; round < 50; round++) {
        await h.workers.whenIdle();
        const open = uids.filter((u) => {
          const v = h.workers.statusOf(u);
          return v !== undefined && !v.finished;
        });
        if (open.length === 0) break;
        for (const uid of open) {
          const v = h.workers.statusOf(uid)!;
          if (v.terminatingAt === undefined) kill(uid);
          else h.workers.updatePod({ updateType: 'sync', pod: newNamedPod(uid, 'ns', uid, false) });
        }
        checkGrace();
      }
      await h.workers.whenIdle();

      // the run exercised the races it is meant to: aborted syncs, shortened graces, restarts, forgetting
      const count = (type: string, aborted?: boolean): number => h.events.filter((e) => e.type === type && (aborted === undefined || (e as { aborted?: boolean }).aborted === aborted)).length;
      expect(count('sync-failed', true)).toBeGreaterThan(0);
      expect(count('sync-failed', false)).toBeGreaterThan(0);
      expect(count('grace-shortened')).toBeGreaterThan(0);
      expect(count('restart-requested')).toBeGreaterThan(0);
      expect(count('forgotten')).toBeGreaterThan(0);
      expect(violations).toEqual([]);
      expect(maxInFlight).toBe(1);
      for (const uid of uids) {
        const v = h.workers.statusOf(uid);
        if (v !== undefined) expect(v.finished).toBe(true);
      }
      // every pod is finished or forgotten: every kill completed, exactly once
      expect(completions.filter((c) => c !== 1)).toEqual([]);
      await h.workers.close();
    });
  }
});
