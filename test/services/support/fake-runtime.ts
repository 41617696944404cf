/**
 * An in-memory container runtime for session tests: pods with containers and sandboxes, a syncer
 * that stops them (after a per-pod delay, abortable, so grace shortening is observable) and a
 * status cache that always answers with the current state. Every kill attempt is recorded.
 */
import type { PodStatus, PodStatusCache, PodSyncer, RunningPod, V1Pod } from '../../../src/engine/types.js';
import type { RuntimePodRecord, SessionRuntime } from '../../../src/session/open.js';

export interface FakePod {
  uid: string;
  name: string;
  namespace: string;
  grace: number;
  running: boolean;
  /** How long the containers take to stop after SIGTERM, ms (Infinity: only at the grace deadline). */
  stopDelayMs: number;
  /** A static pod (config source 'file'). */
  static?: boolean;
}

export interface KillAttempt {
  uid: string;
  grace: number | undefined;
  kind: 'pod' | 'runtime';
  at: number;
}

function specOf(p: FakePod): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { uid: p.uid, name: p.name, namespace: p.namespace, annotations: { 'kubernetes.io/config.source': p.static ? 'file' : 'api' } },
    spec: { containers: [{ name: 'main', image: 'pause' }], terminationGracePeriodSeconds: p.grace, restartPolicy: 'Always' },
  };
}

function statusOf(p: FakePod): PodStatus {
  return {
    id: p.uid,
    name: p.name,
    namespace: p.namespace,
    containerStatuses: [{ id: `${p.uid}-c`, name: 'main', state: p.running ? 'running' : 'exited', ...(p.running ? {} : { exitCode: 0 }) }],
    sandboxStatuses: [{ id: `${p.uid}-s`, state: p.running ? 'ready' : 'notready' }],
  };
}

function abortable(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
    function done(): void {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }
    function onAbort(): void {
      if (timer) clearTimeout(timer);
      reject(signal.reason ?? new Error('aborted'));
    }
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export class FakeRuntime {
  readonly pods = new Map<string, FakePod>();
  readonly attempts: KillAttempt[] = [];
  /** Containers actually stopped (one per pod termination that completed). */
  readonly stops: string[] = [];
  /** Pods configured without a spec in the listing (runtime-only pods). */
  readonly specless = new Set<string>();
  listCalls = 0;

  add(pod: Partial<FakePod> & { uid: string }): FakePod {
    const full: FakePod = { name: `pod-${pod.uid}`, namespace: 'default', grace: 30, running: true, stopDelayMs: 0, ...pod };
    this.pods.set(full.uid, full);
    return full;
  }

  async #stop(uid: string, grace: number | undefined, kind: 'pod' | 'runtime', signal: AbortSignal): Promise<void> {
    this.attempts.push({ uid, grace, kind, at: Date.now() });
    const pod = this.pods.get(uid);
    if (!pod || !pod.running) return;
    const deadline = (grace ?? pod.grace) * 1000;
    await abortable(Math.min(pod.stopDelayMs, deadline), signal);
    if (pod.running) {
      pod.running = false;
      this.stops.push(uid);
    }
  }

  readonly syncer: PodSyncer = {
    syncPod: async () => false,
    syncTerminatingPod: async (signal, pod, _status, grace) => this.#stop(pod.metadata!.uid!, grace, 'pod', signal),
    syncTerminatingRuntimePod: async (signal, running: RunningPod) => this.#stop(running.id, 1, 'runtime', signal),
    syncTerminatedPod: async () => {},
  };

  readonly cache: PodStatusCache = {
    get: (uid) => {
      const pod = this.pods.get(uid);
      return pod ? statusOf(pod) : undefined;
    },
    getNewerThan: async (uid) => {
      const pod = this.pods.get(uid);
      return pod ? statusOf(pod) : { id: uid, name: '', namespace: '', containerStatuses: [], sandboxStatuses: [] };
    },
  };

  record(pod: FakePod): RuntimePodRecord {
    return {
      uid: pod.uid,
      namespace: pod.namespace,
      name: pod.name,
      runningPod: {
        id: pod.uid,
        name: pod.name,
        namespace: pod.namespace,
        containers: [{ id: `${pod.uid}-c`, name: 'main', state: pod.running ? 'running' : 'exited' }],
        sandboxes: [{ id: `${pod.uid}-s`, state: pod.running ? 'ready' : 'notready' }],
      },
      status: statusOf(pod),
      ...(this.specless.has(pod.uid) ? {} : { pod: specOf(pod) }),
      static: pod.static ?? false,
    };
  }

  /** A SessionRuntime view of this runtime (each session gets its own; they share the pods). */
  session(): SessionRuntime {
    return {
      endpoint: 'unix:///fake.sock',
      simulated: true,
      syncer: this.syncer,
      cache: this.cache,
      listPods: async () => {
        this.listCalls += 1;
        return [...this.pods.values()].map((p) => this.record(p));
      },
      close: async () => {},
    };
  }

  specFor(uid: string): V1Pod {
    return specOf(this.pods.get(uid)!);
  }
}
