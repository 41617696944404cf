/**
 * podctl's in-process stack on a real runtime, as a command would wire it: the CRI client, the
 * runtime-backed status cache, the runtime syncer and the pod-worker engine.
 *
 * Invariants: every transition event is recorded (tests assert on them); `close()` stops the engine
 * (aborting in-flight syncs), the cache and the client, in that order.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { connectCri, type CriClient } from '../../../src/cri/client/client.js';
import { RuntimePodCache } from '../../../src/cri/cache/cache.js';
import { RuntimeSyncer } from '../../../src/cri/runtime/syncer.js';
import { createPodWorkers, killPodNow, type KillPodFunc, type PodWorkerEvent, type PodWorkers } from '../../../src/engine/index.js';

export interface EngineStackOptions {
  /** Engine backoff after a failed sync, ms (the kubelet's 10 s by default). */
  backOffPeriodMs?: number;
  /** Per-RPC deadline, ms. */
  rpcTimeoutMs?: number;
}

export class EngineStack {
  readonly client: CriClient;
  readonly cache: RuntimePodCache;
  readonly syncer: RuntimeSyncer;
  readonly workers: PodWorkers;
  readonly kill: KillPodFunc;
  readonly events: PodWorkerEvent[] = [];
  /** preStop hook outcomes the syncer reported. */
  readonly hooks: { uid: string; container: string; ok: boolean; message: string; at: number }[] = [];

  private constructor(client: CriClient, options: EngineStackOptions) {
    this.client = client;
    this.cache = new RuntimePodCache({ client });
    this.syncer = new RuntimeSyncer({
      client,
      cache: this.cache,
      onHook: (hook) => this.hooks.push({ ...hook, at: Date.now() }),
    });
    this.workers = createPodWorkers({
      syncer: this.syncer,
      cache: this.cache,
      ...(options.backOffPeriodMs !== undefined ? { backOffPeriodMs: options.backOffPeriodMs } : {}),
      onEvent: (event) => this.events.push(event),
    });
    this.kill = killPodNow(this.workers);
  }

  static async open(socket: string, options: EngineStackOptions = {}): Promise<EngineStack> {
    const client = await connectCri({ endpoint: socket, timeoutMs: options.rpcTimeoutMs ?? 10_000 });
    const stack = new EngineStack(client, options);
    stack.cache.start();
    return stack;
  }

  /** Hands a running pod to the engine (the kubelet's "pod added") and waits for its first sync. */
  async adopt(pod: V1Pod): Promise<void> {
    this.workers.updatePod({ updateType: 'create', pod, startTime: Date.now() });
    await this.workers.whenIdle();
  }

  eventsFor(uid: string, type?: PodWorkerEvent['type']): PodWorkerEvent[] {
    return this.events.filter((e) => e.uid === uid && (type === undefined || e.type === type));
  }

  async close(): Promise<void> {
    await this.workers.close();
    this.cache.close();
    this.client.close();
  }
}
