/**
 * An in-memory NodeSession for watch tests: pods are set by the test, events are emitted by the test,
 * and `requestKill` records the request and moves the pod to terminating the way the engine would
 * (grace only shrinks), emitting the engine's events.
 */
import type { PodWorkerEvent } from '../../../src/engine/types.js';
import type { KillHandle, KillRequest, ListPodsOptions, NodeSession, PodInfo, SessionEvent, SyncKnownResult, WaitOutcome } from '../../../src/domain/session-api.js';

export function pod(name: string, overrides: Partial<PodInfo> = {}): PodInfo {
  const [namespace, podName] = name.includes('/') ? (name.split('/') as [string, string]) : ['default', name];
  return {
    uid: `uid-${namespace}-${podName}`,
    namespace,
    name: podName,
    pod: { metadata: { name: podName, namespace, uid: `uid-${namespace}-${podName}` }, spec: { containers: [{ name: 'app' }], terminationGracePeriodSeconds: 30 } },
    static: false,
    state: 'sync',
    containersRunning: 1,
    containersTotal: 1,
    since: 1_000,
    history: [],
    ...overrides,
  };
}

export class FakeSession implements NodeSession {
  readonly endpoint = 'unix:///run/fake.sock';
  readonly stateDir = '/tmp/fake-state';
  readonly simulated = true;
  pods = new Map<string, PodInfo>();
  kills: KillRequest[] = [];
  listCalls = 0;
  closed = false;
  /** Fails the next listPods with this message. */
  failNextList: string | undefined;
  now: () => number;
  #listeners = new Set<(e: SessionEvent) => void>();

  constructor(pods: PodInfo[] = [], now: () => number = Date.now) {
    for (const p of pods) this.pods.set(p.uid, p);
    this.now = now;
  }

  /** The `uids` of each listing (undefined: the whole listing). */
  readonly listedUids: (string[] | undefined)[] = [];
  /** The `runtimeMaxAgeMs` of each listing. */
  readonly runtimeAges: (number | undefined)[] = [];

  async listPods(options?: ListPodsOptions): Promise<PodInfo[]> {
    this.listCalls += 1;
    this.listedUids.push(options?.uids !== undefined ? [...options.uids].sort() : undefined);
    this.runtimeAges.push(options?.runtimeMaxAgeMs);
    if (this.failNextList !== undefined) {
      const m = this.failNextList;
      this.failNextList = undefined;
      throw new Error(m);
    }
    const only = options?.uids !== undefined ? new Set(options.uids) : undefined;
    return [...this.pods.values()].filter((p) => only === undefined || only.has(p.uid)).map((p) => ({ ...p }));
  }

  async getPod(uid: string): Promise<PodInfo | undefined> {
    return this.pods.get(uid);
  }

  async requestKill(request: KillRequest): Promise<KillHandle> {
    this.kills.push(request);
    const p = this.pods.get(request.uid);
    if (p === undefined) throw new Error(`pod ${request.uid} not found`);
    const fullname = `${p.name}_${p.namespace}`;
    const at = this.now();
    const grace = request.gracePeriodSeconds ?? p.pod?.spec?.terminationGracePeriodSeconds ?? 30;
    if (p.state === 'sync') {
      this.set({ ...p, state: 'terminating', since: at, gracePeriod: grace, graceDeadline: at + grace * 1000, owner: { pid: process.pid, startedAt: 0, heartbeatAt: at, alive: true } });
      this.emitEngine({ type: 'termination-requested', uid: p.uid, fullname, at, gracePeriod: grace, evicted: request.evict === true, deleted: false });
      this.emitEngine({ type: 'state-changed', uid: p.uid, fullname, at, from: 'sync', to: 'terminating' });
    } else if (p.state === 'terminating' && p.gracePeriod !== undefined && grace < p.gracePeriod) {
      this.set({ ...p, gracePeriod: grace, graceDeadline: Math.min(p.graceDeadline ?? Infinity, at + grace * 1000) });
      this.emitEngine({ type: 'grace-shortened', uid: p.uid, fullname, at, from: p.gracePeriod, to: grace });
    }
    return { uid: p.uid, handledBy: 'local', ownerPid: process.pid };
  }

  async waitTerminated(uids: string[]): Promise<Map<string, WaitOutcome>> {
    return new Map(uids.map((u) => [u, 'terminated' as const]));
  }

  async syncKnown(): Promise<SyncKnownResult> {
    return { workers: new Map(), orphanedRuntimePods: [], resumed: [], forgotten: [] };
  }

  subscribe(listener: (event: SessionEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** Replaces a pod (without emitting anything). */
  set(p: PodInfo): void {
    this.pods.set(p.uid, p);
  }

  emit(event: SessionEvent): void {
    for (const l of [...this.#listeners]) l(event);
  }

  emitEngine(event: PodWorkerEvent): void {
    this.emit({ source: 'engine', event });
  }

  drivenUnfinished(): string[] {
    return [];
  }

  async apiDesiredPods(): Promise<never> {
    throw new Error('no API server configured for desired pods');
  }
}
