/**
 * The base of every podctl command: global flags, the error/exit-code contract, stderr reporting,
 * signal handling and the node session's life cycle.
 *
 * Invariants:
 * - `run()` returns the command's typed result, which oclif prints as the `--json` output.
 * - Errors end the command with the exit code of `exit-codes.ts`, shown as one line on stderr (or a
 *   JSON `{ error }` object on stdout with --json); the stack only with `--log-level debug`.
 * - A session opened by a command is closed in `finally`, whatever happened (state is persisted and
 *   leases released by `NodeSession.close`).
 * - The first SIGINT/SIGTERM aborts the command's signal (waits stop, the session is closed cleanly,
 *   exit 130); a second one exits at once.
 * - Heavy modules are never imported here: the session module is loaded on first `session()` call.
 */
import path from 'node:path';
import { Command, Errors } from '@oclif/core';
import type { HandOff, HandOffOptions } from '../services/hand-off.js';
import type { NodeSession, SessionOptions } from '../services/session-api.js';
import type { TerminateResult } from '../services/terminate.js';
import { RuntimeFailure, exitCodeOf, oneLine } from './errors.js';
import { ExitCode, type ExitCodeValue } from './exit-codes.js';
import { DEFAULT_STATE_DIR, globalFlags, nodeName, type GlobalFlags } from './flags.js';
import { colorEnabled, createStyler, renderJson, renderYaml, type Styler } from './output.js';
import { Reporter } from './reporter.js';
import { isSingleExecutable } from './self.js';

export type SessionFactory = (options: SessionOptions) => Promise<NodeSession>;

/** The real session (the store's `openSession`), loaded on first use. */
export const defaultSessionFactory: SessionFactory = async (options) => {
  const { openSession } = await import('../services/session.js');
  return openSession(options);
};

export abstract class PodctlCommand extends Command {
  static override enableJsonFlag = true;
  static override baseFlags = globalFlags;
  /** Test seam: how commands open their node session. */
  static sessionFactory: SessionFactory = defaultSessionFactory;
  /** Bound for opening the node session (connect, restore, leases). */
  static sessionOpenTimeoutMs = 30_000;
  /** Test seam: how `--no-wait` starts the background driver (loaded on first use). */
  static handOff: (options: HandOffOptions) => Promise<HandOff | undefined> = async (options) => (await import('../services/hand-off.js')).handOff(options);

  protected reporter = new Reporter('info');
  protected styler: Styler = createStyler(false);
  protected globals: GlobalFlags | undefined;
  protected readonly abort = new AbortController();
  /** What the first SIGINT/SIGTERM prints (commands that stop normally on a signal override it). */
  protected interruptMessage = 'stopping; pod state is saved and the next podctl run resumes it';
  /** A signal is the normal way to end this command (logged as info, not as a warning). */
  protected interruptIsNormal = false;
  /** The command only reads (status): its session takes no lease and starts no watchers. */
  protected readOnlySession = false;
  /** Whose exited containers the session asks the runtime about (see SessionOptions.exitDetails). */
  protected exitDetails: 'all' | 'driven' = 'all';
  #session: NodeSession | undefined;
  #onSignal: ((signal: NodeJS.Signals) => void) | undefined;

  /** Applies the global flags: log level, colour, signal handling. Call right after `parse`. */
  protected configure(flags: GlobalFlags): void {
    this.globals = flags;
    this.reporter = new Reporter(flags['log-level']);
    this.styler = createStyler(colorEnabled(flags['no-color'], process.stdout));
    let signals = 0;
    this.#onSignal = (signal) => {
      signals += 1;
      if (signals > 1) process.exit(ExitCode.Interrupted);
      this.reporter.done();
      this.reporter.log(this.interruptIsNormal ? 'info' : 'warn', `${signal}: ${this.interruptMessage}`);
      this.abort.abort(new DOMException(`interrupted by ${signal}`, 'AbortError'));
    };
    process.on('SIGINT', this.#onSignal);
    process.on('SIGTERM', this.#onSignal);
  }

  protected sessionOptions(): SessionOptions {
    const g = this.requireGlobals();
    return {
      stateDir: g['state-dir'],
      ...(g['runtime-endpoint'] ? { runtimeEndpoint: g['runtime-endpoint'] } : {}),
      ...(g.kubeconfig ? { kubeconfig: g.kubeconfig } : {}),
      node: nodeName(g.node),
      log: this.reporter.asLogger(),
      ...(this.readOnlySession ? { readOnly: true } : {}),
      ...(this.exitDetails === 'driven' ? { exitDetails: 'driven' as const } : {}),
    };
  }

  /**
   * Opens the node session once; closed in `finally`. Opening is bounded (SESSION_OPEN_TIMEOUT_MS)
   * and interruptible; a file-system error on the state dir is reported with the flag to fix.
   */
  protected async session(): Promise<NodeSession> {
    if (!this.#session) {
      const factory = (this.constructor as typeof PodctlCommand).sessionFactory;
      const options = this.sessionOptions();
      try {
        this.#session = await bounded(factory(options), PodctlCommand.sessionOpenTimeoutMs, this.abort.signal, options.stateDir);
      } catch (error) {
        throw explainOpenError(error, options.stateDir);
      }
      this.reporter.debug(`session: runtime ${this.#session.endpoint}${this.#session.simulated ? ' (simulator)' : ''}, state ${this.#session.stateDir}`);
    }
    return this.#session;
  }

  /** Closes the session now (persisting state, releasing leases), before the command ends. */
  protected async closeSession(): Promise<void> {
    const session = this.#session;
    this.#session = undefined;
    await session?.close();
  }

  /**
   * `--no-wait`: pods this process would drive itself are handed to a detached `podctl` process
   * (after this session is closed and its leases released), so they keep being driven.
   */
  protected async handOffUnfinished(result: TerminateResult): Promise<void> {
    const { podsToHandOff } = await import('../services/terminate.js');
    const uids = podsToHandOff(result);
    if (uids.length === 0) return;
    await this.closeSession();
    const g = this.globals;
    const started = await (this.constructor as typeof PodctlCommand).handOff({
      uids,
      ...(isSingleExecutable() ? {} : { bin: path.join(this.config.root, 'bin', 'run.js') }),
      stateDir: g?.['state-dir'] ?? DEFAULT_STATE_DIR,
      ...(g?.['runtime-endpoint'] ? { runtimeEndpoint: g['runtime-endpoint'] } : {}),
      ...(g?.kubeconfig ? { kubeconfig: g.kubeconfig } : {}),
      ...(g?.node ? { node: g.node } : {}),
    });
    result.handedOffTo = started ? { ...started, uids } : null;
    if (started) this.reporter.info(`${result.action}: ${uids.length} pod(s) handed to background podctl pid ${started.pid} (log ${started.log})`);
    else this.reporter.warn(`${result.action}: could not start a background driver; run \`podctl sync-known\` to finish these pods`);
  }

  /** The outcome of a successful run that still is not "done" (timed out, not found, partial). */
  protected setExitCode(code: ExitCodeValue): void {
    process.exitCode = code;
  }

  /** Prints a result for `-o json|yaml` (with --json oclif prints the returned value instead). */
  protected async printStructured(value: unknown, format: 'json' | 'yaml'): Promise<void> {
    if (this.jsonEnabled()) return;
    this.log(format === 'json' ? renderJson(value) : await renderYaml(value));
  }

  override async catch(error: Error & { exitCode?: number }): Promise<unknown> {
    if (error instanceof Errors.ExitError) throw error;
    const code = exitCodeOf(error);
    process.exitCode = code;
    this.reporter.done();
    const parseError = (error as { parse?: unknown }).parse !== undefined;
    const line = parseError ? `${oneLine(error)} (see podctl ${this.id ?? ''} --help)` : oneLine(error);
    if (this.jsonEnabled()) {
      this.logJson({ error: { name: error.name, message: line, exitCode: code } });
    } else {
      process.stderr.write(`error: ${line}\n`);
    }
    if (this.debugEnabled() && error.stack) process.stderr.write(`${error.stack}\n`);
    throw new Errors.ExitError(code);
  }

  override async finally(error: Error | undefined): Promise<void> {
    if (this.#onSignal) {
      process.off('SIGINT', this.#onSignal);
      process.off('SIGTERM', this.#onSignal);
    }
    this.reporter.done();
    const session = this.#session;
    this.#session = undefined;
    if (session) {
      try {
        await session.close();
      } catch (closeError) {
        process.stderr.write(`error: closing the session: ${oneLine(closeError)}\n`);
        if (!error) process.exitCode = ExitCode.Failure;
      }
    }
    await super.finally(error);
  }

  private debugEnabled(): boolean {
    if (this.globals) return this.globals['log-level'] === 'debug';
    const i = this.argv.indexOf('--log-level');
    return this.argv.includes('--log-level=debug') || (i >= 0 && this.argv[i + 1] === 'debug') || process.env.PODCTL_LOG_LEVEL === 'debug';
  }

  private requireGlobals(): GlobalFlags {
    if (!this.globals) throw new Error('configure() must run before the session is opened');
    return this.globals;
  }
}

/** Resolves with the session, or rejects when the bound passes or the signal aborts (a late session is closed). */
function bounded(opening: Promise<NodeSession>, timeoutMs: number, signal: AbortSignal, stateDir: string): Promise<NodeSession> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (): void => {
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
    const giveUp = (error: unknown): void => {
      if (settled) return;
      finish();
      reject(error);
    };
    const onAbort = (): void => giveUp(signal.reason ?? new DOMException('interrupted', 'AbortError'));
    const timer = setTimeout(
      () => giveUp(new RuntimeFailure(`opening the node session did not finish within ${timeoutMs / 1000}s`, `check --state-dir ${stateDir} and --runtime-endpoint`)),
      timeoutMs,
    );
    timer.unref();
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    opening.then(
      (session) => {
        if (settled) return void session.close().catch(() => undefined);
        finish();
        resolve(session);
      },
      (error: unknown) => {
        if (settled) return;
        finish();
        reject(error);
      },
    );
  });
}

/** A file-system error on a path inside the state dir names the flag to fix. */
function explainOpenError(error: unknown, stateDir: string): unknown {
  const e = error as NodeJS.ErrnoException;
  // The store's own one line already names the path, the cause and the fix.
  if (error instanceof Error && error.name === 'StoreError') return error;
  if (error instanceof Error && typeof e.code === 'string' && typeof e.path === 'string' && !(error instanceof RuntimeFailure)) {
    const inStateDir = e.path === stateDir || e.path.startsWith(`${stateDir}/`) || stateDir.startsWith(`${e.path}/`);
    if (inStateDir) return new RuntimeFailure(`state dir ${stateDir}: ${e.code} on ${e.path}`, 'pass a writable directory with --state-dir (or PODCTL_STATE_DIR)', { cause: error });
  }
  return error;
}
