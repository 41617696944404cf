/**
 * Ownership of pods: this session drives a pod only while it holds the pod's lease
 * (store/lease.ts). A pod whose owner died (or released it) is taken over and restored into this
 * engine from its checkpoint; the lease is kept alive by a heartbeat.
 *
 * Invariants:
 * - One take-over at a time per pod (concurrent callers share it); none once the session closes.
 * - A restore never lengthens a grace: finished stays finished, terminating continues with what
 *   is left of the stored deadline (the stored deadline is authoritative), never the whole grace
 *   again.
 * - A restored pod's intent is written ahead of its worker (Persistence), and its checkpoint
 *   records the take-over before anything else; requests waiting in its inbox are applied next.
 * - A lease lost to another process is reported once, and the pod is no longer written here.
 */
import { remainingGraceSeconds } from '../engine/index.js';
import type { PodWorkers } from '../engine/types.js';
import type { Logger } from '../domain/session-api.js';
import type { Store } from '../store/index.js';
import { sessionTransition } from '../store/timeline.js';
import type { PodMemory } from './memory.js';
import type { Persistence } from './persistence.js';
import { stateOfView } from './pod-views.js';

export interface OwnershipDeps {
  store: Pick<Store, 'checkpoints' | 'leases'>;
  engine: Pick<PodWorkers, 'snapshot' | 'restore' | 'statusOf'>;
  memory: PodMemory;
  persistence: Pick<Persistence, 'takenOver' | 'markIntent' | 'markDirty' | 'flushAlone'>;
  now: () => number;
  pid: number;
  log: Logger;
  warn: (message: string) => void;
  closed: () => boolean;
  /** Called once a pod is taken over (its inbox is applied next). */
  onAdopted: (uid: string) => void;
}

export class Ownership {
  readonly #deps: OwnershipDeps;
  readonly #adopting = new Map<string, Promise<boolean>>();

  constructor(deps: OwnershipDeps) {
    this.#deps = deps;
  }

  holds(uid: string): boolean {
    return this.#deps.store.leases.holds(uid);
  }

  /**
   * Takes the lease of `uid` if no live process holds it and restores its checkpoint into this
   * engine. Resolves true when this session now drives the pod.
   */
  adopt(uid: string, why: string): Promise<boolean> {
    if (this.holds(uid)) return Promise.resolve(true);
    const running = this.#adopting.get(uid);
    if (running) return running;
    const attempt = this.#takeOver(uid, why).finally(() => this.#adopting.delete(uid));
    this.#adopting.set(uid, attempt);
    return attempt;
  }

  /** Resolves when the take-overs under way have ended (close waits for them). */
  async settled(): Promise<void> {
    await Promise.all([...this.#adopting.values()]).catch(() => {});
  }

  async heartbeat(): Promise<void> {
    if (this.#deps.closed()) return;
    try {
      const lost = await this.#deps.store.leases.heartbeat();
      for (const uid of lost) this.#deps.warn(`lost the lease of pod ${uid} to another process; no longer persisting it`);
    } catch (error) {
      this.#deps.log('debug', `heartbeat: ${(error as Error).message}`);
    }
  }

  async #takeOver(uid: string, why: string): Promise<boolean> {
    const { store, engine, memory, persistence, now: clock, pid } = this.#deps;
    if (this.#deps.closed()) return false;
    const result = await store.leases.tryAcquire(uid);
    if (!result.acquired) return false;
    const checkpoint = await store.checkpoints.read(uid);
    persistence.takenOver(uid, checkpoint !== undefined);
    const now = clock();
    const owned = memory.takenOver(uid, checkpoint);
    const previous = result.previous;
    const from = previous?.record ? (previous.released ? `after pid ${previous.record.pid} released it` : `from pid ${previous.record.pid} (gone)`) : 'first owner';
    memory.record(owned, sessionTransition('lease-taken', `${why}: lease taken ${from}`, now, pid));
    if (checkpoint && !engine.snapshot().has(uid)) {
      persistence.markIntent(uid);
      // the stored deadline is authoritative: a resumed termination only has what is left of its grace
      const status = { ...checkpoint.status };
      if (checkpoint.graceDeadline !== undefined && stateOfView(status) === 'terminating') {
        const left = remainingGraceSeconds(checkpoint.graceDeadline, now);
        if (status.gracePeriod <= 0 || left < status.gracePeriod) status.gracePeriod = left;
      }
      memory.restoring(uid, () => engine.restore([status]));
      const state = stateOfView(checkpoint.status);
      const detail =
        state === 'terminating'
          ? `resumed terminating with ${engine.statusOf(uid)?.gracePeriod ?? checkpoint.status.gracePeriod}s of grace left`
          : state === 'finished'
            ? 'restored finished (waits to be forgotten)'
            : `restored in state ${state}`;
      memory.record(owned, sessionTransition('resumed', detail, now, pid));
    }
    persistence.markDirty(uid);
    // A restored pod's checkpoint records the take-over now; a pod new to the engine has nothing to
    // write yet (its lease-taken record goes out with the first checkpoint, before its worker acts).
    if (engine.snapshot().has(uid)) await persistence.flushAlone().catch(() => {});
    this.#deps.onAdopted(uid);
    return true;
  }
}
