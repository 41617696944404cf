/**
 * Test doubles for the engine: a fake clock, a recording work queue, a fake status cache, a
 * recording syncer whose behaviour each test can steer, pod builders, and a "time-incrementing"
 * harness in which every updatePod and every worker wake-up advances the clock by one second.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { PodWorkerEngine, type EngineInternals } from '../../src/engine/workers.js';
import type {
  PodStatus,
  PodStatusCache,
  PodSyncer,
  PodSyncStatusView,
  PodWorkerEvent,
  RunningPod,
  SyncPodType,
  UpdatePodOptions,
  V1PodStatus,
  WorkQueue,
} from '../../src/engine/types.js';

export const SECOND = 1000;

export class FakeClock {
  constructor(public t: number = 1 * SECOND) {}
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

/** Records enqueues; `getWork()` returns and consumes what was enqueued since the last call. */
export class FakeQueue implements WorkQueue {
  items: QueueItem[] = [];
  #start = 0;
  enqueue(uid: string, delayMs: number): void {
    this.items.push({ uid, delayMs });
  }
  set(): Set<string> {
    return new Set(this.items.slice(this.#start).map((i) => i.uid));
  }
  getWork(): string[] {
    const work = this.items.slice(this.#start).map((i) => i.uid);
    this.#start = this.items.length;
    return work;
  }
}

export function emptyStatus(uid: string): PodStatus {
  return { id: uid, name: '', namespace: '', containerStatuses: [], sandboxStatuses: [] };
}

/** `get` answers from `statuses` (undefined = the runtime does not know the pod); `getNewerThan` always answers. */
export class FakeCache implements PodStatusCache {
  statuses = new Map<string, PodStatus>();
  getNewerThanError: Error | undefined;
  calls: { uid: string; minTime: number }[] = [];
  get(uid: string): PodStatus | undefined {
    return this.statuses.get(uid);
  }
  async getNewerThan(uid: string, minTime: number): Promise<PodStatus> {
    this.calls.push({ uid, minTime });
    if (this.getNewerThanError !== undefined) throw this.getNewerThanError;
    return this.statuses.get(uid) ?? emptyStatus(uid);
  }
}

/** One syncer call, as the kubelet's tests record it. */
export interface SyncRecord {
  name: string;
  updateType?: SyncPodType;
  runningPod?: RunningPod;
  terminated?: boolean;
  gracePeriod?: number;
}

type Hook = (signal: AbortSignal, uid: string) => Promise<void> | void;

/** Records every call per UID; hooks let a test block, fail or end a call. */
export class RecordingSyncer implements PodSyncer {
  processed = new Map<string, SyncRecord[]>();
  /** UIDs whose next syncPod reports the pod terminal. */
  terminal = new Set<string>();
  onSyncPod: Hook | undefined;
  onSyncTerminatingPod: Hook | undefined;
  onSyncTerminatedPod: Hook | undefined;
  onSyncTerminatingRuntimePod: Hook | undefined;
  lastSyncPod: { pod: V1Pod; mirrorPod: V1Pod | undefined; status: PodStatus | undefined } | undefined;
  statusFns: (((s: V1PodStatus) => void) | undefined)[] = [];

  #record(uid: string, r: SyncRecord): void {
    const list = this.processed.get(uid);
    if (list === undefined) this.processed.set(uid, [r]);
    else list.push(r);
  }

  async syncPod(signal: AbortSignal, updateType: SyncPodType, pod: V1Pod, mirrorPod: V1Pod | undefined, status: PodStatus | undefined): Promise<boolean> {
    const uid = pod.metadata?.uid ?? '';
    this.#record(uid, { name: pod.metadata?.name ?? '', updateType });
    this.lastSyncPod = { pod, mirrorPod, status };
    await this.onSyncPod?.(signal, uid);
    return this.terminal.has(uid);
  }

  async syncTerminatingPod(signal: AbortSignal, pod: V1Pod, _status: PodStatus | undefined, gracePeriod: number | undefined, statusFn: ((s: V1PodStatus) => void) | undefined): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    const r: SyncRecord = { name: pod.metadata?.name ?? '', updateType: 'kill' };
    if (gracePeriod !== undefined) r.gracePeriod = gracePeriod;
    this.#record(uid, r);
    this.statusFns.push(statusFn);
    await this.onSyncTerminatingPod?.(signal, uid);
  }

  async syncTerminatingRuntimePod(signal: AbortSignal, runningPod: RunningPod): Promise<void> {
    this.#record(runningPod.id, { name: runningPod.name, updateType: 'kill', runningPod });
    await this.onSyncTerminatingRuntimePod?.(signal, runningPod.id);
  }

  async syncTerminatedPod(signal: AbortSignal, pod: V1Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    this.#record(uid, { name: pod.metadata?.name ?? '', terminated: true });
    await this.onSyncTerminatedPod?.(signal, uid);
  }
}

/** Rejects when the signal aborts (what a well-behaved syncer does), else waits for `release`. */
export function blockUntilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((_resolve, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

export const STATIC_SOURCE = { 'kubernetes.io/config.source': 'file' };

export function newNamedPod(uid: string, namespace: string, name: string, isStatic: boolean): V1Pod {
  const pod: V1Pod = {
    metadata: { uid, namespace, name },
    spec: { containers: [], terminationGracePeriodSeconds: 30 },
  };
  if (isStatic) pod.metadata!.annotations = { ...STATIC_SOURCE };
  return pod;
}

export function newStaticPod(uid: string, name: string): V1Pod {
  return {
    metadata: { uid, name, annotations: { ...STATIC_SOURCE } },
    spec: { containers: [], terminationGracePeriodSeconds: 30 },
  };
}

export function newPodWithPhase(uid: string, name: string, phase: string): V1Pod {
  const pod = newNamedPod(uid, 'ns', name, false);
  pod.status = { phase };
  return pod;
}

export function withDeletionTimestamp(pod: V1Pod, at: number, gracePeriod?: number): V1Pod {
  pod.metadata!.deletionTimestamp = new Date(at);
  if (gracePeriod !== undefined) pod.metadata!.deletionGracePeriodSeconds = gracePeriod;
  return pod;
}

export function withLabel(pod: V1Pod, label: string, value: string): V1Pod {
  pod.metadata!.labels = { ...(pod.metadata!.labels ?? {}), [label]: value };
  return pod;
}

export function runningPod(id: string, name: string, namespace: string): RunningPod {
  return { id, name, namespace, containers: [], sandboxes: [] };
}

/**
 * A full status view with the kubelet's zero values for everything not given. Pass `uid` when the
 * view is an input (restore); leave it out for expectations (the engine keeps it non-enumerable).
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

export interface Harness {
  workers: PodWorkerEngine;
  syncer: RecordingSyncer;
  cache: FakeCache;
  queue: FakeQueue;
  clock: FakeClock;
  events: PodWorkerEvent[];
  /** Holds workers (their next wake-up waits) until released. */
  hold(...uids: string[]): void;
  release(...uids: string[]): void;
  /** Workers currently held. */
  held(): string[];
  /** Waits until every worker that is not held is idle. */
  drain(): Promise<void>;
}

export interface HarnessOptions {
  /** Every worker wake-up advances the clock by one second (the kubelet's timeIncrementingWorkers). */
  tickOnWake?: boolean;
  resyncIntervalMs?: number;
  backOffPeriodMs?: number;
  internals?: Partial<EngineInternals>;
}

/** The kubelet's createPodWorkers: resync 1 s, back-off 1 ms, fake queue, clock at 1 s. */
export function createHarness(opts: HarnessOptions = {}): Harness {
  const syncer = new RecordingSyncer();
  const cache = new FakeCache();
  const queue = new FakeQueue();
  const clock = new FakeClock();
  const events: PodWorkerEvent[] = [];
  const gates = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  const workers = new PodWorkerEngine(
    {
      syncer,
      cache,
      workQueue: queue,
      clock,
      resyncIntervalMs: opts.resyncIntervalMs ?? SECOND,
      backOffPeriodMs: opts.backOffPeriodMs ?? 1,
      onEvent: (e) => events.push(e),
      beforeWorkerWakes: async (uid) => {
        const gate = gates.get(uid);
        if (gate !== undefined) await gate.promise;
        if (opts.tickOnWake) clock.tick();
      },
    },
    opts.internals,
  );
  return {
    workers,
    syncer,
    cache,
    queue,
    clock,
    events,
    hold(...uids) {
      for (const uid of uids) {
        if (gates.has(uid)) continue;
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        gates.set(uid, { promise, resolve });
      }
    },
    release(...uids) {
      for (const uid of uids) {
        gates.get(uid)?.resolve();
        gates.delete(uid);
      }
    },
    held: () => [...gates.keys()],
    drain: () => workers.whenIdle({ except: [...gates.keys()] }),
  };
}

/**
 * The kubelet's timeIncrementingWorkers.UpdatePod: update, advance the clock one second, run the
 * `after` functions, then drain the workers that are not held.
 */
export async function updateAndDrain(h: Harness, options: UpdatePodOptions, ...after: (() => void)[]): Promise<void> {
  h.workers.updatePod(options);
  h.clock.tick();
  for (const fn of after) fn();
  await h.drain();
}

export function records(h: Harness, uid: string): SyncRecord[] | undefined {
  return h.syncer.processed.get(uid);
}

export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Resolves at the first event matching `predicate` (tests wait on events, never on time). */
export function nextEvent<E extends PodWorkerEvent>(
  workers: { subscribe(l: (e: PodWorkerEvent) => void): () => void },
  predicate: (e: PodWorkerEvent) => e is E,
): Promise<E>;
export function nextEvent(workers: { subscribe(l: (e: PodWorkerEvent) => void): () => void }, predicate: (e: PodWorkerEvent) => boolean): Promise<PodWorkerEvent>;
export function nextEvent(workers: { subscribe(l: (e: PodWorkerEvent) => void): () => void }, predicate: (e: PodWorkerEvent) => boolean): Promise<PodWorkerEvent> {
  return new Promise((resolve) => {
    const off = workers.subscribe((e) => {
      if (predicate(e)) {
        off();
        resolve(e);
      }
    });
  });
}
