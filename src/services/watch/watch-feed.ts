/**
 * The watch feed: turns a node session's event stream into read-only snapshots (the pod listing plus
 * the latest notable events) and into a stream of lifecycle transitions.
 *
 * It listens to the session's three sources (this process's engine, other processes through the
 * checkpoint store, runtime relists); every event names the pods it concerns and marks them dirty, and
 * the dirty pods are re-read with `listPods({ uids })` at most once per `coalesceMs` — only those:
 * a pod no event named is not read again, so a drain of 500 pods costs the watch a read per change,
 * not a read of the whole store per change. The whole listing is read at start and on `refresh()`.
 * A transition is found by comparing a pod's state between two readings, so transitions made by any
 * process are seen the same way; the source of the events that preceded the re-read says who made it.
 *
 * This process's engine events also patch the listing at once (state, grace, last error), so a
 * transition made here shows without waiting for the next listing; the listing stays the authority
 * for everything else, and a listing that started before a patch never undoes it.
 *
 * This file reads, applies and publishes; the lines of the events pane are watch-entries.ts's, the
 * comparison of readings (transitions, timeline steps, engine patches) watch-transitions.ts's.
 *
 * Invariants:
 * - A pod's state in the snapshot only moves forward (runtime → sync → terminating → terminated →
 *   finished) except when a listing that started after the last patch says otherwise.
 * - No timer runs while nothing changes: a re-read is scheduled only by an event naming a pod (or
 *   `refresh()`); a runtime relist that changed no pod is not an event (a listing itself triggers a
 *   relist), and the session's own warnings only add a line.
 * - A re-read reads exactly the pods named since the previous one started (or all of them, at start
 *   and on `refresh()`); a pod the re-read does not return is gone. A failed re-read keeps its names
 *   for the next one.
 * - The first event after a quiet period is re-read at once (leading edge); events during the next
 *   `coalesceMs` (or the interval the read budget stretched it to), or during a re-read in flight,
 *   produce exactly one more re-read (trailing edge).
 * - Except another process's lease or request write (`deferred`): it waits `coalesceMs`, and does not
 *   take the leading edge from the checkpoint write that follows it (the transition the operator
 *   waits for: a kill from another process writes the pod's lease, then its checkpoint, a few ms
 *   apart). A prompt event brings a deferred re-read forward to where the interval allows.
 * - At most one `listPods()` is in flight; the feed never re-enters itself.
 * - Snapshots are immutable: a new object per change, the same object while nothing changed (so a
 *   renderer can compare by identity).
 * - With a `readBudget`, re-reading stays within that share of one core, as a token bucket
 *   (lib/budget.ts's CpuBudget): credit accrues at the budget × the time on the wall, up to what
 *   MAX_READ_INTERVAL_MS at the budget earns; a re-read spends its cost, and while the credit is
 *   negative the next re-read waits until it is not (never past MAX_READ_INTERVAL_MS). So the first
 *   change after a quiet period is read at once (after `coalesceMs` from the last re-read), however
 *   much the last re-read cost, while a drain's stream of re-reads keeps within the share. A
 *   re-read's cost is the process's CPU from its start until its reading is applied, before its
 *   listeners run (the frames they draw are the screen's budget, not this one). Intermediate
 *   states of a pod read less often are not lost (its timeline has them).
 * - The event list is bounded (`maxEntries`); the oldest entries are dropped first.
 * - After `close()` no listener is called, no timer is left, and a listing in flight is aborted.
 */
import type { PodWorkerEvent } from '../../engine/types.js';
import { CpuBudget, processCpuMs } from '../../lib/budget.js';
import type { NodeSession, PodInfo, SessionEvent } from '../../domain/session-api.js';
import { entryOfSessionEvent, refOf, REQUEST_REPEAT_MS, type FeedEntry } from './watch-entries.js';
import { LIFECYCLE_ORDER, patchedPod, timelineSteps, type PodTransition } from './watch-transitions.js';

/** What one re-read changed, for consumers that count (metrics) or stream (JSON mode). */
export interface FeedChange {
  transitions: PodTransition[];
  /** Pods whose last error is new since the previous listing, when the error was not this engine's. */
  remoteErrors: PodInfo[];
  entries: FeedEntry[];
}

export interface WatchSnapshot {
  /** Increases with every change. */
  version: number;
  /** When the listing was read (epoch ms); 0 before the first read. */
  listedAt: number;
  pods: readonly PodInfo[];
  /** Oldest first. */
  entries: readonly FeedEntry[];
  endpoint: string;
  stateDir: string;
  simulated: boolean;
  /** Set while the last `listPods()` failed. */
  listError?: string;
}

export interface WatchFeedOptions {
  /** Minimum time between two re-reads (ms); default 50. */
  coalesceMs?: number;
  /** Events kept for the events pane; default 200. */
  maxEntries?: number;
  /**
   * Runtime listing age a re-read accepts (ms; default 1000). Runtime changes arrive as events after
   * the runtime cache saw them, so a re-read need not relist the runtime each time. A function gets
   * the number of pods listed (a relist costs in proportion).
   */
  runtimeMaxAgeMs?: number | ((pods: number) => number);
  /** Share of one core re-reads may take (see the invariants); default 0, no stretch. */
  readBudget?: number;
  now?: () => number;
}

/**
 * Another process's lease or request write: shown a little later without harm (the owner column,
 * a request line), and followed by the checkpoint write that carries the transition.
 */
const deferred = (event: SessionEvent): boolean => event.source === 'store' && event.kind !== 'checkpoint-changed';

/** The longest a read budget stretches the time between two re-reads (ms). */
const MAX_READ_INTERVAL_MS = 2_000;

export class WatchFeed {
  readonly #session: NodeSession;
  readonly #coalesceMs: number;
  readonly #readBudget: CpuBudget;
  readonly #maxEntries: number;
  readonly #runtimeMaxAgeMs: number | ((pods: number) => number);
  readonly #now: () => number;
  #pods: PodInfo[] = [];
  #byUid = new Map<string, PodInfo>();
  #entries: FeedEntry[] = [];
  #snapshot: WatchSnapshot;
  #listError: string | undefined;
  #listedAt = 0;
  #version = 0;
  /** Sources of the events since the last re-read started, per pod UID. */
  #sources = new Map<string, 'engine' | 'store' | 'runtime'>();
  /** UIDs whose error this process's engine reported since the last re-read started. */
  #localErrors = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  /** The pending re-read is only for deferred events (a prompt one may bring it forward). */
  #timerDeferred = false;
  #inFlight: Promise<void> | undefined;
  #dirty = false;
  /** Pods named by events since the last re-read started. */
  #dirtyUids = new Set<string>();
  /** The next re-read reads the whole listing (start, `refresh()`). */
  #fullRead = true;
  #lastReadStartedAt = Number.NEGATIVE_INFINITY;
  #started = false;
  #closed = false;
  readonly #lastRequestAt = new Map<string, number>();
  /** Aborts a listing in flight on close. */
  readonly #stop = new AbortController();
  #unsubscribe: (() => void) | undefined;
  #snapshotListeners = new Set<() => void>();
  #changeListeners = new Set<(change: FeedChange) => void>();
  #pendingEntries: FeedEntry[] = [];
  /** When this engine's events last patched a pod (epoch ms), until a later listing confirms it. */
  #patchedAt = new Map<string, number>();
  #patchTransitions: PodTransition[] = [];
  #patchTimer: NodeJS.Timeout | undefined;
  #lastPatchPublishAt = Number.NEGATIVE_INFINITY;

  constructor(session: NodeSession, options: WatchFeedOptions = {}) {
    this.#session = session;
    this.#coalesceMs = options.coalesceMs ?? 50;
    this.#maxEntries = options.maxEntries ?? 200;
    this.#runtimeMaxAgeMs = options.runtimeMaxAgeMs ?? 1_000;
    this.#now = options.now ?? Date.now;
    const share = options.readBudget ?? 0;
    this.#readBudget = new CpuBudget({ share, burstMs: share * MAX_READ_INTERVAL_MS, maxWaitMs: MAX_READ_INTERVAL_MS, now: this.#now });
    this.#snapshot = this.#makeSnapshot();
  }

  /** Subscribes to the session and reads the first listing. */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    this.#unsubscribe = this.#session.subscribe((event) => this.#onSessionEvent(event));
    await this.refresh();
  }

  /** The current snapshot (same object until something changes). */
  snapshot(): WatchSnapshot {
    return this.#snapshot;
  }

  /** Called after every snapshot change; returns the function that removes the listener. */
  subscribe(listener: () => void): () => void {
    this.#snapshotListeners.add(listener);
    return () => this.#snapshotListeners.delete(listener);
  }

  /** Called with the transitions and new entries of every re-read. */
  onChange(listener: (change: FeedChange) => void): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  /** Whether this is a `request-written` line for a pod that had one within REQUEST_REPEAT_MS. */
  #repeatedRequest(entry: FeedEntry): boolean {
    if (entry.kind !== 'request-written' || entry.uid === undefined) return false;
    const last = this.#lastRequestAt.get(entry.uid);
    this.#lastRequestAt.set(entry.uid, entry.at);
    if (this.#lastRequestAt.size > 4096) this.#lastRequestAt.delete(this.#lastRequestAt.keys().next().value as string);
    return last !== undefined && entry.at - last < REQUEST_REPEAT_MS;
  }

  /** Adds a line to the events pane (actions of the TUI, session log lines); published at once. */
  note(entry: Omit<FeedEntry, 'at'> & { at?: number }): void {
    if (this.#closed) return;
    const full: FeedEntry = { ...entry, at: entry.at ?? this.#now() };
    this.#pushEntry(full);
    this.#pendingEntries.push(full);
    this.#publish();
  }

  /** Re-reads the listing now (or right after the read in flight); resolves when it is read. */
  async refresh(): Promise<void> {
    if (this.#closed) return;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#fullRead = true;
    if (this.#inFlight !== undefined) {
      this.#dirty = true;
      await this.#inFlight;
      if (this.#inFlight !== undefined) await this.#inFlight;
      return;
    }
    await this.#read();
  }

  /** Resolves when no re-read is scheduled or running (for tests and benchmarks). */
  async whenSettled(): Promise<void> {
    while (!this.#closed && (this.#inFlight !== undefined || this.#timer !== undefined || this.#patchTimer !== undefined)) {
      if (this.#inFlight !== undefined) await this.#inFlight;
      else await new Promise((r) => setTimeout(r, this.#coalesceMs));
    }
  }

  close(): void {
    this.#closed = true;
    this.#stop.abort();
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#patchTimer !== undefined) clearTimeout(this.#patchTimer);
    this.#timer = undefined;
    this.#patchTimer = undefined;
    this.#snapshotListeners.clear();
    this.#changeListeners.clear();
  }

  #onSessionEvent(event: SessionEvent): void {
    if (this.#closed) return;
    // A relist that changed nothing says nothing new; each listing triggers one, so re-reading on it
    // would loop.
    if (event.source === 'runtime' && event.uids.length === 0) return;
    try {
      this.#attribute(event);
      if (event.source === 'engine') this.#patch(event.event);
      const entry = entryOfSessionEvent(event);
      if (entry !== undefined && this.#repeatedRequest(entry)) {
        // one request file raises several folder events (written, renamed into place): one line
      } else if (entry !== undefined) {
        if (entry.pod === undefined && entry.uid !== undefined) {
          const known = this.#byUid.get(entry.uid);
          if (known !== undefined) entry.pod = refOf(known);
        }
        this.#pushEntry(entry);
        this.#pendingEntries.push(entry);
      }
      const named = this.#namedUids(event);
      if (named.length > 0) {
        for (const uid of named) this.#dirtyUids.add(uid);
        this.#schedule(!deferred(event));
      } else if (entry !== undefined) {
        this.#publish();
      }
    } catch {
      // Never throw into the session's emitter.
    }
  }

  /** The pods an event concerns (to re-read). */
  #namedUids(event: SessionEvent): readonly string[] {
    switch (event.source) {
      case 'engine':
        return [event.event.uid];
      case 'store':
        return [event.uid];
      case 'runtime':
        return event.uids;
      case 'session':
        return [];
    }
  }

  /** Remembers which source touched which pod, to label the transitions of the next re-read. */
  #attribute(event: SessionEvent): void {
    switch (event.source) {
      case 'engine':
        this.#sources.set(event.event.uid, 'engine');
        if (event.event.type === 'sync-failed' && event.event.aborted !== true) this.#localErrors.add(event.event.uid);
        return;
      case 'store':
        if (this.#sources.get(event.uid) !== 'engine') this.#sources.set(event.uid, 'store');
        return;
      case 'runtime':
        for (const uid of event.uids) if (!this.#sources.has(uid)) this.#sources.set(uid, 'runtime');
        return;
      case 'session':
        return;
    }
  }

  /** Schedules a re-read: at the leading or trailing edge (`prompt`), or `coalesceMs` from now at the earliest. */
  #schedule(prompt = true): void {
    if (this.#inFlight !== undefined) {
      this.#dirty = true;
      return;
    }
    if (this.#timer !== undefined) {
      this.#dirty = true;
      if (!prompt || !this.#timerDeferred) return;
      clearTimeout(this.#timer);
    }
    const due = Math.max(0, this.#lastReadStartedAt + this.#coalesceMs - this.#now(), this.#readBudget.wait());
    const delay = prompt ? due : Math.max(due, this.#coalesceMs);
    this.#timerDeferred = !prompt;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#read();
    }, delay);
  }

  /** How long a re-read waits now for the read budget (ms; 0: none), whatever `coalesceMs` adds. */
  readWait(): number {
    return this.#readBudget.wait();
  }

  #read(): Promise<void> {
    this.#dirty = false;
    const cpuAtStart = processCpuMs();
    const startedAt = this.#now();
    this.#lastReadStartedAt = startedAt;
    const sources = this.#sources;
    const localErrors = this.#localErrors;
    this.#sources = new Map();
    this.#localErrors = new Set();
    // Which pods: all of them (start, refresh) or only those named since the last re-read.
    const scope = this.#fullRead ? undefined : this.#dirtyUids;
    this.#fullRead = false;
    this.#dirtyUids = new Set();
    // the re-read's own CPU, up to where its listeners (a screen's frames) begin
    let cpuAtEnd: number | undefined;
    const ended = () => {
      cpuAtEnd ??= processCpuMs();
    };
    const run = (async () => {
      if (scope !== undefined && scope.size === 0) return;
      try {
        const pods = await this.#session.listPods({
          runtimeMaxAgeMs: typeof this.#runtimeMaxAgeMs === 'number' ? this.#runtimeMaxAgeMs : this.#runtimeMaxAgeMs(this.#pods.length),
          signal: this.#stop.signal,
          ...(scope !== undefined ? { uids: [...scope] } : {}),
        });
        if (this.#closed) return;
        this.#listError = undefined;
        this.#apply(pods, scope, sources, localErrors, startedAt, ended);
      } catch (err) {
        if (this.#closed) return;
        // The pods this re-read was for are read again with the next one.
        if (scope === undefined) this.#fullRead = true;
        else for (const uid of scope) this.#dirtyUids.add(uid);
        const message = err instanceof Error ? err.message : String(err);
        if (message !== this.#listError) {
          const entry: FeedEntry = { at: this.#now(), source: 'watch', level: 'error', kind: 'list-failed', detail: message };
          this.#pushEntry(entry);
          this.#pendingEntries.push(entry);
        }
        this.#listError = message;
        ended();
        this.#publish();
      }
    })();
    this.#inFlight = run;
    void run.finally(() => {
      this.#readBudget.spend((cpuAtEnd ?? processCpuMs()) - cpuAtStart);
      this.#inFlight = undefined;
      if (this.#dirty && !this.#closed) this.#schedule();
    });
    return run;
  }

  /**
   * Applies a reading: the whole listing (`scope` undefined), or the pods of `scope` that are still
   * known (the others of `scope` are gone; pods outside it are kept as they were).
   */
  #apply(listed: PodInfo[], scope: ReadonlySet<string> | undefined, sources: Map<string, 'engine' | 'store' | 'runtime'>, localErrors: Set<string>, startedAt: number, ended: () => void): void {
    const at = this.#now();
    const first = this.#listedAt === 0;
    const transitions: PodTransition[] = this.#takePatchTransitions();
    const remoteErrors: PodInfo[] = [];
    const next = new Map<string, PodInfo>();
    const read = listed.map((pod) => this.#keepNewerPatch(pod, startedAt));
    for (const pod of read) {
      next.set(pod.uid, pod);
      const prev = this.#byUid.get(pod.uid);
      if (first) continue;
      const source = sources.get(pod.uid) ?? 'runtime';
      if (prev === undefined || prev.state !== pod.state) {
        // Another process's steps between two listings are in the pod's timeline; fall back to the
        // difference of states when the timeline does not explain it.
        const steps = prev !== undefined && source !== 'engine' ? timelineSteps(prev, pod) : [];
        if (steps.length > 0) transitions.push(...steps.map((step) => ({ ...step, source })));
        else transitions.push(this.#transition(pod, prev, pod.state, source, at));
      }
      if (pod.lastError !== undefined && pod.lastError.at !== prev?.lastError?.at && !localErrors.has(pod.uid)) {
        remoteErrors.push(pod);
      }
    }
    if (!first) {
      for (const prev of this.#pods) {
        if (scope !== undefined && !scope.has(prev.uid)) continue;
        if (!next.has(prev.uid)) transitions.push(this.#transition(prev, prev, 'gone', sources.get(prev.uid) ?? 'runtime', at));
      }
    }
    let pods = read;
    if (scope !== undefined) {
      // Merge: pods outside the scope as they were, in their places; the scope's as read (or gone).
      pods = [];
      for (const prev of this.#pods) {
        if (!scope.has(prev.uid)) pods.push(prev);
        else {
          const now = next.get(prev.uid);
          if (now !== undefined) pods.push(now);
        }
      }
      for (const pod of read) if (!this.#byUid.has(pod.uid)) pods.push(pod);
      for (const uid of scope) if (!next.has(uid)) this.#byUid.delete(uid);
      for (const [uid, pod] of next) this.#byUid.set(uid, pod);
    } else {
      this.#byUid = next;
    }
    for (const t of transitions) {
      if (t.source === 'engine') continue; // the engine's own state-changed event is already listed
      const owner = t.ownerPid !== undefined ? ` (pid ${t.ownerPid})` : '';
      const entry: FeedEntry = { at: t.at, source: t.source, level: 'info', uid: t.uid, pod: `${t.namespace}/${t.name}`, kind: 'transition', detail: `${t.from} → ${t.to}${owner}` };
      this.#pushEntry(entry);
      this.#pendingEntries.push(entry);
    }
    for (const pod of remoteErrors) {
      const entry: FeedEntry = { at: pod.lastError!.at, source: 'store', level: 'error', uid: pod.uid, pod: refOf(pod), kind: 'sync-failed', detail: pod.lastError!.message };
      this.#pushEntry(entry);
      this.#pendingEntries.push(entry);
    }
    this.#pods = pods;
    this.#listedAt = at;
    ended();
    this.#publish(transitions, remoteErrors);
  }

  /** A listing that started before this engine last patched the pod shows an older state: keep the patch. */
  #keepNewerPatch(pod: PodInfo, startedAt: number): PodInfo {
    const patchedAt = this.#patchedAt.get(pod.uid);
    if (patchedAt === undefined) return pod;
    const patched = this.#byUid.get(pod.uid);
    if (patchedAt >= startedAt && patched !== undefined && LIFECYCLE_ORDER[patched.state] > LIFECYCLE_ORDER[pod.state]) return patched;
    if (patchedAt < startedAt) this.#patchedAt.delete(pod.uid);
    return pod;
  }

  /** Applies one of this engine's events to the listed pod, if it is listed. */
  #patch(event: PodWorkerEvent): void {
    const prev = this.#byUid.get(event.uid);
    if (prev === undefined) return;
    const next = patchedPod(prev, event);
    if (next === prev) return;
    const i = this.#pods.indexOf(prev);
    if (i < 0) return;
    this.#pods = [...this.#pods];
    this.#pods[i] = next;
    this.#byUid.set(next.uid, next);
    this.#patchedAt.set(next.uid, this.#now());
    if (next.state !== prev.state) this.#patchTransitions.push(this.#transition(next, prev, next.state, 'engine', event.at));
    this.#schedulePatchPublish();
  }

  /** Publishes patches at most once per `coalesceMs`, the first one at once. */
  #schedulePatchPublish(): void {
    if (this.#patchTimer !== undefined) return;
    const delay = Math.max(0, this.#lastPatchPublishAt + this.#coalesceMs - this.#now());
    this.#patchTimer = setTimeout(() => {
      this.#patchTimer = undefined;
      if (this.#closed) return;
      this.#lastPatchPublishAt = this.#now();
      this.#publish(this.#takePatchTransitions());
    }, delay);
  }

  #takePatchTransitions(): PodTransition[] {
    const t = this.#patchTransitions;
    this.#patchTransitions = [];
    return t;
  }

  #transition(pod: PodInfo, prev: PodInfo | undefined, to: PodTransition['to'], source: PodTransition['source'], at: number): PodTransition {
    const t: PodTransition = {
      at: to === 'gone' ? at : Math.max(pod.since, prev?.since ?? 0) || at,
      uid: pod.uid,
      namespace: pod.namespace,
      name: pod.name,
      from: prev === undefined ? 'new' : prev.state,
      to,
      source,
    };
    if (prev !== undefined) t.fromSince = prev.since;
    if (to !== 'gone' && pod.gracePeriod !== undefined) t.gracePeriod = pod.gracePeriod;
    if (pod.owner !== undefined) t.ownerPid = pod.owner.pid;
    return t;
  }

  #pushEntry(entry: FeedEntry): void {
    this.#entries.push(entry);
    if (this.#entries.length > this.#maxEntries) this.#entries.splice(0, this.#entries.length - this.#maxEntries);
  }

  #publish(transitions: PodTransition[] = [], remoteErrors: PodInfo[] = []): void {
    this.#version += 1;
    this.#snapshot = this.#makeSnapshot();
    const entries = this.#pendingEntries;
    this.#pendingEntries = [];
    const change: FeedChange = { transitions, remoteErrors, entries };
    for (const l of [...this.#changeListeners]) {
      try {
        l(change);
      } catch {
        // A consumer's failure must not stop the others.
      }
    }
    for (const l of [...this.#snapshotListeners]) {
      try {
        l();
      } catch {
        // idem
      }
    }
  }

  #makeSnapshot(): WatchSnapshot {
    const snap: WatchSnapshot = {
      version: this.#version,
      listedAt: this.#listedAt,
      pods: this.#pods,
      entries: [...this.#entries],
      endpoint: this.#session.endpoint,
      stateDir: this.#session.stateDir,
      simulated: this.#session.simulated,
    };
    if (this.#listError !== undefined) snap.listError = this.#listError;
    return Object.freeze(snap);
  }
}
