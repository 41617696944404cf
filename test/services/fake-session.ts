/**
 * An in-memory NodeSession for service and command tests: pods with scripted termination
 * behaviours, a fake clock advanced by waits, and a record of every call.
 *
 * Behaviours: 'exits' — terminated by the first wait after its kill; 'stuck' — never terminates;
 * 'late' — terminates on the second wait after its kill; 'gone' — disappears (outcome 'gone');
 * 'fails' — requestKill throws, as a runtime error would.
 */
import type { V1Pod } from '../../src/engine/types.js';
import type { KillHandle, KillRequest, ListPodsOptions, NodeSession, PodInfo, SessionEvent, SyncKnownResult, WaitOptions, WaitOutcome } from '../../src/domain/session-api.js';

type Behaviour = 'exits' | 'stuck' | 'late' | 'gone' | 'fails';

export interface FakePod {
  namespace: string;
  name: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  priority?: number;
  grace?: number;
  static?: boolean;
  state?: PodInfo['state'];
  behaviour?: Behaviour;
  /** Known only from the runtime (no spec). */
  noSpec?: boolean;
  /** Driven by another podctl process with this PID: requestKill is handed to it ('delegated'). */
  ownerPid?: number;
  containers?: number;
}

interface Tracked {
  info: PodInfo;
  behaviour: Behaviour;
  waitsSinceKill: number;
  killed: boolean;
  ownerPid?: number;
}

export class FakeSession implements NodeSession {
  readonly endpoint = 'unix:///fake/cri.sock';
  readonly stateDir = '/fake/state';
  readonly simulated = true;
  readonly kills: KillRequest[] = [];
  readonly waits: { uids: string[]; timeoutMs: number }[] = [];
  readonly syncCalls: (V1Pod[] | undefined)[] = [];
  /** How many times listPods was called, and with which options. */
  listings = 0;
  readonly listingOptions: (ListPodsOptions | undefined)[] = [];
  closed = false;
  /** Fake clock (epoch ms); waits advance it. */
  time = Date.parse('2026-01-01T00:00:00Z');
  syncResult: Omit<SyncKnownResult, 'workers'> & { workers?: SyncKnownResult['workers'] } = {
    orphanedRuntimePods: [],
    resumed: [],
    forgotten: [],
  };
  #pods = new Map<string, Tracked>();

  constructor(pods: FakePod[] = []) {
    pods.forEach((p, i) => this.add(p, i));
  }

  readonly now = (): number => this.time;

  add(p: FakePod, index = this.#pods.size): PodInfo {
    const uid = p.uid ?? `uid-${String(index).padStart(4, '0')}-${p.namespace}-${p.name}`;
    const containers = p.containers ?? 1;
    const state = p.state ?? 'sync';
    const pod: V1Pod | undefined = p.noSpec
      ? undefined
      : {
          metadata: { name: p.name, namespace: p.namespace, uid, labels: p.labels ?? {}, annotations: p.annotations ?? {} },
          spec: {
            containers: [{ name: 'main' }],
            ...(p.grace !== undefined ? { terminationGracePeriodSeconds: p.grace } : {}),
            ...(p.priority !== undefined ? { priority: p.priority } : {}),
          },
        };
    const info: PodInfo = {
      uid,
      namespace: p.namespace,
      name: p.name,
      ...(pod ? { pod } : {}),
      static: p.static ?? false,
      state,
      containersRunning: state === 'sync' || state === 'runtime' ? containers : 0,
      containersTotal: containers,
      since: this.time - 60_000,
      history: [],
    };
    this.#pods.set(uid, { info, behaviour: p.behaviour ?? 'exits', waitsSinceKill: 0, killed: false, ...(p.ownerPid !== undefined ? { ownerPid: p.ownerPid } : {}) });
    return info;
  }

  pod(uid: string): PodInfo | undefined {
    return this.#pods.get(uid)?.info;
  }

  uidOf(namespace: string, name: string): string {
    for (const t of this.#pods.values()) if (t.info.namespace === namespace && t.info.name === name) return t.info.uid;
    throw new Error(`no fake pod ${namespace}/${name}`);
  }

  async listPods(options?: ListPodsOptions): Promise<PodInfo[]> {
    this.listings += 1;
    this.listingOptions.push(options);
    const only = options?.uids !== undefined ? new Set(options.uids) : undefined;
    return [...this.#pods.values()].filter((t) => only === undefined || only.has(t.info.uid)).map((t) => structuredClone(t.info));
  }

  async getPod(uid: string): Promise<PodInfo | undefined> {
    const t = this.#pods.get(uid);
    return t ? structuredClone(t.info) : undefined;
  }

  async requestKill(request: KillRequest): Promise<KillHandle> {
    this.kills.push(request);
    const t = this.#pods.get(request.uid);
    if (!t) throw new Error(`unknown pod ${request.uid}`);
    if (t.behaviour === 'fails') throw new Error('StopContainer: rpc error: code = DeadlineExceeded\nsecond line');
    const own = t.info.pod?.spec?.terminationGracePeriodSeconds ?? (t.info.pod ? 30 : 1);
    const current = t.info.gracePeriod ?? own;
    const grace = Math.max(1, Math.min(current, request.gracePeriodSeconds ?? current));
    if (t.info.state !== 'terminated' && t.info.state !== 'finished') {
      t.info.state = 'terminating';
      t.info.gracePeriod = grace;
      t.info.graceDeadline = this.time + grace * 1000;
      t.info.since = this.time;
    }
    t.killed = true;
    return t.ownerPid !== undefined ? { uid: request.uid, handledBy: 'delegated', ownerPid: t.ownerPid } : { uid: request.uid, handledBy: 'local', ownerPid: 4242 };
  }

  async waitTerminated(uids: string[], options: WaitOptions): Promise<Map<string, WaitOutcome>> {
    this.waits.push({ uids: [...uids], timeoutMs: options.timeoutMs });
    const outcomes = new Map<string, WaitOutcome>();
    let anyTimeout = false;
    for (const uid of uids) {
      const t = this.#pods.get(uid);
      if (!t) {
        outcomes.set(uid, 'gone');
        continue;
      }
      if (t.killed) t.waitsSinceKill += 1;
      const terminates = t.killed && (t.behaviour === 'exits' || (t.behaviour === 'late' && t.waitsSinceKill >= 2));
      if (t.info.state === 'terminated' || t.info.state === 'finished' || terminates) {
        t.info.state = 'terminated';
        t.info.containersRunning = 0;
        this.time += 100;
        options.onProgress?.(structuredClone(t.info));
        outcomes.set(uid, 'terminated');
      } else if (t.killed && t.behaviour === 'gone') {
        this.#pods.delete(uid);
        outcomes.set(uid, 'gone');
      } else {
        options.onProgress?.(structuredClone(t.info));
        outcomes.set(uid, 'timeout');
        anyTimeout = true;
      }
    }
    if (anyTimeout) this.time += options.timeoutMs;
    return outcomes;
  }

  async syncKnown(desired: V1Pod[] | undefined): Promise<SyncKnownResult> {
    this.syncCalls.push(desired);
    const workers = new Map(
      this.syncResult.workers ??
        [...this.#pods.values()].map((t) => [
          t.info.uid,
          {
            state: t.info.state === 'runtime' || t.info.state === 'finished' ? 'terminated' : t.info.state,
            orphan: desired !== undefined && !desired.some((d) => d.metadata?.uid === t.info.uid),
            hasConfig: t.info.pod !== undefined,
            static: t.info.static,
          } as const,
        ]),
    );
    return { ...this.syncResult, workers };
  }

  subscribe(_listener: (event: SessionEvent) => void): () => void {
    return () => undefined;
  }

  /** What the API server lists as desired (`apiDesiredPods`); undefined: no API server configured. */
  apiDesired: V1Pod[] | undefined;

  async apiDesiredPods(): Promise<V1Pod[]> {
    if (!this.apiDesired) throw new Error('no API server configured for desired pods');
    return structuredClone(this.apiDesired);
  }

  /** Pods killed here (not delegated) that have not terminated. */
  drivenUnfinished(): string[] {
    return [...this.#pods.values()].filter((t) => t.killed && t.ownerPid === undefined && t.info.state === 'terminating').map((t) => t.info.uid);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
