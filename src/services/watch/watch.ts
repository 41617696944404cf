/**
 * The `watch` service: follows a node session live and shows it either as the Ink screen (for a
 * person at a terminal) or as a stream of JSON lines on stdout (for scripts).
 *
 * Invariants:
 * - Ink and React are loaded only on the screen path (the command's `screen`, which imports `../tui/index.js`); the JSON
 *   stream never loads them.
 * - The JSON stream writes exactly one JSON object per line: first one `pod` record per pod listed
 *   at start, then `transition` records (any process's) and `event` records (errors, warnings, grace
 *   changes), in the order they were seen.
 * - The watch ends when the signal aborts (SIGINT/SIGTERM), when the screen is quit, or when stdout's
 *   reader goes away (EPIPE); it never throws for any of those.
 * - The metrics file, when asked for, is written once at the end (atomically), however it ended.
 */
import type { KillHandle, KillRequest, NodeSession, PodInfo } from '../../domain/session-api.js';
import { WatchFeed, type FeedChange } from './watch-feed.js';
import type { FeedEntry } from './watch-entries.js';
import type { PodTransition } from './watch-transitions.js';
import { BLOCKED_KINDS, blockedBy, type BlockedBy } from '../diagnose/blocked-by.js';
import { stuckFactsOf, type NodeFacts } from '../diagnose/status.js';
import { WatchFacts } from './watch-facts.js';
import type { ScreenRules } from './screen-rules.js';
import { RuntimeProbe } from '../runtime/runtime-probe.js';
import { ScopedFeed, describeScope, isWholeNode, type WatchScope } from './watch-scope.js';
import { keepProcessAlive } from '../../lib/abortable.js';
import { formatDuration } from '../../lib/duration.js';
import { HeapSettler } from '../../lib/heap-settle.js';
import { isoOrNull, isoTime } from '../../lib/json-vocabulary.js';
import { createdAtOf, readyOf, type PodReady } from '../diagnose/pod-ready.js';
import type { KubeletStatus } from '../../kube/kubelet.js';
import type { V1Pod } from '../../engine/types.js';

export type WatchFormat = 'tui' | 'json';

export interface WatchOptions {
  format: WatchFormat;
  signal: AbortSignal;
  stdout: NodeJS.WriteStream;
  stdin?: NodeJS.ReadStream;
  stderr?: NodeJS.WriteStream;
  node?: string;
  /** The kubelet beside podctl: its state is in the screen's header and decides `kubelet-owns`. */
  kubelet?: KubeletStatus;
  /** The pod as the API server holds it (the watch follows it there), handed with a kill from the screen. */
  apiPod?: (uid: string) => V1Pod | undefined;
  /** The kubelet's root directory (mounts held under a pod's directory name `volume-busy`). */
  kubeletRoot?: string;
  /** Period of the node-facts gathering for pods on their way out (ms); default 2000. */
  factsIntervalMs?: number;
  /** Only these pods (`-n`, `-l`); default the whole node. Metrics stay node-wide. */
  scope?: WatchScope;
  /** Whether to probe the runtime (a banner when it stops answering); default true. */
  probeRuntime?: boolean;
  color: boolean;
  /** Write the Prometheus text exposition here when the watch ends. */
  metricsFile?: string;
  /** Minimum time between two re-reads (ms); default `WATCH_COALESCE_MS`. */
  coalesceMs?: number;
  /** Share of one core re-reads may take; default `WATCH_READ_BUDGET` (0: no stretch). */
  readBudget?: number;
  /** Receives the feed once it exists (e.g. to show the session's log lines in the events pane). */
  onFeed?: (feed: WatchFeed) => void;
  /**
   * The screen for `format: 'tui'` (src/tui's `renderWatch`, which the command loads): it shows the
   * view until the operator quits or the signal aborts. The service never imports the screen itself.
   */
  screen?: WatchScreen;
}

/** What the service hands the screen. */
interface WatchScreenOptions {
  source: FeedView;
  requestKill: NodeSession['requestKill'];
  rules: ScreenRules;
  color: boolean;
  stdout: NodeJS.WriteStream;
  stdin?: NodeJS.ReadStream;
  stderr?: NodeJS.WriteStream;
  node?: string;
  kubelet?: string;
  facts: WatchFacts;
  runtime?: RuntimeProbe;
  scope?: string;
  signal: AbortSignal;
}

type WatchScreen = (options: WatchScreenOptions) => Promise<'quit' | 'signal'>;

export interface WatchResult {
  format: WatchFormat;
  endedBy: 'quit' | 'signal' | 'epipe';
  pods: number;
  transitions: number;
  metricsFile?: string;
}

/**
 * A pod as streamed in JSON mode. Every record of a type has the same keys (null when a value is
 * not known); times are ISO 8601 (lib/json-vocabulary.ts).
 */
export interface PodRecord {
  type: 'pod';
  at: string;
  uid: string;
  namespace: string;
  name: string;
  state: PodInfo['state'];
  /** As `status`'s READY (pod-ready.ts); null when the runtime does not report the pod. */
  ready: PodReady | null;
  /** When the pod was created, or null. */
  createdAt: string | null;
  containersRunning: number;
  containersTotal: number;
  since: string;
  gracePeriodSeconds: number | null;
  graceDeadline: string | null;
  ownerPid: number | null;
  lastError: string | null;
  /** Why a pod on its way out is not finishing (blocked-by.ts), from the listing and the node's facts. */
  blockedBy: BlockedBy | null;
}

interface TransitionRecord {
  type: 'transition';
  /** When the pod entered `to` (for `gone`: when it was seen gone). */
  at: string;
  uid: string;
  namespace: string;
  name: string;
  from: PodTransition['from'];
  to: PodTransition['to'];
  /** When the pod entered `from`, or null. */
  fromSince: string | null;
  source: PodTransition['source'];
  gracePeriodSeconds: number | null;
  ownerPid: number | null;
}

interface EventRecord {
  type: 'event';
  at: string;
  source: FeedEntry['source'];
  level: FeedEntry['level'];
  uid: string | null;
  pod: string | null;
  kind: string;
  detail: string;
}

export type WatchRecord = PodRecord | TransitionRecord | EventRecord;

export function podRecord(pod: PodInfo, at: number, facts?: NodeFacts): PodRecord {
  return {
    type: 'pod',
    at: isoTime(at),
    uid: pod.uid,
    namespace: pod.namespace,
    name: pod.name,
    state: pod.state,
    ready: readyOf(pod),
    createdAt: isoOrNull(createdAtOf(pod)),
    containersRunning: pod.containersRunning,
    containersTotal: pod.containersTotal,
    since: isoTime(pod.since),
    gracePeriodSeconds: pod.gracePeriod ?? null,
    graceDeadline: isoOrNull(pod.graceDeadline),
    ownerPid: pod.owner?.pid ?? null,
    lastError: pod.lastError?.message ?? null,
    blockedBy: blockedBy(stuckFactsOf(pod, at, facts)) ?? null,
  };
}

function transitionRecord(t: PodTransition): TransitionRecord {
  return {
    type: 'transition',
    at: isoTime(t.at),
    uid: t.uid,
    namespace: t.namespace,
    name: t.name,
    from: t.from,
    to: t.to,
    fromSince: isoOrNull(t.fromSince),
    source: t.source,
    gracePeriodSeconds: t.gracePeriod ?? null,
    ownerPid: t.ownerPid ?? null,
  };
}

function eventRecord(e: FeedEntry): EventRecord {
  return { type: 'event', at: isoTime(e.at), source: e.source, level: e.level, uid: e.uid ?? null, pod: e.pod ?? null, kind: e.kind, detail: e.detail };
}

/**
 * The records a feed change streams: every transition, and every entry except the engine's own
 * `state-changed` (already a transition record) and the listing's `transition` lines (idem).
 */
function recordsOfChange(change: FeedChange): WatchRecord[] {
  const records: WatchRecord[] = [];
  for (const t of change.transitions) records.push(transitionRecord(t));
  for (const e of change.entries) {
    if (e.kind === 'state-changed' || e.kind === 'transition') continue;
    records.push(eventRecord(e));
  }
  return records;
}

type Metrics = import('../../metrics/registry.js').PodctlMetrics;

async function startMetrics(session: NodeSession, feed: WatchFeed, facts: WatchFacts): Promise<{ metrics: Metrics; stop: () => void }> {
  const { createMetrics, attachMetrics } = await import('../../metrics/registry.js');
  const { workerSyncOf } = await import('../../metrics/working-pods.js');
  const metrics = createMetrics();
  const detach = attachMetrics(metrics, session);
  const setWorking = () => {
    const pods = feed.snapshot().pods;
    const workers = pods.map(workerSyncOf).filter((s) => s !== undefined);
    metrics.setWorkingPods(workers, pods.length - workers.length);
    const now = Date.now();
    const stuck = new Map<string, number>();
    for (const pod of pods) {
      const kind = blockedBy(stuckFactsOf(pod, now, facts.current()))?.kind;
      if (kind) stuck.set(kind, (stuck.get(kind) ?? 0) + 1);
    }
    metrics.setStuckPods(BLOCKED_KINDS, stuck);
  };
  const off = feed.onChange((change) => {
    for (const t of change.transitions) {
      // This process's transitions are counted from its engine's events; 'new'/'gone' are not phases.
      if (t.source === 'engine' || t.from === 'new' || t.to === 'gone') continue;
      const from = t.from === 'finished' ? 'terminated' : t.from;
      const to = t.to === 'finished' ? 'terminated' : t.to;
      if (from === to || from === 'runtime' || to === 'runtime') continue;
      metrics.observeTransition({ uid: t.uid, from, to, at: t.at, ...(t.fromSince !== undefined ? { fromSince: t.fromSince } : {}) });
    }
    for (let i = 0; i < change.remoteErrors.length; i += 1) metrics.observeRemoteSyncError();
    setWorking();
  });
  setWorking();
  return {
    metrics,
    stop: () => {
      off();
      detach();
    },
  };
}

/**
 * React and Ink choose their build when first loaded, from NODE_ENV: the screen runs the production
 * builds unless the environment names another mode (tests run under NODE_ENV=test). The single
 * executable has the production builds compiled in (scripts/sea.mjs).
 */
export function useProductionReact(env: NodeJS.ProcessEnv = process.env): void {
  if (env.NODE_ENV === undefined || env.NODE_ENV === '') env.NODE_ENV = 'production';
}

/** Resolves when the signal aborts (at once if it already has). */
function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

type FeedView = Pick<WatchFeed, 'snapshot' | 'onChange' | 'subscribe' | 'note'>;

async function streamJson(feed: FeedView, facts: WatchFacts, options: WatchOptions, stop: AbortController, counts: { transitions: number }): Promise<'signal' | 'epipe'> {
  const out = options.stdout;
  let endedBy: 'signal' | 'epipe' = 'signal';
  const onError = (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') endedBy = 'epipe';
    stop.abort();
  };
  out.on('error', onError);
  // the records of one change go out in one write: one system call for a drain's hundreds of
  // transitions, not one each. The first snapshot goes out a record a write, so a reader that
  // stops early (`| head -3`) ends the stream at once (EPIPE) instead of at the next change.
  const writeAll = (records: Iterable<WatchRecord>) => {
    if (stop.signal.aborted || out.destroyed) return;
    let text = '';
    for (const record of records) text += `${JSON.stringify(record)}\n`;
    if (text !== '') out.write(text);
  };
  const off = feed.onChange((change) => {
    counts.transitions += change.transitions.length;
    writeAll(recordsOfChange(change));
  });
  // a pod whose cause changes (from the node's facts) is streamed again, whole, with its cause
  const offFacts = facts.subscribe(() => {
    const now = Date.now();
    writeAll(facts.causeChanges(feed.snapshot().pods, now).map(({ pod }) => podRecord(pod, now, facts.current())));
  });
  try {
    const snap = feed.snapshot();
    facts.causeChanges(snap.pods, snap.listedAt);
    for (const pod of snap.pods) writeAll([podRecord(pod, snap.listedAt, facts.current())]);
    await aborted(stop.signal);
  } finally {
    off();
    offFacts();
    out.off('error', onError);
    // Keep a late EPIPE (from a write still buffered) from crashing the process.
    out.on('error', () => undefined);
  }
  return endedBy;
}

/**
 * Minimum time between two re-reads of the watch (ms): one frame of the screen (which draws at most
 * 10 frames a second). A pod in a drain changes several times in that time (checkpoint, lease,
 * runtime) and is read once for all of them; a change after a quiet period is read at once, so a
 * transition still reaches the screen within ~100 ms. Steps in between are not lost: they are read
 * from the pod's timeline.
 */
export const WATCH_COALESCE_MS = 100;

/**
 * Share of one core the watch's re-reads may take while pods change (WatchFeed's read budget): a
 * drain of hundreds of pods makes every re-read costly, and re-reading less often then (up to once
 * every two seconds, as top and k9s refresh) keeps following the node cheap; a quiet node's changes
 * are still read within 100 ms. A fortieth of a core: in a 500-pod drain re-reads come about every
 * 2 s; the steps in between come from the timelines (docs/bench/history.md, "Issue 41: figures that
 * were in code comments", has the budgets tried).
 */
export const WATCH_READ_BUDGET = 0.025;

/**
 * After a burst of transitions (a drain: at least this many, then 1 s without one and no pod
 * terminating, or 10 s without one) the watch gives the heap it grew back to the system with a
 * compacting full and a memory-reducing garbage collection (lib/heap-settle.ts), so its RSS after a
 * drain is close to where it was before. It never settles in a drain's pause (a collection's CPU
 * for nothing). Its start (the first listing, the modules loaded) is such a burst too: settled once
 * start-up is over, so V8's memory reducer does not collect it some 20-30 s later, in the idle.
 */
const WATCH_SETTLE_MIN_TRANSITIONS = 100;
const WATCH_SETTLE_QUIET_MS = 1_000;

/**
 * Runtime listing age a re-read accepts (ms), by the number of pods: a relist costs in proportion to
 * the pods (~0.1 s of CPU for 500, with its garbage), so the watch relists at most every 8 ms per pod
 * while pods change (2 s up to 250 pods, 4 s for 500, 10 s from 1,250), and never while nothing
 * does. A pod's container changes still arrive as the runtime's events, which name the pod for the
 * next re-read.
 */
export function watchRuntimeMaxAgeMs(pods: number): number {
  return Math.min(10_000, Math.max(2_000, 8 * pods));
}

/**
 * A kill or evict from the screen obeys the kubelet rule as `podctl kill` does (kubelet-guard.ts):
 * beside a running kubelet a pod it desires, or may desire, is refused (the screen has no --force
 * and no API server to go through); the refusal is the screen's failure line.
 */
export async function killFromScreen(session: NodeSession, kubelet: KubeletStatus | undefined, request: KillRequest, apiPod?: (uid: string) => V1Pod | undefined): Promise<KillHandle> {
  if (kubelet !== undefined && kubelet.state !== 'down') {
    const pod = await session.getPod(request.uid);
    if (pod !== undefined) {
      const { guardKill } = await import('../terminate/kubelet-guard.js');
      try {
        await guardKill({ session, targets: [pod], mode: 'delete', action: request.evict === true ? 'evict' : 'kill', dryRun: true, guard: { kubelet, force: false, viaApi: false } });
      } catch (error) {
        throw new Error(`${(error as Error).message} (\`podctl kill --force\` stops it anyway)`, { cause: error });
      }
    }
  }
  // the pod as the API server holds it: its spec orders the stop and names the hooks' ports
  const spec = request.pod ?? apiPod?.(request.uid);
  return session.requestKill(spec ? { ...request, pod: spec } : request);
}

/** Follows the session until quit, a signal or EPIPE; see the module comment. */
export async function runWatch(session: NodeSession, options: WatchOptions): Promise<WatchResult> {
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal.addEventListener('abort', onAbort, { once: true });
  if (options.signal.aborted) stop.abort();
  const feed = new WatchFeed(session, { coalesceMs: options.coalesceMs ?? WATCH_COALESCE_MS, runtimeMaxAgeMs: watchRuntimeMaxAgeMs, readBudget: options.readBudget ?? WATCH_READ_BUDGET });
  options.onFeed?.(feed);
  // a drain's pause (between its groups, pods counting down their grace) is not its end
  const settler = new HeapSettler({ quietMs: WATCH_SETTLE_QUIET_MS, minChanges: WATCH_SETTLE_MIN_TRANSITIONS, busy: () => feed.snapshot().pods.some((p) => p.state === 'terminating') });
  const offSettle = feed.onChange((c) => settler.note(c.transitions.length));
  const view: FeedView = isWholeNode(options.scope) ? feed : new ScopedFeed(feed, options.scope!);
  const facts = new WatchFacts(session, {
    pods: () => view.snapshot().pods,
    ...(options.kubelet !== undefined ? { kubelet: options.kubelet } : {}),
    ...(options.kubeletRoot !== undefined ? { kubeletRoot: options.kubeletRoot } : {}),
    ...(options.factsIntervalMs !== undefined ? { intervalMs: options.factsIntervalMs } : {}),
  });
  const probe = options.probeRuntime === false ? undefined : startRuntimeProbe(session, feed);
  const counts = { transitions: 0 };
  let metrics: { metrics: Metrics; stop: () => void } | undefined;
  let endedBy: WatchResult['endedBy'] = 'signal';
  // the watch ends by its signal, its reader or the operator, not when the runtime's connection closes
  const release = keepProcessAlive();
  try {
    if (options.metricsFile !== undefined) metrics = await startMetrics(session, feed, facts);
    await feed.start();
    // the JSON stream's first pod records carry the causes the node's facts show (bounded by the
    // facts timeout); the screen does not wait for them
    probe?.start();
    const firstFacts = facts.start();
    // start-up is a burst like a drain's: settled once it is over (see WATCH_SETTLE_QUIET_MS)
    settler.note(WATCH_SETTLE_MIN_TRANSITIONS);
    if (options.format === 'json') await firstFacts;
    if (options.format === 'json') endedBy = await streamJson(view, facts, options, stop, counts);
    else endedBy = await showScreen(session, { feed, view, facts, probe }, options, stop, counts);
  } finally {
    release();
    options.signal.removeEventListener('abort', onAbort);
    offSettle();
    settler.close();
    facts.close();
    probe?.close();
    feed.close();
    metrics?.stop();
    if (metrics !== undefined && options.metricsFile !== undefined) {
      const { writeMetricsFile } = await import('../../metrics/registry.js');
      await writeMetricsFile(metrics.metrics, options.metricsFile);
    }
  }
  const result: WatchResult = { format: options.format, endedBy, pods: view.snapshot().pods.length, transitions: counts.transitions };
  if (options.metricsFile !== undefined) result.metricsFile = options.metricsFile;
  return result;
}

/** The runtime's answering state, not yet started: a banner on the screen, and a line (event record) in the feed when it changes. */
function startRuntimeProbe(session: NodeSession, feed: WatchFeed): RuntimeProbe {
  const probe = new RuntimeProbe({ endpoint: session.endpoint });
  probe.onChange((health, previous) => {
    const after = formatDuration(health.since - previous.since);
    if (health.answering) feed.note({ source: 'runtime', level: 'info', kind: 'runtime-answering', detail: `the runtime answers again (after ${after} without an answer)` });
    else feed.note({ source: 'runtime', level: 'error', kind: 'runtime-not-answering', detail: `the runtime at ${session.endpoint} does not answer: ${health.error ?? 'no answer'}` });
  });
  return probe;
}

/** What the screen is drawn from: the feed (whole node), its scoped view, the node's facts and the runtime probe. */
interface ScreenSources {
  feed: WatchFeed;
  view: FeedView;
  facts: WatchFacts;
  probe: RuntimeProbe | undefined;
}

/**
 * Shows `options.screen` until the operator quits or `stop` aborts, counting the view's transitions
 * into `counts` and noting each pod's change of cause in the events pane; throws without a screen.
 */
async function showScreen(session: NodeSession, sources: ScreenSources, options: WatchOptions, stop: AbortController, counts: { transitions: number }): Promise<'quit' | 'signal'> {
  const { feed, view, facts, probe } = sources;
  const off = view.onChange((c) => {
    counts.transitions += c.transitions.length;
  });
  // the events pane says when a pod's cause changes; the table reads the facts itself
  const offFacts = facts.subscribe(() => {
    for (const { pod, cause } of facts.causeChanges(view.snapshot().pods, Date.now())) {
      feed.note({
        source: 'watch',
        level: cause.kind === 'grace' ? 'info' : 'warn',
        uid: pod.uid,
        pod: `${pod.namespace}/${pod.name}`,
        kind: 'blocked-by',
        detail: `${cause.kind}: ${cause.detail}; next: ${cause.next}`,
      });
    }
  });
  try {
    if (options.screen === undefined) throw new Error('watch: no screen to show (format tui needs one)');
    useProductionReact();
    const scope = describeScope(options.scope);
    return await options.screen({
      source: view,
      requestKill: (request) => killFromScreen(session, options.kubelet, request, options.apiPod),
      // loaded with the screen only: the rules bring the kill and explain paths with them
      rules: (await import('./screen-rules.js')).screenRules,
      color: options.color,
      stdout: options.stdout,
      ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
      ...(options.stderr !== undefined ? { stderr: options.stderr } : {}),
      ...(options.node !== undefined ? { node: options.node } : {}),
      ...(options.kubelet !== undefined ? { kubelet: options.kubelet.state } : {}),
      facts,
      ...(probe !== undefined ? { runtime: probe } : {}),
      ...(scope !== undefined ? { scope } : {}),
      signal: stop.signal,
    });
  } finally {
    off();
    offFacts();
  }
}
