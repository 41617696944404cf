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
 * relisting every `pollIntervalMs` while started (counted from the last relist, whoever asked).
 * While `deferRelists` says so (pods' stops in flight), the relists waits and events ask for are
 * deferred: they share one that starts within `deferredRelistMs` (the kubelet's relist period).
 *
 * Invariants:
 * - At most one relist runs at a time; requests during a relist share one queued follow-up relist.
 * - A deferred relist starts at the latest `deferredRelistMs` after it was first asked for, and only
 *   a relist that started after an ask serves it.
 * - Every wait is bounded (relists are RPCs with deadlines) and abortable by the waiter's signal;
 *   one waiter's abort never cancels a relist others wait on.
 * - A failed relist rejects its waiters with the CriError and leaves the last good state in place.
 *   Only the listing calls can fail a relist: a failed ContainerStatus (an exited container's exit
 *   code) leaves that container's details unknown until a later relist asks again.
 * - Container events start at most one relist per `eventRelistIntervalMs` (default 0: one per
 *   event); a relist an event asked for is delayed by less than the interval, never dropped.
 * - `close()` ends the event stream, polling and a delayed relist; later waits reject.
 *
 * Patching from events (`patchFromEvents`, for a follower: watch): an event about a container or
 * sandbox the last listing holds is applied to its pod at once (event-patch.ts: its state, times and
 * exit code; its removal) instead of starting a relist; an event about anything else relists as
 * above. Events applied while a relist runs are applied again over its result (they are monotone,
 * so an older one never undoes a newer listing). While the event stream delivers, `listPods` with a
 * maximum age accepts the patched listing for up to `eventedMaxAgeMs` (30 s) after the last relist —
 * the events keep it current — and once events were applied, a relist comes when the last one is
 * that old, as a check; `getNewerThan` and `refresh` still wait for relists (a kill decides by a
 * listing, never by events alone).
 */
import { setMaxListeners } from 'node:events';
import pLimit from 'p-limit';
import type { Clock, PodStatus, PodStatusCache } from '../../engine/types.js';
import type { CriClient } from '../client/client.js';
import { ContainerEventCode, ContainerStateCode } from '../client/codes.js';
import { isNotFound, isUnimplemented } from '../client/errors.js';
import { LABEL_POD_UID } from '../client/kubelet-labels.js';
import { SingleFlight } from '../../lib/single-flight.js';
import { abortReason, raceAbort, sleep } from '../../lib/abortable.js';
import type { Container } from '../client/generated/runtime_v1.js';
import type { ContainerEventSummary } from '../client/container-event.js';
import { DeferredRelist } from './deferred-relist.js';
import { exitDetailsOf, patchPod } from './event-patch.js';
import { listingWithRetries } from './listing-retry.js';
import { emptyPodStatus, groupRuntimePods, toPodStatus, type ContainerDetails, type RuntimePod } from './pods.js';

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
  /** Apply container events to the pods they name instead of relisting (see the module comment). */
  patchFromEvents?: boolean;
  /** With patching: how long an evented listing is accepted, and when the check relist comes (ms; default EVENTED_MAX_AGE_MS). */
  eventedMaxAgeMs?: number;
  /**
   * While this says yes (the syncer's stops are in flight), a relist a wait or an event asks for is
   * deferred (`relistSoon`): it starts at the latest `deferredRelistMs` after the first ask, earlier
   * when `relistDeferredNow()` is called or a relist that serves every ask completes. Default: never.
   */
  deferRelists?: () => boolean;
  /** The longest a deferred relist waits, ms (default 1000: the kubelet's relist period). */
  deferredRelistMs?: number;
}

/**
 * How long a listing kept current by events is accepted for (ms) while the event stream delivers,
 * and when the check relist comes after events were applied (the kubelet's Evented PLEG relists
 * every 300 s).
 */
const EVENTED_MAX_AGE_MS = 30_000;

/**
 * An event stream open this long without failing is taken to deliver (ms), even before its first
 * event: a runtime without events (containerd 1.6) refuses the call at once, and the stream of an
 * idle node delivers nothing until something changes.
 */
const STREAM_SETTLE_MS = 1_000;

function fingerprint(status: PodStatus): string {
  return JSON.stringify(status);
}

/** Which pod each container and sandbox id of a listing belongs to. */
function ownersOf(pods: ReadonlyMap<string, RuntimePod>): Map<string, string> {
  const owners = new Map<string, string>();
  for (const [uid, pod] of pods) {
    for (const c of pod.containers) owners.set(c.id, uid);
    for (const sb of pod.sandboxes) owners.set(sb.id, uid);
  }
  return owners;
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
  readonly #patchFromEvents: boolean;
  readonly #eventedMaxAgeMs: number;
  /** The pod of each container and sandbox id the cache holds (patching only). */
  #owners = new Map<string, string>();
  /** Events applied while a relist runs (patching only), to apply again over its result. */
  #appliedDuringRelist: Array<{ at: number; event: ContainerEventSummary }> = [];
  /** When the running relist started (patching only; undefined: none runs). */
  #relistRunningSince: number | undefined;
  /** The event stream has delivered since it last (re)connected and has not failed since. */
  #streamDelivers = false;
  /** When the event stream was last opened (undefined: it failed or ended since). */
  #streamOpenedAt: number | undefined;
  /** An event was applied since the last relist (patching only): the check relist is due. */
  #patchedSinceRelist = false;
  /** The check relist after patches (patching only). */
  #checkTimer: NodeJS.Timeout | undefined;
  readonly #deferRelists: (() => boolean) | undefined;
  readonly #deferredRelistMs: number;
  /** The deferred relist every `relistSoon` ask shares until it starts (see relistSoon). */
  #deferred: DeferredRelist | undefined;
  /** How many relists have started (their sequence numbers: a relist started after an ask has a higher one). */
  #relistsStarted = 0;

  #pods = new Map<string, RuntimePod>();
  #statuses = new Map<string, PodStatus>();
  #fingerprints = new Map<string, string>();
  /** Pods patched since their status was last derived (derived when asked for, or by the next relist). */
  #unsettled = new Set<string>();
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
    this.#patchFromEvents = options.patchFromEvents ?? false;
    this.#eventedMaxAgeMs = options.eventedMaxAgeMs ?? EVENTED_MAX_AGE_MS;
    this.#deferRelists = options.deferRelists;
    this.#deferredRelistMs = options.deferredRelistMs ?? 1000;
  }

  // ------------------------------------------------------------------------- PodStatusCache

  get(uid: string): PodStatus | undefined {
    this.#settle(uid);
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
      await raceAbort(this.#deferRelists?.() ? this.#relistDeferred() : this.#requestRelist(minTime), signal);
    }
    return this.get(uid) ?? emptyPodStatus(uid);
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

  /**
   * A relist started after this call that need not start at once: every ask shares one deferred
   * relist, which starts `deferredRelistMs` after the first ask, or at once on `relistDeferredNow()`;
   * a relist that started after every ask and completes meanwhile (the poll's) serves it instead.
   * While many pods' stops end one after another, their checks share about one relist a period
   * instead of starting one each (on a runtime busy stopping them, every relist slows its stops).
   */
  relistSoon(signal?: AbortSignal): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('runtime pod cache is closed'));
    return raceAbort(this.#relistDeferred(), signal);
  }

  /** Starts the deferred relist now, if one is waiting (the last stop in flight ended). */
  relistDeferredNow(): void {
    this.#deferred?.start();
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
    if (this.#observedAt < minTime && !this.#keptCurrentByEvents(maxAgeMs)) await raceAbort(this.#requestRelist(minTime), signal);
    return this.pods();
  }

  /** Whether events keep the listing current enough for a listing that accepts `maxAgeMs` (patching only). */
  #keptCurrentByEvents(maxAgeMs: number): boolean {
    if (!this.#patchFromEvents || maxAgeMs <= 0 || this.#eventsSupported === false) return false;
    const now = this.#clock.now();
    const streaming = this.#streamDelivers || (this.#streamOpenedAt !== undefined && now - this.#streamOpenedAt >= STREAM_SETTLE_MS);
    return streaming && now - this.#observedAt <= this.#eventedMaxAgeMs;
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
    if (this.#checkTimer !== undefined) clearTimeout(this.#checkTimer);
    this.#checkTimer = undefined;
    this.#deferred?.cancel(new Error('runtime pod cache closed'));
    this.#deferred = undefined;
  }

  // ------------------------------------------------------------------------------ relisting

  /** A relist stamped ≥ minStart: the running one if it qualifies, else the (shared) next one. */
  #requestRelist(minStart: number): Promise<void> {
    return this.#relists.request(minStart);
  }

  /** The shared deferred relist, asked for now (see relistSoon). */
  #relistDeferred(): Promise<void> {
    const deferred = (this.#deferred ??= new DeferredRelist(this.#deferredRelistMs, () => {
      if (this.#deferred === deferred) this.#deferred = undefined;
      return this.#requestRelist(this.#clock.now());
    }));
    return deferred.ask(this.#relistsStarted);
  }

  /** A relist for a container event: at once, or when the event relist interval has passed. */
  #relistForEvent(): void {
    if (this.#eventRelistTimer !== undefined) return; // one is due already: it sees this event's change too
    if (this.#deferRelists?.()) {
      this.#relistDeferred().catch(() => undefined);
      return;
    }
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
    this.#relistsStarted += 1;
    const sequence = this.#relistsStarted;
    if (this.#patchFromEvents) this.#relistRunningSince = startedAt;
    try {
      await this.#listAndCommit(startedAt, sequence);
    } finally {
      if (this.#relistRunningSince === startedAt) {
        this.#relistRunningSince = undefined;
        this.#appliedDuringRelist = [];
      }
    }
  }

  async #listAndCommit(startedAt: number, sequence: number): Promise<void> {
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
    const owners = ownersOf(pods);
    // what events said since this listing started may be newer than what it found
    for (const { at, event } of this.#appliedDuringRelist) if (at >= startedAt) this.#applyTo(pods, owners, event);
    for (const uid of this.#unsettled) this.#settle(uid);
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
    this.#unsettled.clear();
    this.#owners = owners;
    this.#patchedSinceRelist = false;
    this.#observedAt = startedAt;
    this.#relistCount += 1;
    if (this.#deferred?.servedBy(sequence)) this.#deferred = undefined;
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
        this.#details.set(c.id, exitDetailsOf(s));
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
        this.#streamOpenedAt = this.#clock.now();
        for await (const event of this.#client.containerEvents(signal)) {
          this.#eventsSupported = true;
          backoffMs = 250;
          this.#streamDelivers = true;
          const patched = this.#patchFromEvents ? this.#patch(event) : undefined;
          const uid = patched ?? event.podUid;
          this.#emit({ kind: 'container-event', at: this.#clock.now(), uids: uid ? [uid] : [] });
          if (patched === undefined) this.#relistForEvent();
        }
        this.#streamDelivers = false;
        this.#streamOpenedAt = undefined;
        if (signal.aborted) return;
        // the runtime ended the stream (restart): reconnect and relist to catch up
      } catch (err) {
        this.#streamDelivers = false;
        this.#streamOpenedAt = undefined;
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

  /**
   * Applies one event to the pod it names (event-patch.ts); returns that pod's UID, or undefined
   * when the event could not be applied (the caller relists).
   */
  #patch(event: ContainerEventSummary): string | undefined {
    const uid = this.#applyTo(this.#pods, this.#owners, event);
    if (uid === undefined) return undefined;
    if (this.#relistRunningSince !== undefined) this.#appliedDuringRelist.push({ at: this.#clock.now(), event });
    this.#unsettled.add(uid);
    this.#patchedSinceRelist = true;
    this.#scheduleCheck();
    return uid;
  }

  /**
   * A relist once the last one is `eventedMaxAgeMs` old, when events were applied since: what the
   * events said is checked against a listing even when nobody asks for one (a runtime may drop
   * events when its queue to a slow reader is full: containerd counts them as dropped). No timer runs
   * while no event comes.
   */
  #scheduleCheck(): void {
    if (this.#checkTimer !== undefined || this.#closed) return;
    const waitMs = Math.max(0, this.#observedAt + this.#eventedMaxAgeMs - this.#clock.now());
    this.#checkTimer = setTimeout(() => {
      this.#checkTimer = undefined;
      if (!this.#closed && this.#patchedSinceRelist) this.#requestRelist(this.#clock.now()).catch(() => undefined);
    }, waitMs);
    this.#checkTimer.unref();
  }

  /** Derives a patched pod's status (a drain's many events to one pod cost one derivation). */
  #settle(uid: string): void {
    if (!this.#unsettled.delete(uid)) return;
    const pod = this.#pods.get(uid);
    if (pod === undefined) {
      this.#statuses.delete(uid);
      this.#fingerprints.delete(uid);
      return;
    }
    const status = toPodStatus(pod);
    this.#statuses.set(uid, status);
    this.#fingerprints.set(uid, fingerprint(status));
  }

  /** Applies an event to `pods` (and `owners`, and the exit details); the pod's UID, or undefined. */
  #applyTo(pods: Map<string, RuntimePod>, owners: Map<string, string>, event: ContainerEventSummary): string | undefined {
    const uid = owners.get(event.containerId);
    const pod = uid === undefined ? undefined : pods.get(uid);
    if (uid === undefined || pod === undefined) return undefined;
    const next = patchPod(pod, event);
    if (next === undefined) return undefined;
    if (next === pod) return uid;
    if (next === 'gone') {
      pods.delete(uid);
      for (const sb of pod.sandboxes) owners.delete(sb.id);
      return uid;
    }
    pods.set(uid, next);
    // what reaches here changed a container (a sandbox's change is a stop, or its pod is gone)
    if (event.containerEventType === ContainerEventCode.DELETED) owners.delete(event.containerId);
    else if (event.status?.state === ContainerStateCode.EXITED) this.#details.set(event.containerId, exitDetailsOf(event.status));
    return uid;
  }

  /** A relist every `pollIntervalMs`, counted from the last relist's start (one asked for meanwhile counts). */
  async #poll(signal: AbortSignal): Promise<void> {
    if (this.#pollIntervalMs <= 0) return;
    let waitMs = this.#pollIntervalMs;
    while (!signal.aborted) {
      try {
        await sleep(waitMs, signal, { unref: true });
      } catch {
        return;
      }
      const sinceLast = this.#clock.now() - this.#lastRelistStartedAt;
      if (sinceLast < this.#pollIntervalMs) {
        waitMs = this.#pollIntervalMs - sinceLast;
        continue;
      }
      waitMs = this.#pollIntervalMs;
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
