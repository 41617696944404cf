/**
 * The runtime-backed PodStatusCache: pod statuses from relisting the runtime.
 *
 * One relist (ListPodSandbox + ListContainers, plus ContainerStatus once per newly exited container
 * for its exit code and times) serves every pod. A relist is stamped with the clock time at which it
 * *started*: everything it reports was true at or after that time.
 *
 * Freshness: `getNewerThan(uid, t)` resolves as soon as a relist stamped ≥ t completes, triggering
 * one if none is running or queued (no fixed 1 s tick as in the kubelet's PLEG). `refresh()` is
 * called by the syncer right after podctl's own actions, and on every runtime event when the
 * runtime streams them (GetContainerEvents); runtimes without events (containerd 1.6) fall back to
 * relisting every `pollIntervalMs` while started.
 *
 * Invariants:
 * - At most one relist runs at a time; requests during a relist share one queued follow-up relist.
 * - Every wait is bounded (relists are RPCs with deadlines) and abortable by the waiter's signal;
 *   one waiter's abort never cancels a relist others wait on.
 * - A failed relist rejects its waiters with the CriError and leaves the last good state in place.
 *   Only the listing calls can fail a relist: a failed ContainerStatus (an exited container's exit
 *   code) leaves that container's details unknown until a later relist asks again.
 * - Container events start at most one relist per `eventRelistIntervalMs` (default 0: one per
 *   event); a relist an event asked for is delayed by less than the interval, never dropped.
 * - `close()` ends the event stream, polling and a delayed relist; later waits reject.
 */
import { setMaxListeners } from 'node:events';
import pLimit from 'p-limit';
import type { Clock, PodStatus, PodStatusCache } from '../engine/types.js';
import type { CriClient } from './client.js';
import { ContainerStateCode } from './codes.js';
import { isNotFound, isTransient, isUnavailable, isUnimplemented } from './errors.js';
import { LABEL_POD_UID } from './kubelet-labels.js';
import { SingleFlight } from '../lib/single-flight.js';
import { abortReason, raceAbort, sleep } from '../lib/abortable.js';
import type { Container } from './generated/runtime_v1.js';
import { emptyPodStatus, groupRuntimePods, nanosToMs, toPodStatus, type ContainerDetails, type RuntimePod } from './pods.js';

export type RuntimeCacheEvent =
  | { kind: 'relisted'; at: number; uids: string[] }
  | { kind: 'container-event'; at: number; uids: string[] }
  | { kind: 'events-unsupported'; at: number; message: string }
  | { kind: 'error'; at: number; message: string };

export interface RuntimePodCacheOptions {
  client: CriClient;
  clock?: Clock;
  /** Deadline for each relist RPC, ms (default: the client's). */
  rpcTimeoutMs?: number;
  /**
   * Periodic relist after `start()` when the runtime does not stream events (containerd 1.6);
   * default 1000 ms (the kubelet's relist period); 0 disables polling.
   */
  pollIntervalMs?: number;
  /** Concurrent ContainerStatus calls during a relist (default 16). */
  statusConcurrency?: number;
  /**
   * Fetch exit code, times and reason of exited containers (one ContainerStatus each, once per
   * container; default true). A reader that shows none of them (`podctl status`) turns it off: a
   * relist is then one ListPodSandbox and one ListContainers, and exited containers carry no details.
   */
  exitDetails?: boolean;
  /**
   * With exit details on: only for containers of the pods this says yes to (by pod UID; a
   * container without the kubelet's UID label is always asked about). Default: every pod. A
   * container skipped now is asked about in a later relist once the answer turns yes.
   */
  exitDetailsFor?: (uid: string) => boolean;
  /** Upper bound of one getNewerThan wait, ms (default 60_000). */
  maxWaitMs?: number;
  /**
   * Least time between two relists that container events start, ms, or a function of the number of
   * pods last listed (default 0: one relist per event, right after the one running). Events still
   * reach listeners at once; the relist that reports what they changed comes at most once per
   * interval. For a follower that drives nothing (watch): a drain makes thousands of events, and a
   * relist per event was most of what following it cost. Waits (`getNewerThan`, `listPods`,
   * `refresh`) are not bounded by it.
   */
  eventRelistIntervalMs?: number | ((pods: number) => number);
}

/** Pauses before a relist's listing call is tried again after a transient failure. */
const LISTING_RETRY_MS: readonly number[] = [100, 300];

/**
 * One listing call of a relist, tried again (twice) after a transient failure: a read is safe to
 * repeat, and one flaky answer must not fail a whole listing of the node. UNAVAILABLE is not tried
 * again here: the client already retried it within the call's deadline (client.ts), and a runtime
 * that is down must fail the relist in that time, not three times over.
 */
async function listingWithRetries<T>(list: () => Promise<T>, signal: AbortSignal): Promise<T> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await list();
    } catch (error) {
      const pauseMs = LISTING_RETRY_MS[attempt];
      if (pauseMs === undefined || !isTransient(error) || isUnavailable(error) || signal.aborted) throw error;
      await sleep(pauseMs, signal);
    }
  }
}

function fingerprint(status: PodStatus): string {
  return JSON.stringify(status);
}

export class RuntimePodCache implements PodStatusCache {
  #client: CriClient;
  #clock: Clock;
  #rpcTimeoutMs: number | undefined;
  #pollIntervalMs: number;
  #statusConcurrency: number;
  #exitDetails: boolean;
  #exitDetailsFor: ((uid: string) => boolean) | undefined;
  #maxWaitMs: number;
  #eventRelistIntervalMs: number | ((pods: number) => number);
  /** When the last relist started (clock ms), for the event relist interval. */
  #lastRelistStartedAt = Number.NEGATIVE_INFINITY;
  /** The relist an event asked for, waiting for the interval to pass. */
  #eventRelistTimer: NodeJS.Timeout | undefined;

  #pods = new Map<string, RuntimePod>();
  #statuses = new Map<string, PodStatus>();
  #fingerprints = new Map<string, string>();
  /** Exit details of exited containers: immutable once exited, so fetched once. */
  #details = new Map<string, ContainerDetails>();
  /** Stamp of the newest completed relist (-Infinity: none yet). */
  #observedAt = Number.NEGATIVE_INFINITY;
  readonly #relists = new SingleFlight(
    (startedAt) => this.#relist(startedAt),
    () => this.#clock.now(),
  );
  #listeners = new Set<(event: RuntimeCacheEvent) => void>();
  #lifecycle = new AbortController();
  #closed = false;
  #eventsSupported: boolean | undefined;
  #relistCount = 0;
  /** ContainerStatus calls that failed during relists (their containers' details stay unknown). */
  #detailsUnknown = 0;

  constructor(options: RuntimePodCacheOptions) {
    // Every in-flight status call of a relist listens on this one signal (up to statusConcurrency
    // at once, each removed when its call settles): many listeners here are expected, not a leak.
    setMaxListeners(0, this.#lifecycle.signal);
    this.#client = options.client;
    this.#clock = options.clock ?? { now: () => Date.now() };
    this.#rpcTimeoutMs = options.rpcTimeoutMs;
    this.#pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.#statusConcurrency = options.statusConcurrency ?? 16;
    this.#exitDetails = options.exitDetails ?? true;
    this.#exitDetailsFor = options.exitDetailsFor;
    this.#maxWaitMs = options.maxWaitMs ?? 60_000;
    this.#eventRelistIntervalMs = options.eventRelistIntervalMs ?? 0;
  }

  // ------------------------------------------------------------------------- PodStatusCache

  get(uid: string): PodStatus | undefined {
    return this.#statuses.get(uid);
  }

  async getNewerThan(uid: string, minTime: number, signal?: AbortSignal): Promise<PodStatus> {
    if (signal?.aborted) throw abortReason(signal);
    const giveUpAt = Date.now() + this.#maxWaitMs;
    while (this.#observedAt < minTime) {
      this.#assertOpen();
      if (Date.now() >= giveUpAt) {
        throw new Error(`no runtime status newer than ${new Date(minTime).toISOString()} within ${this.#maxWaitMs} ms`);
      }
      // a relist stamps the time it starts: it can only satisfy minTime once the clock reaches it
      const wait = minTime - this.#clock.now();
      if (wait > 0) await sleep(Math.min(wait, 1000, Math.max(0, giveUpAt - Date.now())), signal);
      await raceAbort(this.#requestRelist(minTime), signal);
    }
    return this.#statuses.get(uid) ?? emptyPodStatus(uid);
  }

  // ------------------------------------------------------------------------------ the rest

  /** Time stamp of the newest completed relist (epoch ms), or undefined before the first. */
  get observedAt(): number | undefined {
    return Number.isFinite(this.#observedAt) ? this.#observedAt : undefined;
  }

  /** ContainerStatus calls of relists that failed (those containers' exit details are asked again). */
  get detailsUnknownCount(): number {
    return this.#detailsUnknown;
  }

  /** How many relists completed (for tests and metrics). */
  get relistCount(): number {
    return this.#relistCount;
  }

  /** True/false once known whether the runtime streams container events. */
  get eventsSupported(): boolean | undefined {
    return this.#eventsSupported;
  }

  /** Relists now (or joins a relist that started now or later); resolves when it completes. */
  refresh(signal?: AbortSignal): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('runtime pod cache is closed'));
    return raceAbort(this.#requestRelist(this.#clock.now()), signal);
  }

  /** Pods as last relisted (no RPC). */
  pods(): RuntimePod[] {
    return [...this.#pods.values()];
  }

  pod(uid: string): RuntimePod | undefined {
    return this.#pods.get(uid);
  }

  /**
   * Rebuilt pods from a relist no older than `maxAgeMs` (default 0: a fresh relist). A relist still
   * running that started within `maxAgeMs` is joined rather than followed by another.
   */
  async listPods(signal?: AbortSignal, maxAgeMs = 0): Promise<RuntimePod[]> {
    const minTime = this.#clock.now() - maxAgeMs;
    if (this.#observedAt < minTime) await raceAbort(this.#requestRelist(minTime), signal);
    return this.pods();
  }

  subscribe(listener: (event: RuntimeCacheEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Starts following the runtime: the container event stream (reconnecting with backoff while the
   * runtime is away), or periodic relists when the runtime has no events and pollIntervalMs is set.
   */
  start(): void {
    if (this.#closed) return;
    void this.#followEvents(this.#lifecycle.signal);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#lifecycle.abort(new Error('runtime pod cache closed'));
    this.#listeners.clear();
    if (this.#eventRelistTimer !== undefined) clearTimeout(this.#eventRelistTimer);
    this.#eventRelistTimer = undefined;
  }

  // ------------------------------------------------------------------------------ relisting

  /** A relist stamped ≥ minStart: the running one if it qualifies, else the (shared) next one. */
  #requestRelist(minStart: number): Promise<void> {
    return this.#relists.request(minStart);
  }

  /** A relist for a container event: at once, or when the event relist interval has passed. */
  #relistForEvent(): void {
    if (this.#eventRelistTimer !== undefined) return; // one is due already: it sees this event's change too
    const interval = typeof this.#eventRelistIntervalMs === 'number' ? this.#eventRelistIntervalMs : this.#eventRelistIntervalMs(this.#pods.size);
    const waitMs = this.#lastRelistStartedAt + interval - this.#clock.now();
    if (waitMs <= 0) {
      this.#requestRelist(this.#clock.now()).catch(() => undefined);
      return;
    }
    this.#eventRelistTimer = setTimeout(() => {
      this.#eventRelistTimer = undefined;
      if (!this.#closed) this.#requestRelist(this.#clock.now()).catch(() => undefined);
    }, waitMs);
    this.#eventRelistTimer.unref();
  }

  async #relist(startedAt: number): Promise<void> {
    this.#lastRelistStartedAt = startedAt;
    const call = {
      signal: this.#lifecycle.signal,
      ...(this.#rpcTimeoutMs !== undefined ? { timeoutMs: this.#rpcTimeoutMs } : {}),
    };
    let sandboxes, containers;
    try {
      [sandboxes, containers] = await Promise.all([
        listingWithRetries(() => this.#client.listPodSandbox(undefined, call), call.signal),
        listingWithRetries(() => this.#client.listContainers(undefined, call), call.signal),
      ]);
      await this.#fetchExitDetails(containers, call);
    } catch (err) {
      this.#emit({ kind: 'error', at: this.#clock.now(), message: err instanceof Error ? err.message : String(err) });
      throw err;
    }
    const present = new Set(containers.map((c) => c.id));
    for (const id of this.#details.keys()) if (!present.has(id)) this.#details.delete(id);

    const pods = groupRuntimePods(sandboxes, containers, this.#details);
    const changed: string[] = [];
    const statuses = new Map<string, PodStatus>();
    const fingerprints = new Map<string, string>();
    for (const [uid, pod] of pods) {
      const status = toPodStatus(pod);
      statuses.set(uid, status);
      const fp = fingerprint(status);
      fingerprints.set(uid, fp);
      if (this.#fingerprints.get(uid) !== fp) changed.push(uid);
    }
    for (const uid of this.#statuses.keys()) if (!pods.has(uid)) changed.push(uid);
    // a late relist never overwrites a newer one
    if (startedAt < this.#observedAt) return;
    this.#pods = pods;
    this.#statuses = statuses;
    this.#fingerprints = fingerprints;
    this.#observedAt = startedAt;
    this.#relistCount += 1;
    this.#emit({ kind: 'relisted', at: startedAt, uids: changed });
  }

  /** ContainerStatus for exited containers whose exit code is not known yet. */
  async #fetchExitDetails(containers: readonly Container[], call: { signal: AbortSignal; timeoutMs?: number }): Promise<void> {
    if (!this.#exitDetails) return;
    const wanted = this.#exitDetailsFor;
    const missing = containers.filter((c) => {
      if (c.state !== ContainerStateCode.EXITED || this.#details.has(c.id)) return false;
      const uid = c.labels?.[LABEL_POD_UID];
      return wanted === undefined || uid === undefined || wanted(uid);
    });
    await pLimit(this.#statusConcurrency).map(missing, async (c) => {
      try {
        const res = await this.#client.containerStatus(c.id, call);
        const s = res.status;
        if (!s) return;
        const details: ContainerDetails = { exitCode: s.exitCode };
        const started = nanosToMs(s.startedAt);
        const finished = nanosToMs(s.finishedAt);
        if (started !== undefined) details.startedAt = started;
        if (finished !== undefined) details.finishedAt = finished;
        if (s.reason) details.reason = s.reason;
        this.#details.set(c.id, details);
      } catch (err) {
        // removed since the listing: nothing to report. Any other failure leaves this container's
        // exit details unknown for now (asked again in the next relist): one container's status
        // never fails the listing of the node.
        if (!isNotFound(err)) this.#detailsUnknown += 1;
      }
    });
  }

  // --------------------------------------------------------------------------------- events

  async #followEvents(signal: AbortSignal): Promise<void> {
    let backoffMs = 250;
    while (!signal.aborted) {
      try {
        for await (const event of this.#client.containerEvents(signal)) {
          this.#eventsSupported = true;
          backoffMs = 250;
          const uid = event.podUid;
          this.#emit({ kind: 'container-event', at: this.#clock.now(), uids: uid ? [uid] : [] });
          this.#relistForEvent();
        }
        if (signal.aborted) return;
        // the runtime ended the stream (restart): reconnect and relist to catch up
      } catch (err) {
        if (signal.aborted) return;
        if (isUnimplemented(err)) {
          this.#eventsSupported = false;
          this.#emit({ kind: 'events-unsupported', at: this.#clock.now(), message: String((err as Error).message) });
          await this.#poll(signal);
          return;
        }
        this.#emit({ kind: 'error', at: this.#clock.now(), message: err instanceof Error ? err.message : String(err) });
      }
      try {
        await sleep(backoffMs, signal, { unref: true });
      } catch {
        return;
      }
      backoffMs = Math.min(backoffMs * 2, 5000);
      this.#requestRelist(this.#clock.now()).catch(() => undefined);
    }
  }

  async #poll(signal: AbortSignal): Promise<void> {
    if (this.#pollIntervalMs <= 0) return;
    while (!signal.aborted) {
      try {
        await sleep(this.#pollIntervalMs, signal, { unref: true });
      } catch {
        return;
      }
      await this.#requestRelist(this.#clock.now()).catch(() => undefined);
    }
  }

  #emit(event: RuntimeCacheEvent): void {
    for (const l of this.#listeners) {
      try {
        l(event);
      } catch {
        // listeners must not throw; one that does must not break relisting
      }
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('runtime pod cache is closed');
  }
}
