/**
 * Conformance harness: the fakes the kubelet's pod_workers_test.go builds (fake clock, recording
 * syncer, fake cache, fake work queue, fake recorder, held/ticking worker channels), rebuilt using
 * only the engine's public surface (ENGINE-API.md). Nothing here reaches into engine internals:
 * state is observed through snapshot(), the isPod…/shouldPod… predicates and the syncer's recorded calls.
 *
 * Time: the fake clock starts at 1 s (the Go tests' time.Unix(1, 0)) and is advanced by hand.
 * Waiting: drains use whenIdle() when nothing is held; with held workers they poll snapshot() by
 * yielding to the event loop (setImmediate), bounded, never sleeping.
 */
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import {
  createPodWorkers,
  type Clock,
  type EventRecorder,
  type PodStatus,
  type PodStatusCache,
  type PodSyncer,
  type PodWorkers,
  type RunningPod,
  type SyncPodType,
  type WorkQueue,
} from '../../src/engine/index.js';

export const CONFIG_SOURCE = 'kubernetes.io/config.source';

/** Seconds since the epoch → the engine's epoch milliseconds (Go's time.Unix(s, 0)). */
export const unix = (s: number): number => s * 1000;

export class FakeClock implements Clock {
  t = unix(1);
  now(): number {
    return this.t;
  }
  tick(ms = 1000): void {
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

/**
 * The Go FakeCache over FakeRuntime: `get` answers what the runtime currently says (undefined when
 * the runtime errors, e.g. NotFound); `getNewerThan` answers an empty status for the pod, or rejects
 * when told to fail. Every getNewerThan call is recorded with its minTime.
 */
export class FakeCache implements PodStatusCache {
  /** What `get` returns; undefined models the runtime's NotFound error. */
  runtimeStatus: PodStatus | undefined = undefined;
  failNewerThan: Error | undefined = undefined;
  newerThanCalls: { uid: string; minTime: number }[] = [];
  statusFor(uid: string): PodStatus {
    return { id: uid, name: '', namespace: '', containerStatuses: [], sandboxStatuses: [] };
  }
  get(uid: string): PodStatus | undefined {
    void uid;
    return this.runtimeStatus;
  }
  async getNewerThan(uid: string, minTime: number): Promise<PodStatus> {
    this.newerThanCalls.push({ uid, minTime });
    if (this.failNewerThan) throw this.failNewerThan;
    return this.statusFor(uid);
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
 * The Go createPodWorkers syncer: records each call per UID. Extra knobs (used by the ported
 * terminalPhaseSync and by error/blocking scenarios): `terminal` UIDs make syncPod report terminal;
 * `fail*` make an operation throw; `block*` hooks run before recording completes.
 */
export class RecordingSyncer implements PodSyncer {
  processed = new Map<string, SyncPodRecord[]>();
  terminal = new Set<string>();
  syncPodArgs: { uid: string; mirrorPod: V1Pod | undefined; podStatus: PodStatus | undefined }[] = [];
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

  async syncPod(signal: AbortSignal, updateType: SyncPodType, pod: V1Pod, mirrorPod: V1Pod | undefined,
    podStatus: PodStatus | undefined): Promise<boolean> {
    const uid = pod.metadata?.uid ?? '';
    this.#record(uid, { name: pod.metadata?.name ?? '', updateType });
    this.syncPodArgs.push({ uid, mirrorPod, podStatus });
    if (this.onSyncPod) await this.onSyncPod(uid, signal);
    const err = this.failSyncPod?.(uid);
    if (err) throw err;
    return this.terminal.has(uid);
  }
  async syncTerminatingPod(signal: AbortSignal, pod: V1Pod, podStatus: PodStatus | undefined,
    gracePeriodSeconds: number | undefined, podStatusFn: ((s: V1PodStatus) => void) | undefined): Promise<void> {
    void podStatus;
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

/** A promise and its resolver. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

export interface Harness {
  workers: PodWorkers;
  clock: FakeClock;
  queue: FakeQueue;
  cache: FakeCache;
  syncer: RecordingSyncer;
  recorder: FakeRecorder;
  /** Worker wake-ups seen per UID (beforeWorkerWakes calls). */
  wakes: Map<string, number>;
  /** Go PauseWorkers / WorkChannel.Hold: the UID's next wake-ups wait until released. */
  hold(...uids: string[]): void;
  /** Go ReleaseWorkers / WorkChannel.Release. */
  release(...uids: string[]): void;
  held(): Set<string>;
  /** Go drainAllWorkers / drainWorkersExcept / drainUnpausedWorkers. */
  drain(except?: Iterable<string>): Promise<void>;
}

/**
 * Go createPodWorkers (resync 1 s, backoff 1 ms, fake clock at 1 s, fake queue). With
 * `timeIncrementing` the harness behaves like createTimeIncrementingPodWorkers: every worker wake-up
 * advances the clock by one second (after any hold is released).
 */
export function createHarness(opts: { timeIncrementing?: boolean; resyncIntervalMs?: number; backOffPeriodMs?: number } = {}): Harness {
  const clock = new FakeClock();
  const queue = new FakeQueue();
  const cache = new FakeCache();
  const syncer = new RecordingSyncer();
  const recorder = new FakeRecorder();
  const holds = new Map<string, { promise: Promise<void>; open: () => void }>();
  const wakes = new Map<string, number>();
  const workers = createPodWorkers({
    syncer,
    cache,
    workQueue: queue,
    clock,
    recorder,
    resyncIntervalMs: opts.resyncIntervalMs ?? 1000,
    backOffPeriodMs: opts.backOffPeriodMs ?? 1,
    beforeWorkerWakes: async (uid: string) => {
      wakes.set(uid, (wakes.get(uid) ?? 0) + 1);
      const h = holds.get(uid);
      if (h) await h.promise;
      if (opts.timeIncrementing) clock.tick();
    },
  });
  const harness: Harness = {
    workers, clock, queue, cache, syncer, recorder, wakes,
    hold(...uids) {
      for (const uid of uids) if (!holds.has(uid)) holds.set(uid, gate());
    },
    release(...uids) {
      for (const uid of uids) {
        holds.get(uid)?.open();
        holds.delete(uid);
      }
    },
    held() {
      return new Set(holds.keys());
    },
    async drain(except) {
      const skip = new Set([...(except ?? []), ...holds.keys()]);
      if (skip.size === 0) {
        await workers.whenIdle();
        return;
      }
      for (let i = 0; i < 20_000; i++) {
        const busy = [...workers.snapshot().entries()].some(([uid, s]) => s.working && !skip.has(uid));
        if (!busy) return;
        await new Promise<void>((r) => setImmediate(r));
      }
      throw new Error('drain: workers still busy after 20000 event-loop turns');
    },
  };
  return harness;
}

/**
 * Go timeIncrementingWorkers.UpdatePod: update, advance the clock one second, run `afterFns`
 * (before any worker can wake), then drain every worker that is not held.
 */
export async function tiUpdatePod(h: Harness, options: Parameters<PodWorkers['updatePod']>[0],
  ...afterFns: (() => void)[]): Promise<void> {
  h.workers.updatePod(options);
  h.clock.tick();
  for (const fn of afterFns) fn();
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

/** The reference's podSyncStatus, in view form, with Go zero values as defaults. */
export function expectedStatus(fields: Record<string, unknown>): Record<string, unknown> {
  return {
    working: false,
    gracePeriod: 0,
    startedTerminating: false,
    deleted: false,
    evicted: false,
    finished: false,
    restartRequested: false,
    observedRuntime: false,
    syncedAt: undefined,
    startedAt: undefined,
    terminatingAt: undefined,
    terminatedAt: undefined,
    pendingUpdate: undefined,
    activeUpdate: undefined,
    ...fields,
  };
}

const STATUS_FIELDS = ['fullname', 'working', 'syncedAt', 'startedAt', 'terminatingAt', 'terminatedAt', 'gracePeriod',
  'startedTerminating', 'deleted', 'evicted', 'finished', 'restartRequested', 'observedRuntime', 'pendingUpdate',
  'activeUpdate'] as const;

/** The podSyncStatus fields of a snapshot entry (drops any extra fields the view may carry). */
export function statusFields(workers: PodWorkers, uid: string): Record<string, unknown> | undefined {
  const v = workers.snapshot().get(uid) as unknown as Record<string, unknown> | undefined;
  if (!v) return undefined;
  const out: Record<string, unknown> = {};
  for (const k of STATUS_FIELDS) out[k] = v[k];
  return out;
}

/** Yields to the event loop until `pred` holds (bounded; never sleeps). */
export async function until(pred: () => boolean, what = 'condition'): Promise<void> {
  for (let i = 0; i < 20_000; i++) {
    if (pred()) return;
    await new Promise<void>((r) => setImmediate(r));
  }
  throw new Error(`until: ${what} not reached after 20000 event-loop turns`);
}
