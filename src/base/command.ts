/**
 * The base of every podctl command: global flags, the error/exit-code contract, stderr reporting,
 * signal handling and the node session's life cycle.
 *
 * Invariants:
 * - `run()` returns the command's typed result, which oclif prints as the `--json` output.
 * - Errors end the command with the exit code of `exit-codes.ts`, shown as one line on stderr (or a
 *   JSON `{ error }` object on stdout with --json; a JSON stream gets one more `{"type":"error"}`
 *   line besides the stderr line); `error.name` is one of ERROR_NAMES (errors.ts); the stack only
 *   with `--log-level debug`.
 * - A session opened by a command is closed in `finally`, whatever happened (state is persisted and
 *   leases released by `NodeSession.close`).
 * - The first SIGINT/SIGTERM aborts the command's signal (waits stop, the session is closed cleanly,
 *   exit 130); a second one exits at once.
 * - Heavy modules are never imported here: the session module is loaded on first `session()` call.
 */
import path from 'node:path';
import { Command, Errors, ux } from '@oclif/core';
import type { HandOff, HandOffOptions } from '../session/hand-off.js';
import type { NodeSession, SessionOptions } from '../domain/session-api.js';
import type { PodctlMetrics } from '../metrics/registry.js';
import { RuntimeFailure, UsageError, errorRecord, exitCodeOf, oneLine } from '../lib/errors.js';
import { ExitCode, type ExitCodeValue } from '../lib/exit-codes.js';
import { DEFAULT_STATE_DIR, globalFlags, lastOfEachFlag, nodeName, type GlobalFlags } from './flags.js';
import { colorEnabled, createStyler, renderJson, renderYaml, type Styler } from '../lib/output.js';
import { Reporter } from '../lib/reporter.js';
import { AFTER_PID_WAIT_MS, waitForExit } from './safety-flags.js';
import { isSingleExecutable } from './self.js';

export type SessionFactory = (options: SessionOptions) => Promise<NodeSession>;

/** The real session (the store's `openSession`), loaded on first use. */
const defaultSessionFactory: SessionFactory = async (options) => {
  const { openSession } = await import('../session/open.js');
  return openSession(options);
};

/** The default interrupt message (see `interruptMessage`). */
const DRIVING_INTERRUPT = 'stopping; pods this process drives are handed to a background podctl process';

export abstract class PodctlCommand extends Command {
  static override enableJsonFlag = true;
  static override baseFlags = globalFlags;
  /** Test seam: how commands open their node session. */
  static sessionFactory: SessionFactory = defaultSessionFactory;
  /** Bound for opening the node session (connect, restore, leases). */
  static sessionOpenTimeoutMs = 30_000;
  /** Test seam: how `--no-wait` starts the background driver (loaded on first use). */
  static handOff: (options: HandOffOptions) => Promise<HandOff | undefined> = async (options) => (await import('../session/hand-off.js')).handOff(options);

  protected reporter = new Reporter('info');
  protected styler: Styler = createStyler(false);
  protected globals: GlobalFlags | undefined;
  protected readonly abort = new AbortController();
  /**
   * What the first SIGINT/SIGTERM prints (commands that stop normally on a signal override it); the
   * default says the hand-off only while this process drives a pod that is still terminating.
   */
  protected interruptMessage = DRIVING_INTERRUPT;
  /** A signal is the normal way to end this command (logged as info, not as a warning). */
  protected interruptIsNormal = false;
  /**
   * A background driver (`kill --drive`): told to stop, it starts no other driver; its pods go to the
   * agent serving the state dir, or are named as left undriven (services/terminate/drive.ts `leaveToAgent`).
   */
  protected backgroundDriver = false;
  /** The command only reads (status): its session takes no lease and starts no watchers. */
  protected readOnlySession = false;
  /**
   * The command streams JSON lines on stdout (watch, status -w): an error ends the stream with one
   * more line, `{"type":"error","at":ISO,"error":{name,message,exitCode}}`, besides the usual one line
   * on stderr, instead of a pretty-printed `{ error }` object.
   */
  protected jsonStream = false;
  /** --json and -o contradict each other: the error is one line on stderr, not JSON (the format asked for is unclear). */
  #formatConflict = false;
  /** Whose exited containers the session asks the runtime about (see SessionOptions.exitDetails). */
  protected exitDetails: 'all' | 'driven' = 'all';
  #session: NodeSession | undefined;
  /** `--metrics-textfile`: the registry fed while the command runs, written when it ends. */
  #textfile: { path: string; metrics: PodctlMetrics; detach: (() => void)[] } | undefined;
  #onSignal: ((signal: NodeJS.Signals) => void) | undefined;

  /** Applies the global flags: log level, colour, signal handling. Call right after `parse`. */
  protected configure(flags: GlobalFlags): void {
    this.globals = flags;
    // --json and an -o asking for another format contradict each other: refused, not one silently preferred
    const output = (flags as GlobalFlags & { output?: string }).output;
    const explicitOutput = this.argv.some((a) => a === '--output' || a.startsWith('--output=') || (a.startsWith('-o') && !a.startsWith('--')));
    if (this.jsonEnabled() && output !== undefined && output !== 'json' && explicitOutput) {
      this.#formatConflict = true;
      throw new UsageError(`--json and -o ${output} ask for two formats`, 'use one of them: --json is -o json');
    }
    this.reporter = new Reporter(flags['log-level']);
    this.styler = createStyler(colorEnabled(flags['no-color'], process.stdout));
    // a relative --state-dir (or PODCTL_STATE_DIR) was resolved by the flag's parser: say to what
    const rawStateDir = rawFlagValue(this.argv, '--state-dir') ?? process.env.PODCTL_STATE_DIR;
    if (rawStateDir !== undefined && rawStateDir !== '' && !path.isAbsolute(rawStateDir)) this.reporter.info(`--state-dir ${rawStateDir} is ${flags['state-dir']}`);
    let signals = 0;
    this.#onSignal = (signal) => {
      signals += 1;
      if (signals > 1) {
        // a second signal quits at once unless pods this process drives are not handed on yet: it
        // would drop them mid-termination; a third one quits anyway (they are then undriven)
        const driven = this.#session?.drivenUnfinished().length ?? 0;
        if (signals > 2 || driven === 0) process.exit(ExitCode.Interrupted);
        this.reporter.warn(
          `${signal} again: handing ${driven} pod(s) on to a background podctl first (it takes a moment); once more quits at once and leaves them undriven until \`podctl sync-known\``,
        );
        return;
      }
      this.reporter.done();
      const drivesNothing = (this.interruptMessage === DRIVING_INTERRUPT || this.backgroundDriver) && (this.#session?.drivenUnfinished().length ?? 0) === 0;
      this.reporter.log(this.interruptIsNormal ? 'info' : 'warn', `${signal}: ${drivesNothing ? 'stopping; this process drives no pod' : this.interruptMessage}`);
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
      ...(g['request-timeout'] ? { rpcTimeoutMs: g['request-timeout'] } : {}),
      ...(g.kubeconfig ? { kubeconfig: g.kubeconfig } : {}),
      node: nodeName(g.node),
      log: this.reporter.asLogger(),
      ...(this.readOnlySession ? { readOnly: true } : {}),
      ...(this.exitDetails === 'driven' ? { exitDetails: 'driven' as const } : {}),
      ...(this.#onRuntimeAsked ? { onRuntimeAsked: this.#onRuntimeAsked } : {}),
    };
  }

  /** Set by `openingSession` while the session opens. */
  #onRuntimeAsked: (() => void) | undefined;

  /**
   * Starts opening the session (`open`: `session()`, or it wrapped) and says when the runtime has
   * been sent Version and the first relist (`asked`; with a runtime that does not say so, once the
   * session is open): a command's own checks (the kubelet's) start then, while the runtime answers.
   * `asked` rejects when the open fails first.
   */
  protected openingSession(open: () => Promise<NodeSession> = () => this.session()): { opening: Promise<NodeSession>; asked: Promise<void> } {
    const runtimeAsked = new Promise<void>((resolve) => (this.#onRuntimeAsked = resolve));
    const opening = open();
    return { opening, asked: Promise.race([runtimeAsked, opening.then(() => undefined)]) };
  }

  /**
   * The --json result as oclif prints it (pretty, two spaces), without oclif's colour tokenizer when
   * no JSON theme is set: uncoloured, the tokenizer returns JSON.stringify's text, after tens of ms
   * on a large result (a 100-pod drain's), compiled cold at the very end of the command.
   */
  override logJson(json: unknown): void {
    if (this.config.theme?.json) return super.logJson(json);
    ux.stdout(JSON.stringify(json, null, 2));
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
      if (this.#textfile) {
        const { attachMetrics } = await import('../metrics/registry.js');
        this.#textfile.detach.push(attachMetrics(this.#textfile.metrics, this.#session));
      }
      this.reporter.debug(`session: runtime ${this.#session.endpoint}${this.#session.simulated ? ' (simulator)' : ''}, state ${this.#session.stateDir}`);
    }
    return this.#session;
  }

  /**
   * `--metrics-textfile PATH`: checks the path before anything happens (exit 2 when its directory
   * does not exist), then feeds a registry with this run's engine events and CRI calls; the
   * exposition is written atomically when the command ends, however it ends.
   */
  protected async recordMetricsTo(path: string | undefined): Promise<void> {
    if (path === undefined) return;
    const { createMetrics, metricsFileProblem } = await import('../metrics/registry.js');
    const problem = await metricsFileProblem(path);
    if (problem) throw new UsageError(`--metrics-textfile: ${problem}`, "point it into an existing directory (node_exporter's --collector.textfile.directory)");
    const { observeRuntimeOperations } = await import('../cri/client/client.js');
    const metrics = createMetrics();
    this.#textfile = { path, metrics, detach: [observeRuntimeOperations((op) => metrics.observeRuntimeOperation(op))] };
  }

  /** The working-pods breakdown as the command leaves the node (bounded: 2 s; skipped on failure). */
  async #snapshotWorkingPods(): Promise<void> {
    const textfile = this.#textfile;
    const session = this.#session;
    if (!textfile || !session) return;
    try {
      const { workerSyncOf } = await import('../metrics/working-pods.js');
      const pods = await session.listPods({ scope: 'runtime', runtimeMaxAgeMs: 1_000, signal: (await import('../lib/abortable.js')).boundSignal(2_000) });
      const workers = pods.map(workerSyncOf).filter((w) => w !== undefined);
      textfile.metrics.setWorkingPods(workers, pods.length - workers.length);
    } catch (error) {
      this.reporter.debug(`--metrics-textfile: no final pod listing: ${oneLine(error)}`);
    }
  }

  async #writeTextfile(): Promise<void> {
    const textfile = this.#textfile;
    if (!textfile) return;
    this.#textfile = undefined;
    for (const detach of textfile.detach) detach();
    const { writeMetricsFile } = await import('../metrics/registry.js');
    await writeMetricsFile(textfile.metrics, textfile.path);
  }

  /** Closes the session now (persisting state, releasing leases), before the command ends. */
  protected async closeSession(): Promise<void> {
    const session = this.#session;
    this.#session = undefined;
    await session?.close();
  }

  /**
   * Pods this process drives that are still terminating when its command ends (--no-wait, a wait
   * that timed out or was interrupted) are handed to a detached `podctl kill --drive` process, which
   * drives them until they are terminated: it is started first (so the pods are never without a
   * driver that exists), waits for this process to exit, then takes their leases over. The result
   * records that process's PID; the message names it.
   */
  protected async handOffUnfinished(action: string, result: { handedOffTo?: { pid: number; log: string; uids: string[] } | null }, uids: string[]): Promise<void> {
    if (uids.length === 0) return;
    if (this.backgroundDriver) {
      result.handedOffTo = null;
      return this.stopDriving(action, uids);
    }
    const started = await this.startDriver(uids);
    result.handedOffTo = started ? { ...started, uids } : null;
    this.reportHandOff(action, uids.length, started);
  }

  /** Starts the background driver for `uids` and closes this session (its leases go to the driver). */
  private async startDriver(uids: string[]): Promise<HandOff | undefined> {
    const g = this.globals;
    let started: HandOff | undefined;
    try {
      started = await (this.constructor as typeof PodctlCommand).handOff({
        uids,
        ...(isSingleExecutable() ? {} : { bin: path.join(this.config.root, 'bin', 'run.js') }),
        stateDir: g?.['state-dir'] ?? this.#session?.stateDir ?? DEFAULT_STATE_DIR,
        afterPid: process.pid,
        // the runtime this process drove, never another one the driver would find by itself
        ...(g?.['runtime-endpoint'] || this.#session?.endpoint ? { runtimeEndpoint: g?.['runtime-endpoint'] || this.#session?.endpoint } : {}),
        ...(g?.['request-timeout'] ? { requestTimeoutMs: g['request-timeout'] } : {}),
        ...(g?.kubeconfig ? { kubeconfig: g.kubeconfig } : {}),
        ...(g?.node ? { node: g.node } : {}),
      });
    } catch (error) {
      this.reporter.warn(`could not start a background driver: ${oneLine(error)}`);
    }
    await this.closeSession();
    return started;
  }

  private reportHandOff(action: string, count: number, started: HandOff | undefined): void {
    if (started) this.reporter.info(`${action}: ${count} pod(s) still terminating, handed to background podctl pid ${started.pid}, which drives them until terminated (log ${started.log})`);
    else this.reporter.warn(`${action}: ${count} pod(s) still terminating and no process drives them; run \`podctl sync-known\` to finish them`);
  }

  /**
   * The ways a command can end (errors, `q` in watch, an interrupted sync) all pass here: pods this
   * process still drives are handed on before the session closes, so no exit drops a pod.
   */
  private async handOffWhatIsLeft(): Promise<void> {
    const uids = this.#session?.drivenUnfinished() ?? [];
    if (uids.length === 0) return;
    if (this.backgroundDriver) return this.stopDriving(this.id ?? 'podctl', uids);
    this.reportHandOff(this.id ?? 'podctl', uids.length, await this.startDriver(uids));
  }

  /** A background driver stops: its session closes (leases released) and its pods go to the agent, or are named undriven. */
  private async stopDriving(action: string, uids: string[]): Promise<void> {
    const stateDir = this.#session?.stateDir ?? this.globals?.['state-dir'] ?? DEFAULT_STATE_DIR;
    const listed = (await this.#session?.listPods({ uids, runtimeMaxAgeMs: 60_000 }).catch(() => undefined)) ?? [];
    const names = new Map(listed.map((p) => [p.uid, `${p.namespace}/${p.name}`]));
    await this.closeSession();
    const { AGENT_TAKE_OVER_MS, leaveToAgent } = await import('../services/terminate/drive.js');
    const stop = await leaveToAgent({ stateDir, pods: uids.map((uid) => ({ uid, name: names.get(uid) ?? uid })) });
    if (stop.handed.length > 0) this.reporter.warn(`${action}: stopping; ${stop.handed.length} pod(s) handed to the agent (pid ${stop.agentPid}), which drives them on: ${stop.handed.join(', ')}`);
    if (stop.undriven.length === 0) return;
    const why = stop.agentPid === null ? `no agent serves ${stateDir}` : `the agent (pid ${stop.agentPid}) did not take them within ${AGENT_TAKE_OVER_MS / 1000}s`;
    this.reporter.warn(`${action}: stopping; ${why}, so ${stop.undriven.length} pod(s) are left undriven: ${stop.undriven.join(', ')}; \`podctl sync-known\` (or \`podctl agent\`) resumes them`);
  }

  /** The safety options of a command that stops pods (--dry-run, --yes, the terminal prompt). */
  protected safetyOptions(flags: { 'dry-run': boolean; yes: boolean }): { dryRun: boolean; yes: boolean; confirm?: (question: string) => Promise<boolean> } {
    // a dry run reads only: its session takes no lease and writes nothing
    if (flags['dry-run']) this.readOnlySession = true;
    const confirm = flags['dry-run'] || flags.yes ? undefined : this.confirmer();
    return { dryRun: flags['dry-run'], yes: flags.yes, ...(confirm ? { confirm } : {}) };
  }

  /** A background driver waits (bounded) until the process that handed it the pods has exited. */
  protected async waitForHandingProcess(pid: number | undefined): Promise<void> {
    if (pid === undefined) return;
    if (!(await waitForExit(pid, AFTER_PID_WAIT_MS, this.abort.signal))) {
      this.reporter.warn(`process ${pid} did not exit within ${AFTER_PID_WAIT_MS / 1000}s; taking over what it released`);
    }
  }

  /**
   * Asks a yes/no question on the terminal (stderr), or undefined when there is no terminal to ask
   * on (stdin or stderr is not a TTY): then a destructive scope needs --yes.
   */
  protected confirmer(): ((question: string) => Promise<boolean>) | undefined {
    if (process.stdin.isTTY !== true || process.stderr.isTTY !== true) return undefined;
    return async (question) => {
      this.reporter.done();
      // readline only when a question is asked: no command loads it otherwise
      const { createInterface } = process.getBuiltinModule('node:readline/promises');
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      const onAbort = (): void => rl.close();
      this.abort.signal.addEventListener('abort', onAbort, { once: true });
      try {
        const answer = await rl.question(`${question} [y/N] `, { signal: this.abort.signal });
        return /^y(es)?$/i.test(answer.trim());
      } catch {
        return false;
      } finally {
        this.abort.signal.removeEventListener('abort', onAbort);
        rl.close();
      }
    };
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

  /** A flag given more than once is taken the last time (lib/flags.ts lastOfEachFlag), before oclif parses. */
  override async init(): Promise<void> {
    await super.init();
    const own = this.constructor as typeof PodctlCommand;
    const flags = { ...own.baseFlags, ...own.flags } as unknown as Parameters<typeof lastOfEachFlag>[1];
    this.argv = lastOfEachFlag(this.argv, flags);
  }

  override async catch(error: Error & { exitCode?: number }): Promise<unknown> {
    if (error instanceof Errors.ExitError) throw error;
    const code = exitCodeOf(error);
    process.exitCode = code;
    this.reporter.done();
    const parseError = (error as { parse?: unknown }).parse !== undefined;
    const line = parseError ? `${oneLine(error)} (see podctl ${this.id ?? ''} --help)` : oneLine(error);
    if (this.jsonStream) {
      process.stdout.write(`${JSON.stringify({ type: 'error', at: new Date().toISOString(), error: errorRecord(error, line) })}\n`);
      process.stderr.write(`error: ${line}\n`);
    } else if (this.jsonEnabled() && !this.#formatConflict) {
      this.logJson({ error: errorRecord(error, line) });
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
    await this.#snapshotWorkingPods();
    try {
      await this.handOffWhatIsLeft();
    } catch (handOffError) {
      process.stderr.write(`error: handing pods on: ${oneLine(handOffError)}\n`);
    }
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
    try {
      await this.#writeTextfile();
    } catch (writeError) {
      process.stderr.write(`error: --metrics-textfile: ${oneLine(writeError)}\n`);
      if (!error) process.exitCode = ExitCode.Failure;
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

/** The value given for `--flag` in argv (`--flag v` or `--flag=v`), or undefined. */
function rawFlagValue(argv: string[], flag: string): string | undefined {
  for (let i = 0; i < argv.length; i += 1) {
    const a = argv[i] as string;
    if (a === flag) return argv[i + 1];
    if (a.startsWith(`${flag}=`)) return a.slice(flag.length + 1);
  }
  return undefined;
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
    if (inStateDir)
      return new RuntimeFailure(`state dir ${stateDir}: ${e.code} on ${e.path}`, 'pass a writable directory with --state-dir (or PODCTL_STATE_DIR)', { cause: error, kind: 'StoreError' });
  }
  return error;
}
