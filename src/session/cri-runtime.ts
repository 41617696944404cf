/**
 * The session's default runtime: the CRI endpoint (or the embedded simulator's socket), the
 * CRI client, the relisting status cache and the CRI-backed syncer, behind `SessionRuntime`.
 *
 * Loaded lazily by session.ts, so that the CRI client is loaded only by processes that talk to a runtime.
 * Invariants: every RPC has the session's deadline (`rpcTimeoutMs`, else crictl's `timeout`, else
 * 10 s, and 2 min for the sandbox teardown calls: endpoint.ts); a socket that does not answer as an HTTP/2 (gRPC) server within the connect
 * bound (2 s, or the deadline when shorter) fails the open with one line naming the endpoint and
 * `--runtime-endpoint` — nothing is started on it; `close()` ends the event
 * stream and the channel; the listing reflects a relist started after the call (or, when the caller
 * accepts it, one no older than `maxAgeMs`).
 * `simulated` is what the runtime says of itself (its Version answer), not a guess from the
 * socket's path: the simulator reached through any `--runtime-endpoint` is still the simulator.
 */
import { connectCri, loadCriModules, type CriClient } from '../cri/client/client.js';
import { RuntimePodCache } from '../cri/cache/cache.js';
import { connectTimeoutFor, notCriError, resolveEndpoint } from '../cri/client/endpoint.js';
import { toPodStatus, toRunningPod, toV1Pod, type RuntimePod } from '../cri/cache/pods.js';
import { RuntimeSyncer } from '../cri/runtime/syncer.js';
import type { V1Pod } from '../engine/types.js';
import type { RuntimeStep, SessionOptions } from '../domain/session-api.js';
import type { RuntimePodRecord, SessionRuntime } from './runtime.js';

/** The `runtimeName` the embedded simulator answers Version with. */
export const SIMULATOR_RUNTIME_NAME = 'podctl-simulator';
/** Bound of the Version call made on connect, ms (a runtime that does not answer is not waited for longer). */
const VERSION_TIMEOUT_MS = 2_000;

/**
 * Whether the runtime behind `client` is the embedded simulator, by its own Version answer; when it
 * gives none (down, too slow, no Version), the endpoint resolution's guess stands.
 */
export async function runtimeIsSimulator(client: Pick<CriClient, 'version'>, guess: boolean, timeoutMs = VERSION_TIMEOUT_MS, signal?: AbortSignal): Promise<boolean> {
  try {
    const answer = await client.version({ timeoutMs, ...(signal ? { signal } : {}) });
    return answer.runtimeName === SIMULATOR_RUNTIME_NAME;
  } catch {
    return guess;
  }
}

export interface RuntimeHooks {
  /** Whether the engine marked the pod evicted (its containers and sandboxes are then removed). */
  isEvicted?: (uid: string) => boolean;
  /**
   * For a read-only session: no runtime event stream (nothing is driven, so nothing waits on
   * events), relists without ContainerStatus calls (exit details are not shown), and the first
   * relist starts at once, alongside the Version call.
   */
  readOnly?: boolean;
  /** Exit details only for containers of pods this says yes to (see RuntimePodCacheOptions). */
  exitDetailsFor?: (uid: string) => boolean;
  /** Each step of a termination as the syncer ends it (hooks, container and sandbox stops, removal). */
  onStep?: (uid: string, step: RuntimeStep) => void;
  /** Once the connection is up and Version and the first relist are sent (SessionOptions.onRuntimeAsked). */
  onAsked?: () => void;
  /** The event stream waits for `followEvents()` (SessionOptions.runtimeEventsFromFirstWait). */
  eventsLater?: boolean;
}

/** `hook`, called at most once; `cancel()` makes later calls do nothing. */
function once(hook: (() => void) | undefined): (() => void) & { cancel(): void } {
  let done = hook === undefined;
  return Object.assign(
    () => {
      if (done) return;
      done = true;
      hook?.();
    },
    { cancel: () => void (done = true) },
  );
}

function recordOfRuntimePod(pod: RuntimePod): RuntimePodRecord {
  const createdAt = pod.sandboxes[0]?.createdAt;
  return {
    uid: pod.uid,
    namespace: pod.namespace,
    name: pod.name,
    runningPod: toRunningPod(pod),
    status: toPodStatus(pod),
    pod: toV1Pod(pod),
    static: pod.static,
    ...(createdAt ? { createdAt } : {}),
  };
}

/** The relisting status cache and the CRI-backed syncer over `client`. */
function cacheAndSyncer(client: CriClient, options: SessionOptions, hooks: RuntimeHooks, rpcTimeoutMs: number): { cache: RuntimePodCache; syncer: RuntimeSyncer } {
  const clock = options.clock;
  const cache = new RuntimePodCache({
    client,
    ...(clock ? { clock } : {}),
    rpcTimeoutMs,
    // A read-only session reports containers running/total, never exit codes: no ContainerStatus calls.
    ...(hooks.readOnly ? { exitDetails: false } : {}),
    ...(hooks.exitDetailsFor ? { exitDetailsFor: hooks.exitDetailsFor } : {}),
    ...(options.eventRelistIntervalMs !== undefined ? { eventRelistIntervalMs: options.eventRelistIntervalMs } : {}),
    ...(options.runtimeEventPatches === true ? { patchFromEvents: true } : {}),
    // while pods' stops are in flight, relists asked for share one a relist period (see the syncer)
    deferRelists: (): boolean => syncer.stopsInFlight,
  });
  const syncer = new RuntimeSyncer({
    client,
    cache,
    ...(clock ? { clock } : {}),
    ...(options.log ? { log: options.log } : {}),
    ...(hooks.onStep ? { onStep: hooks.onStep } : {}),
    shouldRemove: (pod: V1Pod) => {
      const uid = pod.metadata?.uid;
      return uid !== undefined && (hooks.isEvicted?.(uid) ?? false);
    },
  });
  return { cache, syncer };
}

export async function connectRuntime(options: SessionOptions, stateDir: string, hooks: RuntimeHooks = {}): Promise<SessionRuntime> {
  // the generated module loads (CPU) while the endpoint is probed (I/O).
  loadCriModules().catch(() => undefined);
  const resolved = await resolveEndpoint({
    ...(options.runtimeEndpoint ? { flag: options.runtimeEndpoint } : {}),
    ...(options.rpcTimeoutMs ? { requestTimeoutMs: options.rpcTimeoutMs } : {}),
    stateDir,
    // the probe's connection is the one the calls go over: the runtime is connected to once
    keepConnection: true,
  });
  const rpcTimeoutMs = resolved.timeoutMs;
  const client = await connectCri({
    endpoint: resolved.endpoint,
    timeoutMs: rpcTimeoutMs,
    teardownTimeoutMs: resolved.teardownTimeoutMs,
    ...(resolved.connection ? { connection: resolved.connection } : {}),
  });
  const { cache, syncer } = cacheAndSyncer(client, options, hooks, rpcTimeoutMs);
  // Version, then the first relist, go out at once (held until the connection is up): the small
  // answer is not queued behind the listing's, so the session opens while the listing is on its way
  // (a command's first listing joins it). A failed open aborts Version (which then keeps the guess);
  // a failed relist is reported by the listing that needs it (it is not reused).
  const opening = new AbortController();
  const simulated = runtimeIsSimulator(client, resolved.simulated, Math.min(VERSION_TIMEOUT_MS, rpcTimeoutMs), opening.signal);
  cache.refresh().catch(() => undefined);
  const tellAsked = once(hooks.onAsked);
  // Over the check's connection (connected already) the requests are written before the loop's
  // next turn: the caller's own work (a kubelet check) starts then, while the runtime answers them,
  // not once the runtime's first bytes (its SETTINGS) came in, often with the answers.
  if (resolved.connection && hooks.onAsked) setImmediate(tellAsked);
  // The connect bound: a socket that accepts and never speaks HTTP/2, or speaks something else,
  // ends here with one line instead of every call waiting out its deadline.
  const connectMs = connectTimeoutFor(rpcTimeoutMs);
  try {
    await client.waitForReady(connectMs);
  } catch (error) {
    tellAsked.cancel();
    opening.abort();
    cache.close();
    client.close();
    throw notCriError(resolved, connectMs, error);
  }
  tellAsked();
  // A relist builds new RuntimePod objects; until the next one, every listing of a pod (a wait
  // re-evaluates on each engine event) reuses its record instead of converting it again.
  const records = new WeakMap<RuntimePod, RuntimePodRecord>();
  const recordOf = (pod: RuntimePod): RuntimePodRecord => {
    let record = records.get(pod);
    if (!record) records.set(pod, (record = recordOfRuntimePod(pod)));
    return record;
  };
  // the event stream, once (a read-only session follows none)
  const followEvents = once(hooks.readOnly ? undefined : () => cache.start());
  if (!hooks.eventsLater) followEvents();
  return {
    endpoint: resolved.endpoint,
    simulated: await simulated,
    syncer,
    cache,
    async listPods(signal, maxAgeMs) {
      return (await cache.listPods(signal, maxAgeMs ?? 0)).map(recordOf);
    },
    followEvents,
    subscribe(listener) {
      return cache.subscribe((event) => {
        if (event.kind === 'relisted' || event.kind === 'container-event') listener(event.kind, event.uids);
      });
    },
    async close() {
      cache.close();
      client.close();
    },
  };
}
