/**
 * The one set of engine test doubles: the fakes the kubelet's pod_workers_test.go builds (fake clock,
 * recording syncer, fake cache, fake work queue, fake recorder, held/ticking worker wake-ups), pod
 * builders, and waits that never sleep. Used by the kubelet port (test/engine/kubelet/) and by the
 * engine's own tests (events, invariants, queue, restore, stress).
 *
 * State is observed through snapshot(), statusOf(), the isPod…/shouldPod… predicates, the syncer's
 * recorded calls and the engine's events. Only the kubelet's internal-transition tables
 * (Test_allowPodStart, Test_removeTerminatedWorker) inject `internals`, as the Go tests do.
 *
 * Time: the fake clock starts at 1 s (the Go tests' time.Unix(1, 0)) and is advanced by hand.
 */
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { PodWorkerEngine, type EngineInternals } from '../../src/engine/workers.js';
import type { Clock, EventRecorder, PodStatus, PodStatusCache, PodSyncer, PodSyncStatusView, PodWorkerEvent, RunningPod, SyncPodType, UpdatePodOptions, WorkQueue } from '../../src/engine/types.js';

export const SECOND = 1000;
const CONFIG_SOURCE = 'kubernetes.io/config.source';

/** Seconds since the epoch → the engine's epoch milliseconds (Go's time.Unix(s, 0)). */
export const unix = (s: number): number => s * SECOND;

class FakeClock implements Clock {
  constructor(public t: number = unix(1)) {}
  now(): number {
    return this.t;
  }
  tick(ms = SECOND): void {
    this.t += ms;
  }
}

export interface QueueItem {
  uid: string;
  delayMs: number;
}

/** The Go fakeQueue: records every enqueue; getWork() hands out what was added since last time. */
export class FakeQueue implements WorkQueue {
  items: QueueItem[] = [];
  #currentStart = 0;
  enqueue(uid: string, delayMs: number): void {
    this.items.push({ uid, delayMs });
  }
  pending(): QueueItem[] {
    return this.items.slice(this.#currentStart);
  }
  set(): Set<string> {
    return new Set(this.pending().map((i) => i.uid));
  }
  getWork(): string[] {
    const work = this.pending().map((i) => i.uid);
    this.#currentStart = this.items.length;
    return work;
  }
  forUid(uid: string): QueueItem[] {
    return this.items.filter((i) => i.uid === uid);
  }
}

export function emptyStatus(uid: string): PodStatus {
  return { id: uid, name: '', namespace: '', containerStatuses: [], sandboxStatuses: [] };
}

/**
 * The Go FakeCache over FakeRuntime. `get` answers the pod's entry in `statuses`, else
 * `runtimeStatus` (undefined models the runtime's NotFound error). `getNewerThan` answers the pod's
 * entry in `statuses`, else an empty status, or rejects with `failNewerThan`; every call is recorded
 * with its minTime.
 */
export class FakeCache implements PodStatusCache {
  statuses = new Map<string, PodStatus>();
  /** What `get` returns for a pod without an entry in `statuses`. */
  runtimeStatus: PodStatus | undefined = undefined;
  failNewerThan: Error | undefined = undefined;
  newerThanCalls: { uid: string; minTime: number }[] = [];
  get(uid: string): PodStatus | undefined {
    return this.statuses.get(uid) ?? this.runtimeStatus;
  }
  async getNewerThan(uid: string, minTime: number): Promise<PodStatus> {
    this.newerThanCalls.push({ uid, minTime });
    if (this.failNewerThan) throw this.failNewerThan;
    return this.statuses.get(uid) ?? emptyStatus(uid);
  }
}

export interface RecordedEvent {
  pod: V1Pod;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}
export class FakeRecorder implements EventRecorder {
  events: RecordedEvent[] = [];
  event(pod: V1Pod, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.events.push({ pod, type, reason, message });
  }
}

/** One call the worker made into the syncer (the Go syncPodRecord). */
export interface SyncPodRecord {
  name: string;
  updateType?: SyncPodType;
  runningPod?: RunningPod;
  terminated?: boolean;
  gracePeriod?: number;
}

type Hook = (uid: string, signal: AbortSignal) => Promise<void> | void;

/**
 * The Go createPodWorkers syncer: records each call per UID. Knobs: `terminal` UIDs make syncPod
 * report terminal; `fail*` make an operation throw; `on*` hooks run before the call completes (to
 * block, fail or end it).
 */
export class RecordingSyncer implements PodSyncer {
  processed = new Map<string, SyncPodRecord[]>();
  terminal = new Set<string>();
  syncPodArgs: { uid: string; pod: V1Pod; mirrorPod: V1Pod | undefined; podStatus: PodStatus | undefined }[] = [];
  statusFns: (((s: V1PodStatus) => void) | undefined)[] = [];
  failSyncPod: ((uid: string) => Error | undefined) | undefined;
  failTerminating: ((uid: string) => Error | undefined) | undefined;
  failTerminated: ((uid: string) => Error | undefined) | undefined;
  onSyncPod: Hook | undefined;
  onTerminating: Hook | undefined;
  onTerminated: Hook | undefined;
  onTerminatingRuntime: Hook | undefined;

  #record(uid: string, rec: SyncPodRecord): void {
    const list = this.processed.get(uid) ?? [];
    list.push(rec);
    this.processed.set(uid, list);
  }
  records(uid: string): SyncPodRecord[] | undefined {
    return this.processed.get(uid);
  }
  /** The arguments of the latest syncPod call. */
  get lastSyncPod(): { pod: V1Pod; mirrorPod: V1Pod | undefined; status: PodStatus | undefined } | undefined {
    const last = this.syncPodArgs.at(-1);
    return last && { pod: last.pod, mirrorPod: last.mirrorPod, status: last.podStatus };
  }

  async syncPod(signal: AbortSignal, updateType: SyncPodType, pod: V1Pod, mirrorPod: V1Pod | undefined, podStatus: PodStatus | undefined): Promise<boolean> {
    const uid = pod.metadata?.uid ?? '';
    this.#record(uid, { name: pod.metadata?.name ?? '', updateType });
    this.syncPodArgs.push({ uid, pod, mirrorPod, podStatus });
    if (this.onSyncPod) await this.onSyncPod(uid, signal);
    const err = this.failSyncPod?.(uid);
    if (err) throw err;
    return this.terminal.has(uid);
  }
  async syncTerminatingPod(...[signal, pod, , gracePeriodSeconds, podStatusFn]: Parameters<PodSyncer['syncTerminatingPod']>): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    this.#record(uid, { name: pod.metadata?.name ?? '', updateType: 'kill', gracePeriod: gracePeriodSeconds });
    this.statusFns.push(podStatusFn);
    if (this.onTerminating) await this.onTerminating(uid, signal);
    const err = this.failTerminating?.(uid);
    if (err) throw err;
  }
  async syncTerminatingRuntimePod(signal: AbortSignal, runningPod: RunningPod): Promise<void> {
    this.#record(runningPod.id, { name: runningPod.name, updateType: 'kill', runningPod });
    if (this.onTerminatingRuntime) await this.onTerminatingRuntime(runningPod.id, signal);
  }
  async syncTerminatedPod(signal: AbortSignal, pod: V1Pod, podStatus: PodStatus | undefined): Promise<void> {
    void podStatus;
    const uid = pod.metadata?.uid ?? '';
    this.#record(uid, { name: pod.metadata?.name ?? '', terminated: true });
    if (this.onTerminated) await this.onTerminated(uid, signal);
    const err = this.failTerminated?.(uid);
    if (err) throw err;
  }
}

/** Rejects when the signal aborts (what a real runtime call does when its context is cancelled). */
export function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason ?? new Error('aborted'));
    signal.addEventListener('abort', () => reject(signal.reason ?? new Error('aborted')), { once: true });
  });
}

export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

/** A promise with its resolver and rejecter. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export interface Harness {
  workers: PodWorkerEngine;
  clock: FakeClock;
  queue: FakeQueue;
  cache: FakeCache;
  syncer: RecordingSyncer;
  recorder: FakeRecorder;
  /** Every event the engine emitted, in order. */
  events: PodWorkerEvent[];
  /** Worker wake-ups seen per UID (beforeWorkerWakes calls). */
  wakes: Map<string, number>;
  /** Go PauseWorkers / WorkChannel.Hold: the UID's next wake-ups wait until released. */
  hold(...uids: string[]): void;
  /** Go ReleaseWorkers / WorkChannel.Release. */
  release(...uids: string[]): void;
  held(): Set<string>;
  /** Go drainAllWorkers / drainWorkersExcept / drainUnpausedWorkers: every worker not held (nor excepted) is idle. */
  drain(except?: Iterable<string>): Promise<void>;
}

export interface HarnessOptions {
  /** createTimeIncrementingPodWorkers: every worker wake-up advances the clock by one second (after any hold is released). */
  timeIncrementing?: boolean;
  resyncIntervalMs?: number;
  backOffPeriodMs?: number;
  /** The kubelet's internal tables inject the worker's status map and static-pod bookkeeping. */
  internals?: Partial<EngineInternals>;
}

/** Go createPodWorkers: resync 1 s, backoff 1 ms, fake clock at 1 s, fake queue, fake recorder. */
export function createHarness(opts: HarnessOptions = {}): Harness {
  const clock = new FakeClock();
  const queue = new FakeQueue();
  const cache = new FakeCache();
  const syncer = new RecordingSyncer();
  const recorder = new FakeRecorder();
  const events: PodWorkerEvent[] = [];
  const holds = new Map<string, Deferred>();
  const wakes = new Map<string, number>();
  const workers = new PodWorkerEngine(
    {
      syncer,
      cache,
      workQueue: queue,
      clock,
      recorder,
      resyncIntervalMs: opts.resyncIntervalMs ?? SECOND,
      backOffPeriodMs: opts.backOffPeriodMs ?? 1,
      onEvent: (e) => events.push(e),
      beforeWorkerWakes: async (uid: string) => {
        wakes.set(uid, (wakes.get(uid) ?? 0) + 1);
        const h = holds.get(uid);
        if (h) await h.promise;
        if (opts.timeIncrementing) clock.tick();
      },
    },
    opts.internals,
  );
  return {
    workers,
    clock,
    queue,
    cache,
    syncer,
    recorder,
    events,
    wakes,
    hold(...uids) {
      for (const uid of uids) if (!holds.has(uid)) holds.set(uid, deferred());
    },
    release(...uids) {
      for (const uid of uids) {
        holds.get(uid)?.resolve();
        holds.delete(uid);
      }
    },
    held() {
      return new Set(holds.keys());
    },
    drain(except) {
      return workers.whenIdle({ except: [...(except ?? []), ...holds.keys()] });
    },
  };
}

/**
 * Go timeIncrementingWorkers.UpdatePod: update, advance the clock one second, run `after`
 * (before any worker can wake), then drain every worker that is not held.
 */
export async function updateAndDrain(h: Harness, options: UpdatePodOptions, ...after: (() => void)[]): Promise<void> {
  h.workers.updatePod(options);
  h.clock.tick();
  for (const fn of after) fn();
  await h.drain();
}

export function newNamedPod(uid: string, namespace: string, name: string, isStatic: boolean): V1Pod {
  const pod: V1Pod = {
    metadata: { uid, namespace, name },
    spec: { terminationGracePeriodSeconds: 30, containers: [] },
  };
  if (isStatic) pod.metadata!.annotations = { [CONFIG_SOURCE]: 'file' };
  return pod;
}

export function newPodWithPhase(uid: string, name: string, phase: string): V1Pod {
  const pod = newNamedPod(uid, 'ns', name, false);
  pod.status = { phase };
  return pod;
}

/** Go newStaticPod: no namespace (fullname `${name}_`). */
export function newStaticPod(uid: string, name: string): V1Pod {
  return {
    metadata: { uid, name, annotations: { [CONFIG_SOURCE]: 'file' } },
    spec: { terminationGracePeriodSeconds: 30, containers: [] },
  };
}

export function withLabel(pod: V1Pod, label: string, value: string): V1Pod {
  pod.metadata!.labels = { ...(pod.metadata!.labels ?? {}), [label]: value };
  return pod;
}

export function withDeletionTimestamp(pod: V1Pod, tsMs: number, gracePeriod?: number): V1Pod {
  pod.metadata!.deletionTimestamp = new Date(tsMs);
  if (gracePeriod !== undefined) pod.metadata!.deletionGracePeriodSeconds = gracePeriod;
  return pod;
}

export function runningPod(id: string, name: string, namespace: string): RunningPod {
  return { id, name, namespace, containers: [], sandboxes: [] };
}

/**
 * The reference's podSyncStatus in view form, with the kubelet's zero values for everything not
 * given. Pass `uid` when the view is an input (restore); leave it out for expectations (the engine
 * keeps it non-enumerable).
 */
export function expectedView(partial: Partial<PodSyncStatusView> & { fullname: string }): PodSyncStatusView {
  return {
    working: false,
    gracePeriod: 0,
    startedTerminating: false,
    deleted: false,
    evicted: false,
    finished: false,
    restartRequested: false,
    observedRuntime: false,
    ...partial,
  } as PodSyncStatusView;
}

/** Yields to the event loop until `pred` holds (bounded; never sleeps). */
export async function until(pred: () => boolean, what = 'condition'): Promise<void> {
  for (let i = 0; i < 20_000; i++) {
    if (pred()) return;
    await new Promise<void>((r) => setImmediate(r));
  }
  throw new Error(`until: ${what} not reached after 20000 event-loop turns`);
}

type Subscribable = { subscribe(l: (e: PodWorkerEvent) => void): () => void };

/** Resolves at the first event matching `predicate` (tests wait on events, never on time). */
export function nextEvent<E extends PodWorkerEvent>(workers: Subscribable, predicate: (e: PodWorkerEvent) => e is E): Promise<E>;
export function nextEvent(workers: Subscribable, predicate: (e: PodWorkerEvent) => boolean): Promise<PodWorkerEvent>;
export function nextEvent(workers: Subscribable, predicate: (e: PodWorkerEvent) => boolean): Promise<PodWorkerEvent> {
  return new Promise((resolve) => {
    const off = workers.subscribe((e) => {
      if (predicate(e)) {
        off();
        resolve(e);
      }
    });
  });
}
