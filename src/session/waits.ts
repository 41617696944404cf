/**
 * The session's bounded waits: for pods to terminate (`waitTerminated`), for what sync-known
 * started to complete, and, on close, for just-terminated pods to finish their cleanup.
 *
 * Invariants:
 * - Every wait has a bound (a timeout given by the caller, or derived from the kubelet's killPodNow
 *   bound) and ends early when its signal aborts or the session closes.
 * - The timers of these waits are ref'd on purpose: a caller awaits them, and the engine's own
 *   timers are unref'd, so without them the process could exit (code 13) in the middle of a kill.
 * - An event that moves an awaited pod on wakes the wait at once (after the current burst of
 *   events); other notices are coalesced for WAKE_COALESCE_MS; none is lost while a look runs.
 * - A pod awaited here whose owner is gone is taken over (waiting is driving).
 * - A wait asks the runtime for no relist of its own while every pod it awaits is driven here
 *   (`DRIVEN_LISTING_MAX_AGE_MS`): their workers decide when they are terminated, each by its own
 *   check relist (started after its stops, as the kubelet's PLEG); the listing adds only container
 *   counts. A pod driven elsewhere, or by nobody, is seen through a listing at most
 *   `RECENT_LISTING_MS / 4` old.
 */
import { killTimeoutMs } from '../engine/index.js';
import { workerStateOf, type PodSyncStatusView, type PodWorkers } from '../engine/types.js';
import type { Logger, PodInfo, SessionEvent, WaitOptions, WaitOutcome } from '../domain/session-api.js';
import type { SessionEvents } from './events.js';
import type { Ownership } from './ownership.js';
import { isDone } from './pod-views.js';
import { RECENT_LISTING_MS } from './seams.js';
import type { PodView } from './view.js';

/** How long `waitTerminated` coalesces notices that do not move an awaited pod on, ms. */
const WAKE_COALESCE_MS = 10;
/**
 * How old a listing may be for a wait whose pods are all driven here, ms: two relist periods, so the
 * session's own relists (its poll, the workers' checks) serve it and the runtime, busy stopping
 * those very pods, is not asked for one more listing of the whole node on each wake-up.
 */
const DRIVEN_LISTING_MAX_AGE_MS = 2 * RECENT_LISTING_MS;

export interface WaitDeps {
  engine: Pick<PodWorkers, 'snapshot' | 'subscribe'>;
  view: Pick<PodView, 'collect' | 'runtimeIndex'>;
  ownership: Pick<Ownership, 'adopt' | 'holds'>;
  events: Pick<SessionEvents, 'addWaker'>;
  now: () => number;
  log: Logger;
  rescanMs: number;
  closed: () => boolean;
}

/** Whether `event` is the engine moving one of the awaited pods on (worth an immediate look). */
function movesAwaitedPod(event: SessionEvent, awaited: ReadonlySet<string>): boolean {
  if (event.source !== 'engine' || !awaited.has(event.event.uid)) return false;
  const type = event.event.type;
  return type === 'state-changed' || type === 'finished' || type === 'forgotten' || type === 'sync-failed';
}

/** Waits (bounded by `options.timeoutMs`) until each pod is terminated, gone, or the time is up. */
export async function waitTerminated(deps: WaitDeps, uids: string[], options: WaitOptions): Promise<Map<string, WaitOutcome>> {
  const outcomes = new Map<string, WaitOutcome>();
  const deadline = deps.now() + options.timeoutMs;
  const last = new Map<string, string>();
  const waiting = (): string[] => uids.filter((uid) => !outcomes.has(uid));

  const evaluate = async (): Promise<void> => {
    const pending = waiting();
    if (pending.length === 0) return;
    let infos: Map<string, PodInfo>;
    const maxAgeMs = pending.every((uid) => deps.ownership.holds(uid)) ? DRIVEN_LISTING_MAX_AGE_MS : RECENT_LISTING_MS / 4;
    try {
      infos = await deps.view.collect(pending, await deps.view.runtimeIndex(maxAgeMs));
    } catch (error) {
      deps.log('debug', `wait: ${(error as Error).message}`);
      return; // the runtime did not answer: decide nothing this round
    }
    for (const uid of pending) {
      const info = infos.get(uid);
      if (!info) {
        outcomes.set(uid, 'gone');
        continue;
      }
      const fingerprint = `${info.state}|${info.gracePeriod}|${info.containersRunning}|${info.owner?.pid}|${info.lastError?.at}`;
      if (last.get(uid) !== fingerprint) {
        last.set(uid, fingerprint);
        options.onProgress?.(info);
      }
      if (isDone(info.state)) {
        outcomes.set(uid, 'terminated');
        continue;
      }
      if (!deps.ownership.holds(uid) && !info.owner?.alive && info.state !== 'runtime') await deps.ownership.adopt(uid, 'wait');
    }
  };

  const awaited = new Set(uids);
  let woken = false;
  let urgent = false;
  let onWake: (() => void) | undefined;
  const waker = (event?: SessionEvent): void => {
    woken = true;
    if (event === undefined || movesAwaitedPod(event, awaited)) urgent = true;
    onWake?.();
  };
  const removeWaker = deps.events.addWaker(waker);
  const onAbort = (): void => waker();
  options.signal?.addEventListener('abort', onAbort);
  try {
    for (;;) {
      woken = false;
      urgent = false;
      await evaluate();
      if (waiting().length === 0 || options.signal?.aborted || deps.closed()) break;
      const left = deadline - deps.now();
      if (left <= 0) break;
      await new Promise<void>((resolve) => {
        let finished = false;
        let coalesce: NodeJS.Timeout | undefined;
        const finish = (): void => {
          if (finished) return;
          finished = true;
          clearTimeout(timer);
          clearTimeout(coalesce);
          onWake = undefined;
          resolve();
        };
        // Ref'd on purpose (see the invariants above).
        const timer = setTimeout(finish, Math.min(left, deps.rescanMs));
        onWake = () => {
          if (urgent) setImmediate(finish);
          else coalesce ??= setTimeout(finish, WAKE_COALESCE_MS);
        };
        if (woken) onWake();
      });
    }
  } finally {
    removeWaker();
    options.signal?.removeEventListener('abort', onAbort);
  }
  for (const uid of uids) if (!outcomes.has(uid)) outcomes.set(uid, 'timeout');
  return outcomes;
}

export interface CompletionDeps {
  engine: Pick<PodWorkers, 'snapshot' | 'subscribe'>;
  holds: (uid: string) => boolean;
  now: () => number;
  closed: () => boolean;
}

/**
 * Waits until no owned pod is terminating (or terminated but not yet cleaned up), bounded by the
 * killPodNow bound of the longest grace plus 5 s; an abort ends the wait.
 */
export async function driveToCompletion(deps: CompletionDeps, signal?: AbortSignal): Promise<void> {
  const unfinished = (): PodSyncStatusView[] => [...deps.engine.snapshot().values()].filter((v) => deps.holds(v.uid) && !v.finished && workerStateOf(v) !== 'sync');
  const first = unfinished();
  if (first.length === 0 || signal?.aborted) return;
  const bound = deps.now() + killTimeoutMs(Math.max(1, ...first.map((v) => v.gracePeriod))) + 5_000;
  await new Promise<void>((resolve) => {
    const check = (): void => {
      if (unfinished().length === 0 || deps.now() >= bound || deps.closed() || signal?.aborted) {
        unsubscribe();
        clearInterval(timer);
        signal?.removeEventListener('abort', check);
        resolve();
      }
    };
    const unsubscribe = deps.engine.subscribe(() => queueMicrotask(check));
    // Ref'd on purpose (bounded): the caller awaits completion.
    const timer = setInterval(check, 250);
    signal?.addEventListener('abort', check, { once: true });
    check();
  });
}

/**
 * Lets the cleanup of pods that just terminated finish (syncTerminatedPod: the final check, and
 * the removal of an evicted pod's containers and sandboxes), bounded by `boundMs`, instead of
 * aborting it half-way when a command closes the session right after its wait.
 */
export async function settleTerminated(engine: Pick<PodWorkers, 'snapshot' | 'subscribe'>, boundMs: number): Promise<void> {
  const cleaning = (): boolean => [...engine.snapshot().values()].some((v) => v.working && !v.finished && workerStateOf(v) === 'terminated');
  if (!cleaning()) return;
  await new Promise<void>((resolve) => {
    let unsubscribe: () => void = () => {};
    const done = (): void => {
      clearTimeout(timer);
      unsubscribe();
      resolve();
    };
    const timer = setTimeout(done, boundMs);
    unsubscribe = engine.subscribe(() =>
      queueMicrotask(() => {
        if (!cleaning()) done();
      }),
    );
  });
}
