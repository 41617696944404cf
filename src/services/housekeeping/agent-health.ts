/**
 * The agent's health as `/healthz` and `/readyz` report it: the loop's own progress (liveness), the
 * last steps' outcomes (readiness), and each dependency — the container runtime, the state dir, the
 * API server, the kubelet — with its own state and since when.
 *
 * Invariants:
 * - Liveness depends only on the loop: it runs, and a step ended within `livenessWindowMs`. A
 *   maintenance drain runs beside the loop and counts for nothing here. A dependency that fails
 *   never makes the agent "dead": a restart would not mend the runtime, the state dir or the API
 *   server.
 * - Readiness fails, naming the cause, after `READY_AFTER_FAILED_STEPS` failed steps in a row, while
 *   the runtime has not answered for `windowMs`, or while the API server refuses the credentials
 *   (401/403: only the operator can fix that). It comes back with the first step that succeeds.
 * - API writes withheld (api-writes.ts) leave the agent live and ready: the verdict line says
 *   `degraded: …` instead of `ok`.
 * - A dependency's `since` changes only when its state changes; each change of the runtime's, the
 *   state dir's and the API server's state is logged once, not at every step.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { formatDuration } from '../../lib/duration.js';
import type { Reporter } from '../../lib/reporter.js';

export type Dependency = 'runtime' | 'state-dir' | 'api' | 'api-writes' | 'kubelet';

/** Failed steps in a row after which the agent is not ready. */
const READY_AFTER_FAILED_STEPS = 3;

interface DependencyState {
  state: string;
  ok: boolean;
  since: number;
  detail?: string;
}

export interface StepCause {
  dependency: Dependency | 'housekeeping';
  message: string;
}

export class AgentHealth {
  running = false;
  lastStepAt = 0;
  #lastRuntimeAt: number;
  #runtimeAwaySince: number | undefined;
  #failedInARow = 0;
  #lastFailure: StepCause | undefined;
  readonly #deps = new Map<Dependency, DependencyState>();
  readonly #now: () => number;
  readonly #windowMs: number;
  readonly #livenessWindowMs: number;
  readonly #reporter: Reporter;

  constructor(now: () => number, windowMs: number, livenessWindowMs: number, reporter: Reporter) {
    this.#now = now;
    this.#windowMs = windowMs;
    this.#livenessWindowMs = livenessWindowMs;
    this.#reporter = reporter;
    this.#lastRuntimeAt = now();
    this.lastStepAt = now();
  }

  /** Records a dependency's state; `since` moves only when the state changes. Returns true on a change. */
  set(dependency: Dependency, state: string, ok: boolean, detail?: string): boolean {
    const current = this.#deps.get(dependency);
    if (current && current.state === state) {
      if (detail !== undefined) current.detail = detail;
      else delete current.detail;
      return false;
    }
    this.#deps.set(dependency, { state, ok, since: this.#now(), ...(detail !== undefined ? { detail } : {}) });
    return current !== undefined || !ok;
  }

  runtimeAnswered(): void {
    const silentSince = this.#lastRuntimeAt;
    this.#lastRuntimeAt = this.#now();
    this.set('runtime', 'ok', true);
    if (this.#runtimeAwaySince === undefined) return;
    this.#reporter.info(`agent: the runtime answers again (after ${formatDuration(this.#lastRuntimeAt - silentSince)} without an answer)`);
    this.#runtimeAwaySince = undefined;
  }

  /** A step could not reach the runtime: said once until it answers again. */
  runtimeAway(reason: string): void {
    this.set('runtime', 'unreachable', false, reason);
    if (this.#runtimeAwaySince !== undefined) return;
    this.#runtimeAwaySince = this.#now();
    this.#reporter.warn(`agent: the runtime does not answer: ${reason}; housekeeping waits for it (/readyz says 503 after ${formatDuration(this.#windowMs)} without an answer)`);
  }

  /** The API server's state as the watches see it; said once per change. */
  api(reachable: boolean, permanent: boolean, detail: string | undefined): void {
    const state = reachable ? 'ok' : permanent ? 'refused' : 'unreachable';
    const before = this.#deps.get('api');
    this.set('api', state, reachable, detail);
    if (before?.state === state) return;
    if (state === 'ok' && before) this.#reporter.info(`agent: the API server answers again (after ${formatDuration(this.#now() - before.since)})`);
    else if (state === 'unreachable')
      this.#reporter.warn(`agent: the API server does not answer: ${detail}; housekeeping goes on with the last known pods (no orphan is terminated, no final delete sent until it answers)`);
    else if (state === 'refused') this.#reporter.warn(`agent: the API server refuses the agent: ${detail}`);
  }

  /** The outcome of a step: failures in a row make the agent not ready; `cause` names what failed. */
  stepEnded(ok: boolean, cause?: StepCause): void {
    this.lastStepAt = this.#now();
    if (ok) {
      this.#failedInARow = 0;
      this.#lastFailure = undefined;
      return;
    }
    this.#failedInARow += 1;
    this.#lastFailure = cause;
  }

  /** undefined while the loop makes progress, else why it is not live. */
  notLive(): string | undefined {
    if (!this.running) return 'the housekeeping loop is not running';
    const quiet = this.#now() - this.lastStepAt;
    if (quiet > this.#livenessWindowMs) return `no housekeeping step has ended for ${formatDuration(quiet)}`;
    return undefined;
  }

  /** undefined when ready, else the one-line cause. */
  notReady(): string | undefined {
    const dead = this.notLive();
    if (dead) return dead;
    const silent = this.#now() - this.#lastRuntimeAt;
    if (silent > this.#windowMs) return `runtime: the container runtime has not answered for ${formatDuration(silent)}`;
    const api = this.#deps.get('api');
    if (api?.state === 'refused') return `api: ${api.detail ?? 'refused'}`;
    if (this.#failedInARow >= READY_AFTER_FAILED_STEPS) {
      const cause = this.#lastFailure;
      return `${this.#failedInARow} housekeeping steps failed in a row${cause ? `: ${cause.dependency}: ${cause.message}` : ''}`;
    }
    return undefined;
  }

  /** The body of /healthz and /readyz: the verdict, then one line per dependency with its state and since when. */
  report(verdict: string | undefined): string {
    const at = (ms: number): string => `${new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z')} (${formatDuration(Math.max(0, this.#now() - ms))})`;
    const writes = this.#deps.get('api-writes');
    const lines = [verdict ?? (writes && !writes.ok ? `degraded: API writes withheld: ${writes.detail ?? ''}` : 'ok')];
    lines.push(
      `loop: ${this.notLive() ?? `ok, last step ended ${formatDuration(Math.max(0, this.#now() - this.lastStepAt))} ago`}${this.#failedInARow > 0 ? `; ${this.#failedInARow} failed in a row` : ''}`,
    );
    for (const name of ['runtime', 'state-dir', 'api', 'api-writes', 'kubelet'] as const) {
      const d = this.#deps.get(name);
      if (!d) continue;
      lines.push(`${name}: ${d.state} since ${at(d.since)}${d.detail ? `: ${d.detail}` : ''}`);
    }
    return `${lines.join('\n')}\n`;
  }
}

/** undefined when a file can be written and removed in the state dir, else why not (one line). */
export async function writableStateDir(dir: string): Promise<string | undefined> {
  const file = join(dir, `.agent-check-${process.pid}`);
  try {
    await writeFile(file, '', { mode: 0o600 });
    await rm(file, { force: true });
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    const why = code === 'EROFS' ? 'read-only file system' : code === 'ENOSPC' || code === 'EDQUOT' ? 'no space left' : code === 'EACCES' || code === 'EPERM' ? 'permission denied' : code;
    return `${dir}: ${why} (${code})`;
  }
}
