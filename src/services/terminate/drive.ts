/**
 * The background driver's patience (`podctl kill --drive`, started by session/hand-off.ts): a
 * runtime that is away — containerd restarting, its socket not there yet — is waited for, not a
 * reason to exit. The driver exists because a process that exits must not drop the pods it drives;
 * a driver that exits on the first refused connection would drop them all the same.
 *
 * Invariants:
 * - Only a runtime that cannot be reached is waited for (no socket, connection refused, no gRPC
 *   answer, UNAVAILABLE, a deadline); any other error ends the attempt as before.
 * - The pauses grow 0.5 s, 1 s, 2 s … up to the engine's back-off period (10 s), the pause the
 *   engine itself keeps between a pod's failed syncs; there is no overall bound — the driver runs
 *   until its pods are terminated — but the signal (SIGTERM, Ctrl-C) ends the wait at once.
 * - The log says when the wait starts (with the error) and when the runtime answers again; the
 *   attempts in between are debug lines.
 * - It ends when there is nothing left to drive (`leftToDrive`: none of its pods has a checkpoint
 *   any more — the state dir was removed, or another podctl finished and forgot them): a driver
 *   never outlives the record of its pods.
 */
import { existsSync } from 'node:fs';
import { DEFAULT_BACKOFF_PERIOD_MS } from '../../engine/index.js';
import { EndpointError } from '../../cri/client/endpoint.js';
import { GrpcStatus, isCriError } from '../../cri/client/errors.js';
import { sleep } from '../../lib/abortable.js';
import { formatDuration } from '../../lib/duration.js';
import type { Reporter } from '../../lib/reporter.js';
import { checkpointFile, layoutOf } from '../../store/index.js';

const FIRST_PAUSE_MS = 500;

/** The endpoint failures that a runtime coming back mends (an invalid path or a permission does not). */
const AWAY: ReadonlySet<EndpointError['reason']> = new Set(['missing', 'refused', 'none', 'not-cri']);

/** Whether `error` (or what caused it) says the runtime could not be reached at all. */
export function isRuntimeAway(error: unknown): boolean {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    if (e instanceof EndpointError) return AWAY.has(e.reason);
    if (isCriError(e)) return e.code === GrpcStatus.UNAVAILABLE || e.code === GrpcStatus.DEADLINE_EXCEEDED;
  }
  return false;
}

/** The pause before attempt `attempt + 1` (attempt ≥ 1): doubling from 0.5 s, at most the engine's back-off period. */
export function awayPauseMs(attempt: number, capMs = DEFAULT_BACKOFF_PERIOD_MS): number {
  return Math.min(capMs, FIRST_PAUSE_MS * 2 ** Math.min(attempt - 1, 20));
}

export interface UntilRuntimeOptions {
  /** What is attempted, for the log: "opening the session". */
  what: string;
  reporter: Pick<Reporter, 'warn' | 'debug'>;
  signal: AbortSignal;
  now?: () => number;
  pause?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Checked after each failure and again before the next attempt: false ends the wait (NothingLeftToDrive). Default: always true. */
  leftToDrive?: () => boolean;
}

/** The wait ended because none of the driver's pods is recorded any more. */
export class NothingLeftToDrive extends Error {
  override readonly name = 'NothingLeftToDrive';
}

/** Whether any of `uids` still has a checkpoint in `stateDir` (the driver's pods are still recorded). */
export function checkpointsRemain(stateDir: string, uids: readonly string[]): boolean {
  const layout = layoutOf(stateDir);
  return uids.some((uid) => existsSync(checkpointFile(layout, uid)));
}

/** Runs `attempt` until it does not fail for want of a runtime; other failures and aborts propagate. */
export async function untilRuntimeAnswers<T>(attempt: () => Promise<T>, options: UntilRuntimeOptions): Promise<T> {
  const now = options.now ?? Date.now;
  const pause = options.pause ?? ((ms: number, signal: AbortSignal) => sleep(ms, signal));
  let awaySince: number | undefined;
  let failures = 0;
  for (;;) {
    const startedAt = now();
    try {
      const value = await attempt();
      if (awaySince !== undefined) options.reporter.warn(`${options.what}: the runtime answered again ${formatDuration(startedAt - awaySince)} after it went away`);
      return value;
    } catch (error) {
      if (!isRuntimeAway(error) || options.signal.aborted) throw error;
      const message = (error as Error).message.split('\n')[0] ?? '';
      const nothingLeft = (): NothingLeftToDrive => new NothingLeftToDrive(`${options.what}: none of the pods has a checkpoint any more; nothing left to drive (the runtime: ${message})`);
      if (options.leftToDrive?.() === false) throw nothingLeft();
      failures += 1;
      const ms = awayPauseMs(failures);
      if (awaySince === undefined) {
        awaySince = now();
        options.reporter.warn(`${options.what}: ${message}; waiting for the runtime (retrying with back-off, at most every ${formatDuration(DEFAULT_BACKOFF_PERIOD_MS)}; SIGTERM stops)`);
      } else options.reporter.debug(`${options.what}: still no runtime (attempt ${failures}): ${message}; next in ${formatDuration(ms)}`);
      await pause(ms, options.signal);
      // and again before the next attempt, which would create the state dir anew
      if (options.leftToDrive?.() === false) throw nothingLeft();
    }
  }
}

/** Runs `attempt`, waiting out a runtime that is away; `what` names it in the log. */
export type Persist = <T>(what: string, attempt: () => Promise<T>) => Promise<T>;

/**
 * How the background driver runs each step for its pods (`uids` in `stateDir`): through
 * `untilRuntimeAnswers`, until none of them is recorded any more.
 */
export function driverPatience(options: { stateDir: string; uids: readonly string[]; reporter: UntilRuntimeOptions['reporter']; signal: AbortSignal }): Persist {
  const { stateDir, uids, reporter, signal } = options;
  return (what, attempt) => untilRuntimeAnswers(attempt, { what, reporter, signal, leftToDrive: () => checkpointsRemain(stateDir, uids) });
}

/** How long a driver told to stop waits for the agent to take its pods over (the agent steps every 2 s by default). */
export const AGENT_TAKE_OVER_MS = 10_000;
const TAKE_OVER_POLL_MS = 200;

export interface DriverStop {
  /** The agent serving the state dir, when one runs. */
  agentPid: number | null;
  /** Pods the agent took over (or that finished meanwhile). */
  handed: string[];
  /** Pods no live process drives now, as `namespace/name`. */
  undriven: string[];
}

/**
 * A background driver told to stop (SIGTERM, Ctrl-C) starts no other driver: its session is closed
 * (its leases released) before this is called, and the agent that serves the state dir, if one
 * runs, takes the pods over at its next step; this waits (at most AGENT_TAKE_OVER_MS) until the
 * agent holds each pod's lease or the pod is no longer on its way out. The pods that no live process
 * drives at the end are named: `podctl sync-known` (or an agent) resumes them from their checkpoints.
 */
export async function leaveToAgent(options: { stateDir: string; pods: readonly { uid: string; name: string }[]; now?: () => number }): Promise<DriverStop> {
  const now = options.now ?? Date.now;
  const { liveAgent } = await import('../../store/agent-mark.js');
  const agent = await liveAgent(options.stateDir);
  if (!agent) return { agentPid: null, handed: [], undriven: options.pods.map((p) => p.name) };
  const { openStore } = await import('../../store/index.js');
  const store = await openStore({ stateDir: options.stateDir, readOnly: true });
  const handed = new Set<string>();
  const deadline = now() + AGENT_TAKE_OVER_MS;
  for (;;) {
    const uids = options.pods.map((p) => p.uid).filter((uid) => !handed.has(uid));
    const [leases, checkpoints] = await Promise.all([store.leases.inspectSome(uids), store.checkpoints.readSome(uids)]);
    for (const uid of uids) {
      const lease = leases.get(uid);
      const checkpoint = checkpoints.get(uid);
      if ((lease?.alive === true && lease.record?.pid === agent.pid) || checkpoint === undefined || checkpoint.status.finished) handed.add(uid);
    }
    if (handed.size === options.pods.length || now() >= deadline) break;
    await sleep(TAKE_OVER_POLL_MS);
  }
  return { agentPid: agent.pid, handed: options.pods.filter((p) => handed.has(p.uid)).map((p) => p.name), undriven: options.pods.filter((p) => !handed.has(p.uid)).map((p) => p.name) };
}
