/**
 * Conformance by invariants: seeded random sequences of updatePod / syncKnownPods (static pods
 * sharing a full name, runtime-only kills, deletions, evictions, grace overrides, terminal phases,
 * transient syncer failures, random interleavings with the workers), checking the rules the
 * reference guarantees whatever the order of events:
 * - per pod, at most one syncer call in flight;
 * - per pod incarnation, the lifecycle only moves forward: syncPod → syncTerminatingPod →
 *   syncTerminatedPod, nothing after syncTerminatedPod succeeded;
 * - the grace period (status and what syncTerminatingPod receives) never grows;
 * - two static pods with one full name never run at the same time;
 * - every onComplete is called at most once, and for every pod that reached terminated;
 * - SyncKnownPods([]) repeated drives everything to completion and forgets it.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { UpdatePodOptions } from '../../../src/engine/index.js';
import { createHarness, newNamedPod, runningPod } from '../harness.js';
import { seededRandom } from '../../support/random.js';

const mulberry32 = seededRandom;

const RANK = { none: 0, sync: 1, terminating: 2, terminated: 3, done: 4 } as const;
type Phase = keyof typeof RANK;

const SPEC_UIDS = ['a', 'b', 'c'];
const STATIC_UIDS = ['s1', 's2', 's3']; // one full name: st_ns
const RUNTIME_UIDS = ['r1', 'r2'];

async function runScenario(seed: number, steps: number): Promise<string[]> {
  const rand = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const violations: string[] = [];
  const h = createHarness();
  const { workers, syncer } = h;

  const phase = new Map<string, Phase>();
  const inFlight = new Map<string, number>();
  const lastGraceArg = new Map<string, number>();
  const lastGraceStatus = new Map<string, number>();
  let failing = true;
  const calls: Record<string, number> = {};
  let completionsSeen = 0;
  let staticStarts = 0;
  const shouldFail = () => failing && rand() < 0.1;
  const isStatic = (uid: string) => STATIC_UIDS.includes(uid);

  let inSurfaceCall = false;
  const totalCalls = new Map<string, number>();
  const enter = (uid: string, next: Phase, what: string) => {
    if (inSurfaceCall) violations.push(`${what} for ${uid} ran synchronously inside updatePod/syncKnownPods`);
    totalCalls.set(uid, (totalCalls.get(uid) ?? 0) + 1);
    if (totalCalls.get(uid)! > (h.wakes.get(uid) ?? 0)) violations.push(`${what} for ${uid} without a worker wake-up (beforeWorkerWakes)`);
    calls[next] = (calls[next] ?? 0) + 1;
    const n = (inFlight.get(uid) ?? 0) + 1;
    inFlight.set(uid, n);
    if (n > 1) violations.push(`${what} for ${uid} while another call is in flight`);
    const cur = phase.get(uid) ?? 'none';
    if (RANK[next] < RANK[cur] || cur === 'done') violations.push(`${what} for ${uid} after phase ${cur}`);
    if (next === 'sync' && isStatic(uid) && cur === 'none') {
      staticStarts++;
      for (const other of STATIC_UIDS) {
        const p = phase.get(other) ?? 'none';
        if (other !== uid && (p === 'sync' || p === 'terminating' || p === 'terminated')) {
          violations.push(`static ${uid} started while ${other} is ${p}`);
        }
      }
    }
    if (RANK[next] > RANK[cur]) phase.set(uid, next);
  };
  const leave = (uid: string) => inFlight.set(uid, (inFlight.get(uid) ?? 1) - 1);
  const turns = async (n: number) => {
    for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
  };

  syncer.syncPod = async (_signal, updateType, pod) => {
    const uid = pod.metadata!.uid!;
    enter(uid, 'sync', `syncPod(${updateType})`);
    if (workers.isPodKnownTerminated(uid)) violations.push(`syncPod for ${uid} while known terminated`);
    try {
      await turns(Math.floor(rand() * 3));
      if (shouldFail()) throw new Error('transient');
      return rand() < 0.05;
    } finally {
      leave(uid);
    }
  };
  syncer.syncTerminatingPod = async (_signal, pod, _status, grace) => {
    const uid = pod.metadata!.uid!;
    enter(uid, 'terminating', 'syncTerminatingPod');
    if (!workers.shouldPodContainersBeTerminating(uid)) violations.push(`syncTerminatingPod for ${uid} before termination was acknowledged`);
    if (isStatic(uid) && !workers.isPodForMirrorPodTerminatingByFullName('st_ns')) violations.push(`static ${uid} terminating but not reported by full name`);
    try {
      if (grace !== undefined) {
        const prev = lastGraceArg.get(uid);
        if (prev !== undefined && grace > prev) violations.push(`grace for ${uid} grew ${prev} → ${grace}`);
        lastGraceArg.set(uid, grace);
      }
      await turns(Math.floor(rand() * 3));
      if (shouldFail()) throw new Error('transient');
    } finally {
      leave(uid);
    }
  };
  syncer.syncTerminatingRuntimePod = async (_signal, rp) => {
    const n = (inFlight.get(rp.id) ?? 0) + 1;
    inFlight.set(rp.id, n);
    if (n > 1) violations.push(`runtime kill for ${rp.id} while another call is in flight`);
    try {
      await turns(Math.floor(rand() * 3));
      if (shouldFail()) throw new Error('transient');
    } finally {
      leave(rp.id);
    }
  };
  syncer.syncTerminatedPod = async (_signal, pod) => {
    const uid = pod.metadata!.uid!;
    enter(uid, 'terminated', 'syncTerminatedPod');
    try {
      await turns(Math.floor(rand() * 3));
      if (shouldFail()) throw new Error('transient');
      phase.set(uid, 'done');
    } finally {
      leave(uid);
    }
  };

  const completions = new Map<string, { uid: string; calls: number }>();
  let nextKill = 0;
  const podFor = (uid: string): V1Pod => {
    const p = newNamedPod(uid, 'ns', isStatic(uid) ? 'st' : uid, isStatic(uid));
    const r = rand();
    if (r < 0.08) {
      p.metadata!.deletionTimestamp = new Date(h.clock.now());
      if (rand() < 0.5) p.metadata!.deletionGracePeriodSeconds = Math.floor(rand() * 40);
    } else if (r < 0.12) {
      p.status = { phase: pick(['Succeeded', 'Failed']) };
    }
    return p;
  };

  const observe = () => {
    for (const uid of [...SPEC_UIDS, ...STATIC_UIDS, ...RUNTIME_UIDS]) {
      const s = workers.snapshot().get(uid);
      if (!s) {
        lastGraceStatus.delete(uid);
        continue;
      }
      if ((inFlight.get(uid) ?? 0) > 0 && !s.working) violations.push(`${uid} has a sync in flight but working is false`);
      const predicates = {
        isPodTerminationRequested: [workers.isPodTerminationRequested(uid), s.terminatingAt !== undefined],
        isPodKnownTerminated: [workers.isPodKnownTerminated(uid), s.terminatedAt !== undefined],
        couldHaveRunningContainers: [workers.couldHaveRunningContainers(uid), s.terminatedAt === undefined],
        shouldPodRuntimeBeRemoved: [workers.shouldPodRuntimeBeRemoved(uid), s.terminatedAt !== undefined],
        shouldPodContainersBeTerminating: [workers.shouldPodContainersBeTerminating(uid), s.startedTerminating],
        shouldPodBeFinished: [workers.shouldPodBeFinished(uid), s.finished],
        shouldPodContentBeRemoved: [workers.shouldPodContentBeRemoved(uid), s.evicted || (s.deleted && s.terminatedAt !== undefined)],
      };
      for (const [name, [got, want]] of Object.entries(predicates)) {
        if (got !== want) violations.push(`${name}(${uid}) = ${got} but the snapshot implies ${want}`);
      }
      if (s.terminatingAt !== undefined && s.gracePeriod > 0) {
        const prev = lastGraceStatus.get(uid);
        if (prev !== undefined && s.gracePeriod > prev) violations.push(`status grace for ${uid} grew ${prev} → ${s.gracePeriod}`);
        lastGraceStatus.set(uid, s.gracePeriod);
      }
      if (s.terminatedAt !== undefined) {
        for (const [id, c] of completions) {
          if (c.uid === uid && c.calls !== 1 && s.finished) violations.push(`onComplete ${id} for terminated ${uid} called ${c.calls} times`);
        }
      }
    }
    for (const [id, c] of completions) if (c.calls > 1) violations.push(`onComplete ${id} called ${c.calls} times`);
  };
  /** Pods the engine forgot start a new incarnation. */
  const forgetUntracked = () => {
    for (const uid of [...SPEC_UIDS, ...STATIC_UIDS]) {
      if (!workers.snapshot().has(uid)) {
        if ((inFlight.get(uid) ?? 0) === 0) {
          phase.delete(uid);
          lastGraceArg.delete(uid);
        }
        for (const [id, c] of completions) if (c.uid === uid) completions.delete(id);
      }
    }
  };

  for (let step = 0; step < steps; step++) {
    h.clock.tick(1000);
    const op = rand();
    try {
      if (op < 0.55) {
        const uid = pick([...SPEC_UIDS, ...STATIC_UIDS]);
        const updateType = pick(['create', 'update', 'sync', 'kill'] as const);
        const options: UpdatePodOptions = { updateType, pod: podFor(uid) };
        if (updateType === 'kill' || rand() < 0.1) {
          const id = `k${nextKill++}`;
          const entry = { uid, calls: 0 };
          completions.set(id, entry);
          completionsSeen++;
          options.killPodOptions = { onComplete: () => entry.calls++ };
          if (rand() < 0.5) options.killPodOptions.gracePeriodSecondsOverride = Math.floor(rand() * 40);
          if (rand() < 0.3) options.killPodOptions.evict = true;
        }
        inSurfaceCall = true;
        workers.updatePod(options);
        inSurfaceCall = false;
      } else if (op < 0.65) {
        const uid = pick(RUNTIME_UIDS);
        workers.updatePod({ updateType: 'kill', runningPod: runningPod(uid, uid, 'ns') });
      } else if (op < 0.75) {
        const desired = [...SPEC_UIDS, ...STATIC_UIDS].filter(() => rand() < 0.6).map((u) => podFor(u));
        inSurfaceCall = true;
        workers.syncKnownPods(desired);
        inSurfaceCall = false;
        forgetUntracked();
      } else if (op < 0.8) {
        const uid = pick([...SPEC_UIDS, ...STATIC_UIDS, ...RUNTIME_UIDS]);
        if (h.held().has(uid)) h.release(uid);
        else h.hold(uid);
      } else if (op < 0.9) {
        await turns(Math.floor(rand() * 4));
      } else {
        await h.drain();
      }
    } catch (e) {
      inSurfaceCall = false;
      violations.push(`step ${step} threw: ${(e as Error).message}`);
    }
    observe();
  }

  // wind down: no more failures; orphan everything until nothing is left
  failing = false;
  h.release(...h.held());
  for (let round = 0; round < 6 && workers.snapshot().size > 0; round++) {
    await h.drain();
    workers.syncKnownPods([]);
    forgetUntracked();
    observe();
    await h.drain();
  }
  if (workers.snapshot().size > 0) {
    violations.push(
      `not everything was driven to completion: ${JSON.stringify(
        [...workers.snapshot().values()].map((s) => ({
          fullname: s.fullname,
          working: s.working,
          terminatingAt: s.terminatingAt,
          terminatedAt: s.terminatedAt,
          finished: s.finished,
          pending: s.pendingUpdate?.updateType,
        })),
      )}`,
    );
  }
  if (process.env.CONFORMANCE_STATS) console.log('seed', seed, JSON.stringify(calls), 'static starts', staticStarts, 'kills with onComplete', completionsSeen);
  await workers.close();
  return violations;
}

describe('invariants under random event orders', () => {
  for (let seed = 1; seed <= 100; seed++) {
    it(`seed ${seed}`, async () => {
      const violations = await runScenario(seed, 150);
      expect(violations).toEqual([]);
    });
  }
});
