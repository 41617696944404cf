/**
 * Merged reads of the node: this engine's live view of the pods it owns, every other process's
 * checkpoints and leases, and one runtime listing (`listPods`, `getPod`).
 *
 * Invariants:
 * - Reads never take a lease nor write anything; the checkpoints they show are the store's shared
 *   frozen copies (a pod's `worker`, `history`, `pod` and `lastError` from a checkpoint are frozen).
 * - An owned pod is shown from memory (the engine's view, the session's timeline); any other from
 *   its checkpoint and lease; a pod only the runtime has is in state `runtime`, unless a worker of
 *   this node finished it and was forgotten since: then it is `finished`, from its ending (`ended/`),
 *   while the runtime lists it running nothing.
 * - The runtime listing and the store reads run side by side; a read of a few UIDs reads only
 *   their files.
 * - A pod whose intent is held because its checkpoint cannot be written says so (its own file).
 */
import type { PodSyncStatusView, PodWorkers } from '../engine/types.js';
import type { ListPodsOptions, PodInfo } from '../domain/session-api.js';
import { boundHistory } from '../store/format.js';
import { leaseInfoOf, type LeaseView, type PodCheckpoint, type Store } from '../store/index.js';
import type { PodMemory } from './memory.js';
import type { Persistence } from './persistence.js';
import { isStaticPod } from '../engine/pod-kinds.js';
import { isRunningSomething, namesOf, specOf, stateOfView } from './pod-views.js';
import type { RuntimePodRecord, SessionRuntime } from './runtime.js';
import { RECENT_LISTING_MS } from './seams.js';

/** Checkpoints as the store keeps them (deep-frozen, not copied): a view only looks. */
const SHARED = { shared: true } as const;

export type RuntimeIndex = Map<string, RuntimePodRecord>;

export interface PodViewDeps {
  store: Pick<Store, 'checkpoints' | 'leases' | 'ended'>;
  engine: Pick<PodWorkers, 'snapshot'>;
  runtime: Pick<SessionRuntime, 'listPods'>;
  memory: PodMemory;
  persistence: Pick<Persistence, 'notDurable' | 'storageError'>;
  now: () => number;
  readOnly: boolean;
}

export class PodView {
  readonly #deps: PodViewDeps;

  constructor(deps: PodViewDeps) {
    this.#deps = deps;
  }

  /** The runtime's pods by UID, from a listing no older than `maxAgeMs` (0: a fresh one). */
  async runtimeIndex(maxAgeMs = 0, signal?: AbortSignal): Promise<RuntimeIndex> {
    const list = await this.#deps.runtime.listPods(signal, maxAgeMs);
    return new Map(list.map((p) => [p.uid, p]));
  }

  async listPods(options?: ListPodsOptions): Promise<PodInfo[]> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    // A read-only session follows no runtime events: a listing of its own from the last second (the
    // one started while it opened) is as recent as what it could learn otherwise.
    if (options?.uids?.length === 0) return [];
    const maxAgeMs = options?.runtimeMaxAgeMs ?? (this.#deps.readOnly ? RECENT_LISTING_MS : 0);
    let runtime: RuntimeIndex | Promise<RuntimeIndex> | undefined = maxAgeMs ? this.runtimeIndex(maxAgeMs, signal) : undefined;
    let only: string[] | undefined;
    if (options?.uids !== undefined) {
      only = [...new Set(options.uids)];
    } else if (options?.scope === 'runtime') {
      runtime = await (runtime ?? this.runtimeIndex(0, signal));
      only = [...new Set([...runtime.keys(), ...this.#deps.memory.uids()])];
    }
    const pods = [...(await this.collect(only, runtime, signal)).values()];
    signal?.throwIfAborted();
    return pods;
  }

  async getPod(uid: string): Promise<PodInfo | undefined> {
    return (await this.collect([uid])).get(uid);
  }

  /** PodInfo for the given UIDs (all known pods when `only` is undefined). */
  async collect(only?: readonly string[], runtimePods?: RuntimeIndex | Promise<RuntimeIndex>, signal?: AbortSignal): Promise<Map<string, PodInfo>> {
    // The runtime listing and the store reads do not depend on each other: they run side by side.
    const [runtime, [stored, leaseViews]] = await Promise.all([runtimePods ?? this.runtimeIndex(0, signal), this.#readStore(only)]);
    const snapshot = this.#deps.engine.snapshot();
    const uids = new Set<string>(only ?? [...runtime.keys(), ...stored.keys(), ...this.#deps.memory.uids()]);
    const endings = await this.#endings(uids, snapshot, stored, runtime);
    const out = new Map<string, PodInfo>();
    for (const uid of uids) {
      const ending = endings.get(uid);
      const info = this.#podInfo(uid, snapshot, stored.get(uid) ?? ending, leaseViews.get(uid), runtime.get(uid));
      if (info && ending && !stored.has(uid)) info.forgotten = true;
      if (info) out.set(uid, info);
    }
    return out;
  }

  /**
   * The endings of the pods the runtime lists running nothing that no worker tracks (here or in a
   * checkpoint): those a worker finished before it was forgotten. A pod running something again is
   * not described by how it once ended.
   */
  async #endings(uids: ReadonlySet<string>, snapshot: Map<string, PodSyncStatusView>, stored: Map<string, PodCheckpoint>, runtime: RuntimeIndex): Promise<Map<string, PodCheckpoint>> {
    const candidates: string[] = [];
    for (const uid of uids) {
      const listed = runtime.get(uid);
      if (listed && !stored.has(uid) && !snapshot.has(uid) && !isRunningSomething(listed.status)) candidates.push(uid);
    }
    if (candidates.length === 0) return new Map();
    const endings = await this.#deps.store.ended.readSome(candidates, SHARED).catch(() => new Map<string, PodCheckpoint>());
    for (const [uid, ending] of endings) if (!ending.status.finished) endings.delete(uid);
    return endings;
  }

  async #readStore(only: readonly string[] | undefined): Promise<[Map<string, PodCheckpoint>, Map<string, LeaseView>]> {
    const { checkpoints, leases } = this.#deps.store;
    if (!only) return Promise.all([checkpoints.readAll(SHARED), leases.inspectAll()]);
    const leaseViews = new Map<string, LeaseView>();
    // A pod this session drives is known from memory: the engine's view and our own lease.
    const others = only.filter((uid) => {
      const held = leases.heldView(uid);
      if (held) leaseViews.set(uid, held);
      return held === undefined;
    });
    if (others.length === 0) return [new Map(), leaseViews];
    const [stored, read] = await Promise.all([
      // one look at the folder when there are several to read (most are often new to the store)
      others.length > 1 ? checkpoints.readSome(others, SHARED) : checkpoints.read(others[0]!, SHARED).then((c) => new Map(c ? [[others[0]!, c]] : [])),
      leases.inspectSome(others),
    ]);
    for (const [uid, lease] of read) leaseViews.set(uid, lease);
    return [stored, leaseViews];
  }

  #podInfo(uid: string, snapshot: Map<string, PodSyncStatusView>, checkpoint: PodCheckpoint | undefined, lease: LeaseView | undefined, runtime: RuntimePodRecord | undefined): PodInfo | undefined {
    const { store, memory, persistence, now } = this.#deps;
    const ownedView = store.leases.holds(uid) ? snapshot.get(uid) : undefined;
    const owned = ownedView ? memory.get(uid) : undefined;
    const worker = ownedView ?? checkpoint?.status;
    if (!worker && !runtime) return undefined;
    const names = worker ? namesOf(worker, runtime) : { name: runtime!.name, namespace: runtime!.namespace };
    const pod = specOf(worker) ?? runtime?.pod;
    const state: PodInfo['state'] = worker ? stateOfView(worker) : 'runtime';
    const containers = runtime?.status.containerStatuses ?? [];
    const graceDeadline = owned ? owned.graceDeadline : checkpoint?.graceDeadline;
    const info: PodInfo = {
      uid,
      namespace: names.namespace,
      name: names.name,
      static: runtime?.static ?? isStaticPod(pod),
      state,
      containersRunning: containers.filter((c) => c.state === 'running').length,
      containersTotal: containers.length,
      since: owned?.since ?? checkpoint?.since ?? runtime?.createdAt ?? now(),
      history: owned ? boundHistory(owned.history) : (checkpoint?.history ?? []),
    };
    if (pod) info.pod = pod;
    if (worker) info.worker = worker;
    if (runtime) info.runtime = runtime.status;
    if (worker && state === 'terminating') {
      info.gracePeriod = worker.gracePeriod;
      if (graceDeadline !== undefined) info.graceDeadline = graceDeadline;
    }
    const owner = lease ? leaseInfoOf(lease) : undefined;
    if (owner && !lease!.released) info.owner = owner;
    const lastError = owned ? owned.lastError : checkpoint?.lastError;
    if (lastError) info.lastError = lastError;
    // a pod whose intent is held because its checkpoint cannot be written says so (its own file)
    const storage = persistence.notDurable(uid) ? persistence.storageError(uid) : undefined;
    if (storage) info.lastError = { message: `held, nothing done: ${storage.message}`, at: now() };
    return info;
  }
}
