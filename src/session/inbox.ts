/**
 * Kill requests into the engine: a kill this session applies to a pod it owns, and the hand-over
 * inbox — requests other podctl processes leave for the pods this session drives.
 *
 * Invariants:
 * - Requests of one pod are applied one after another, in arrival order (one chain per pod).
 * - A request is acknowledged (removed) only after the pod's checkpoint recording it is written.
 * - An operator's grace override only ever shortens the pod's own grace (engine/grace.ts).
 * - A running static pod podctl found in the runtime is introduced to the engine (`create`) before
 *   its kill, so its terminating step runs (bounded wait for its start, STATIC_START_WAIT_MS).
 * - A request for a pod with nothing left to kill is acknowledged, not retried forever.
 */
import { operatorGraceOverride } from '../engine/index.js';
import type { PodWorkers, V1Pod } from '../engine/types.js';
import { PodNotFoundError } from '../lib/errors.js';
import type { Logger } from '../domain/session-api.js';
import type { InboxRequest, Store } from '../store/index.js';
import { sessionTransition } from '../store/timeline.js';
import type { PodMemory } from './memory.js';
import type { Persistence } from './persistence.js';
import { isStaticPod, podFullName } from '../engine/pod-kinds.js';
import { runningPodOf, specOf } from './pod-views.js';
import type { RuntimePodRecord } from './runtime.js';
import { RECENT_LISTING_MS } from './seams.js';
import type { PodView } from './view.js';

/** How long a static pod found in the runtime may take to start in the engine before its kill. */
const STATIC_START_WAIT_MS = 2_000;

/** Nothing to kill: the pod is neither in the runtime nor in the state dir (exit code 4). */
export class PodNotFound extends PodNotFoundError {
  constructor(uid: string) {
    super([uid], 'it is neither in the runtime nor in the state dir; list pods with `podctl status -A`');
  }
}

export interface KillIntent {
  gracePeriodSeconds?: number;
  evict?: boolean;
  reason?: string;
  pod?: V1Pod;
  /** The intent is recorded by the API server (KillRequest.recordedInApi). */
  recordedInApi?: boolean;
}

function describeKill(request: KillIntent, fromPid: number): string {
  const parts = [request.evict ? 'evict' : 'kill'];
  if (request.gracePeriodSeconds !== undefined) parts.push(`grace ${request.gracePeriodSeconds}s`);
  parts.push(`from pid ${fromPid}`);
  if (request.reason) parts.push(`(${request.reason})`);
  return parts.join(' ');
}

export interface InboxDeps {
  store: Pick<Store, 'inbox' | 'leases'>;
  engine: Pick<PodWorkers, 'snapshot' | 'updatePod' | 'subscribe'>;
  memory: PodMemory;
  persistence: Pick<Persistence, 'markDirty' | 'flush' | 'recordedInApi'>;
  view: Pick<PodView, 'runtimeIndex'>;
  now: () => number;
  pid: number;
  log: Logger;
  warn: (message: string) => void;
  closed: () => boolean;
}

export class KillInbox {
  readonly #deps: InboxDeps;
  readonly #chains = new Map<string, Promise<void>>();

  constructor(deps: InboxDeps) {
    this.#deps = deps;
  }

  /** Applies a kill to a pod this session owns. Throws PodNotFound when nothing is left to kill. */
  async applyKill(uid: string, request: KillIntent, from: { pid: number; inbox: boolean }, runtimePod?: RuntimePodRecord): Promise<void> {
    const { engine, memory, persistence, now, pid } = this.#deps;
    let view = engine.snapshot().get(uid);
    if (!runtimePod && !request.pod && !specOf(view) && !runningPodOf(view)) {
      // Neither the request nor the engine has the pod: the runtime does, or nobody.
      runtimePod = (await this.#deps.view.runtimeIndex(RECENT_LISTING_MS)).get(uid);
    }
    const pod = request.pod ?? specOf(view) ?? runtimePod?.pod;
    const runningPod = pod ? undefined : (runningPodOf(view) ?? runtimePod?.runningPod);
    if (!pod && !runningPod) throw new PodNotFound(uid);
    if (!view && pod && isStaticPod(pod)) {
      await this.#introduceStaticPod(uid, pod);
      view = engine.snapshot().get(uid);
    }
    const owned = memory.ownedPod(uid, view?.fullname ?? podFullName(pod?.metadata?.name ?? runningPod!.name, pod?.metadata?.namespace ?? runningPod!.namespace));
    memory.record(owned, sessionTransition(from.inbox ? 'request-applied' : 'kill-requested', describeKill(request, from.pid), now(), pid));
    persistence.markDirty(uid);
    const killPodOptions = {
      ...(request.evict ? { evict: true } : {}),
      // an operator's override only ever shortens the pod's own grace (engine/grace.ts)
      ...(request.gracePeriodSeconds !== undefined ? { gracePeriodSecondsOverride: operatorGraceOverride(pod, request.gracePeriodSeconds) } : {}),
    };
    const update = { updateType: 'kill', startTime: now(), ...(pod ? { pod } : { runningPod: runningPod! }), killPodOptions } as const;
    if (request.recordedInApi === true) persistence.recordedInApi(uid, () => engine.updatePod(update));
    else engine.updatePod(update);
  }

  /** Applies the pod's pending requests after those already being applied. */
  drain(uid: string): void {
    const previous = this.#chains.get(uid) ?? Promise.resolve();
    const next = previous.then(() => this.#apply(uid)).catch((error: unknown) => this.#deps.warn(`inbox of pod ${uid}: ${(error as Error).message}`));
    this.#chains.set(uid, next);
    void next.finally(() => {
      if (this.#chains.get(uid) === next) this.#chains.delete(uid);
    });
  }

  /**
   * Every held pod with a request waiting: drained (the safety re-scan beside the folder watch).
   * A session that holds no lease has nothing to drain and does not read the folder (a follower
   * such as `watch` re-scans every second for as long as it runs).
   */
  async rescan(): Promise<void> {
    if (this.#deps.closed() || this.#deps.store.leases.heldUids().length === 0) return;
    try {
      const pending = await this.#deps.store.inbox.pendingUids();
      for (const uid of pending) if (this.#deps.store.leases.holds(uid)) this.drain(uid);
    } catch (error) {
      this.#deps.log('debug', `inbox re-scan: ${(error as Error).message}`);
    }
  }

  /** Before close: one look at the inbox, each held pod's requests applied, then every chain ended. */
  async applyPendingOfHeld(): Promise<void> {
    const { inbox, leases } = this.#deps.store;
    const pending = await inbox.pendingUids().catch(() => new Set(leases.heldUids()));
    for (const uid of leases.heldUids()) if (pending.has(uid)) this.drain(uid);
    await Promise.all([...this.#chains.values()]);
  }

  async #apply(uid: string): Promise<void> {
    const { inbox, leases } = this.#deps.store;
    if (!leases.holds(uid)) return;
    const requests = await inbox.pending(uid);
    if (requests.length === 0) return;
    const applied: InboxRequest[] = [];
    for (const request of requests) {
      try {
        await this.applyKill(uid, request, { pid: request.fromPid, inbox: true });
      } catch (error) {
        if (!(error instanceof PodNotFound)) throw error;
        this.#deps.log('debug', `request ${request.id} for pod ${uid}: nothing left to kill`);
      }
      applied.push(request);
    }
    await this.#deps.persistence.flush();
    await Promise.all(applied.map((r) => inbox.acknowledge(r)));
  }

  /**
   * Introduces a running static pod to the engine before it is killed. The engine (as the kubelet)
   * finishes a static pod whose termination is requested before it ever started without running
   * its terminating step — right for a pod that never ran, wrong for one podctl found running in
   * the runtime. A `create` first lets the worker start it; the wait for that is bounded.
   */
  async #introduceStaticPod(uid: string, pod: V1Pod): Promise<void> {
    const { engine, now } = this.#deps;
    const started = new Promise<void>((resolve) => {
      // Ref'd on purpose (bounded): the caller awaits it; see waits.ts.
      const timer = setTimeout(done, STATIC_START_WAIT_MS);
      const off = engine.subscribe((event) => {
        if (event.uid === uid && event.type === 'sync-started') done();
      });
      function done(): void {
        clearTimeout(timer);
        off();
        resolve();
      }
    });
    engine.updatePod({ updateType: 'create', startTime: now(), pod });
    await started;
  }
}
