/**
 * `podctl status`: parse and validate, call the status service, render. No logic of its own.
 */
import { Args, Flags } from '@oclif/core';
import { apiNodeFor, kubeletFlags, kubeletStatusFor } from '../base/api-door.js';
import { PodctlCommand } from '../base/command.js';
import { UsageError } from '../lib/errors.js';
import { ExitCode, exitCodesHelp } from '../lib/exit-codes.js';
import { selectionFlags, type GlobalFlags } from '../base/flags.js';
import { renderTable } from '../lib/output.js';
import { parseDuration } from '../lib/duration.js';
import { selectionFromFlags, type PodSelection } from '../lib/refs.js';
import type { LastShutdownJson } from '../services/shutdown/index.js';
import { NO_NODE_FACTS, STATUS_SORT_KEYS, statusJson, podStatus, sortStatusRows, statusExitCode, type StatusResult } from '../services/diagnose/status.js';
import { explainText, kubeletHeader, statusTable } from '../services/diagnose/output.js';

const noop = (): void => undefined;

export default class Status extends PodctlCommand {
  static override summary = "Show the node's pods as podctl's pod workers see them; --explain says why a pod is still here.";
  static override description = `One row per pod tracked by any podctl process or found in the runtime: namespace/name, short UID, worker state (running, terminating, terminated, finished, runtime-only; in JSON: sync, terminating, terminated, finished, runtime), READY (containers running/total as the runtime shows them, as kubectl's; -o wide adds the sandbox), grace left/total while terminating, time in state (IN STATE), the pod's age (AGE), owning podctl process, last runtime error.

With -w/--watch: the table once, then one line per change of a pod (its state, READY or the grace in force; a pod that appears, or goes: state "gone"), as kubectl get -w, until Ctrl-C/SIGTERM (exit 0) or --watch-for passes. With -o json, one JSON object per line: {"type":"added"|"modified"|"deleted","at":ISO 8601,"pod":ROW}, ROW as in -o json (the first lines are the pods listed at start, as "added"). -o name prints the ns/name of each change. Ink is never loaded.

Without REF or -n, every namespace is shown. With --explain, for each named pod: every engine predicate (couldHaveRunningContainers, shouldPodContainersBeTerminating, …), what its worker is waiting for, the remaining grace, the last runtime error and next retry, and its timeline.

A pod that is not finishing is blocked by one named cause, with one next step (--explain, -o json "blockedBy", -o wide): grace, cni-teardown, uninterruptible-io, stale-shim, runtime-deadline, volume-busy, finalizer, kubelet-owns, undriven, runtime-error (docs/operator-guide.md, "Pods stuck in Terminating").

${exitCodesHelp([ExitCode.Done, ExitCode.Failure, ExitCode.Usage, ExitCode.NotFound, ExitCode.Interrupted])}`;

  static override examples = [
    { description: 'Every pod on the node:', command: '<%= config.bin %> <%= command.id %>' },
    { description: 'Why is this pod still terminating?', command: '<%= config.bin %> <%= command.id %> web/api-7c9d2 --explain' },
    { description: 'Pods labelled app=frontend in namespace web, with more columns:', command: '<%= config.bin %> <%= command.id %> -n web -l app=frontend -o wide' },
    { description: 'Everything as YAML:', command: '<%= config.bin %> <%= command.id %> -o yaml' },
    { description: 'Follow the pods of namespace web: the table, then one line per change (Ctrl-C ends it):', command: '<%= config.bin %> <%= command.id %> -n web -w' },
    { description: 'Changes as JSON lines for a script, for ten minutes:', command: '<%= config.bin %> <%= command.id %> -w -o json --watch-for 10m' },
  ];

  static override strict = false;
  protected override readOnlySession = true;
  static override args = {
    ref: Args.string({ description: 'Pods to show: ns/name, or name with -n (repeatable). Default: every pod.' }),
  };
  static override flags = {
    namespace: selectionFlags.namespace,
    'all-namespaces': Flags.boolean({ char: 'A', summary: 'Every namespace (the default without -n).', default: false }),
    uid: selectionFlags.uid,
    selector: selectionFlags.selector,
    'field-selector': selectionFlags['field-selector'],
    output: Flags.option({
      char: 'o',
      summary: 'Result format on stdout (name: one ns/name per line, as REFs are written).',
      options: ['table', 'wide', 'name', 'json', 'yaml'] as const,
      default: 'table' as const,
    })(),
    'no-headers': Flags.boolean({ summary: 'Tables without their header line (for scripts, as kubectl).', default: false }),
    'sort-by': Flags.option({ summary: 'Row order (default: namespace/name); age: oldest pod first, in-state: longest in its state first.', options: STATUS_SORT_KEYS })(),
    'show-labels': Flags.boolean({ summary: 'A LABELS column with every label of each pod (as kubectl).', default: false }),
    'label-columns': Flags.string({ char: 'L', summary: "One column per label key (repeatable, or comma-separated), as kubectl's -L.", multiple: true, helpValue: 'KEY' }),
    explain: Flags.boolean({ summary: 'For the named pods: predicates, what the worker waits for, last error, timeline.', default: false }),
    watch: Flags.boolean({
      char: 'w',
      summary: 'After the table, one line per change (state, READY, grace in force; pods added or gone) until Ctrl-C/SIGTERM (exit 0); -o json: one JSON object per line.',
      default: false,
    }),
    'watch-for': Flags.string({ summary: 'With -w: stop watching after DURATION (30s, 10m, 1h; exit 0).', helpValue: 'DURATION' }),
    ...kubeletFlags,
    'last-shutdown': Flags.boolean({
      summary: 'The report of the last shutdown the shutdown guard saw (podctl agent --shutdown-guard): per pod its group, grace and what became of it; needs no runtime.',
      default: false,
    }),
  };

  async run(): Promise<ReturnType<typeof statusJson> | LastShutdownJson | undefined> {
    const { argv, flags } = await this.parse(Status);
    this.configure(flags);
    if (flags['last-shutdown']) return this.#lastShutdown(flags['state-dir'], flags.output);
    // with no pods named, status shows every pod on the node
    const selection = selectionFromFlags(argv, flags, { defaultAllNamespaces: true, allowEmpty: true });
    if (flags.explain && selection.refs.length === 0) {
      throw new UsageError('--explain needs the pods to explain', 'name them: podctl status ns/name --explain (or --uid UID)');
    }
    const watchForMs = flags['watch-for'] === undefined ? undefined : parseDuration(flags['watch-for'], 'watch-for');
    if (watchForMs !== undefined && !flags.watch) throw new UsageError('--watch-for needs -w/--watch', 'add -w, or leave --watch-for out');
    if (flags.watch && (flags.explain || flags.output === 'yaml')) {
      throw new UsageError(`-w/--watch and ${flags.explain ? '--explain' : '-o yaml'} do not go together`, 'watch with -o table, wide, name or json');
    }
    if (flags.watch) {
      // following changes needs the session's event stream (a read-only session has none); ending on a signal is normal
      this.readOnlySession = false;
      this.jsonStream = this.jsonEnabled() || flags.output === 'json';
      this.interruptIsNormal = true;
      this.interruptMessage = 'stopping the watch';
    }
    const { session, api, apiPods, kubelet } = await this.#open(flags);
    const result = await podStatus({
      session,
      selection,
      explain: flags.explain,
      kubeletRoot: flags['kubelet-root'],
      signal: this.abort.signal,
      kubelet,
      ...(apiPods ? { apiPods } : {}),
    }).finally(() => api?.close());
    result.kubelet = await kubelet;
    if (!this.jsonEnabled() && flags.output !== 'json' && flags.output !== 'yaml') {
      this.logToStderr(kubeletHeader(result.kubelet));
      // guard-state.js, not the shutdown service's index: no prom-client on status's path
      const guard = await (await import('../services/shutdown/guard-state.js')).guardHeader(flags['state-dir']);
      if (guard) this.logToStderr(guard);
    }
    for (const ref of result.missing) this.reporter.warn(`pod not found: ${ref}`);
    if (flags['sort-by'] !== undefined) result.pods = sortStatusRows(result.pods, flags['sort-by']);
    const labelColumns = (flags['label-columns'] ?? [])
      .flatMap((v) => v.split(','))
      .map((k) => k.trim())
      .filter((k) => k !== '');
    if (flags.watch) {
      await this.#watch(result, selection, { ...flags, labelColumns, watchForMs });
      return undefined;
    }
    if (!this.jsonEnabled()) {
      if (flags.output === 'json' || flags.output === 'yaml') await this.printStructured(statusJson(result), flags.output);
      else if (flags.explain) this.log((result.explain ?? []).map((e) => explainText(e, this.styler, Date.now())).join('\n\n'));
      else if (result.pods.length === 0) this.logToStderr('no pods');
      else if (flags.output === 'name') this.log(result.pods.map((p) => `${p.namespace}/${p.name}`).join('\n'));
      else {
        const table = statusTable(result, flags.output === 'wide', this.styler, { showLabels: flags['show-labels'], labelColumns });
        this.log(await renderTable(table, this.styler, { noHeaders: flags['no-headers'] }));
      }
    }
    this.setExitCode(statusExitCode(result));
    return statusJson(result);
  }

  /**
   * The session, the API server (when configured: its pods of the node) and the kubelet check. The
   * kubelet check (healthz, then a synchronous /proc scan when refused) starts once the runtime has
   * been sent Version and the first relist, so it runs while the runtime answers them, neither
   * before the runtime is asked nor after its answer (or, with a runtime that does not say when it
   * is asked, once the session is open); it waits for the API client, whose node Lease it may read.
   * A failed open is reported after the API client's warnings.
   */
  async #open(flags: GlobalFlags & { 'kubelet-healthz'?: string | undefined }) {
    const { opening, asked } = this.openingSession();
    opening.catch(() => undefined);
    const apiNode = apiNodeFor(flags, this.reporter).catch((error: Error) => {
      this.reporter.warn(`${error.message}; going on without the API server`);
      return undefined;
    });
    const kubelet = asked.then(async () => kubeletStatusFor(flags['kubelet-healthz'], await apiNode));
    // awaited by the listing; a failed open (before the runtime was asked: no check) leaves it unread
    kubelet.catch(noop);
    const api = await apiNode;
    // bounded (5 s); lib/abortable.js loaded only then, off the start-up path
    const apiPods = api?.kube.listNodePods(await import('../lib/abortable.js').then(({ boundSignal }) => boundSignal(5_000))).catch((error: Error) => {
      this.reporter.warn(`cannot list the node's pods from the API server: ${error.message}`);
      return undefined;
    });
    const session = await opening.catch((error: unknown) => {
      api?.close();
      throw error;
    });
    return { session, api, apiPods, kubelet };
  }

  /** --last-shutdown: the last guarded shutdown's record, read from the state dir (no session, no runtime). */
  async #lastShutdown(stateDir: string, output: string): Promise<LastShutdownJson> {
    const { lastShutdown, lastShutdownText } = await import('../services/shutdown/index.js');
    const last = await lastShutdown(stateDir);
    for (const line of last.skipped) this.reporter.warn(`shutdown record skipped: ${line}`);
    if (!this.jsonEnabled()) {
      if (output === 'json' || output === 'yaml') await this.printStructured(last, output);
      else if (last.record) this.log(lastShutdownText(last));
      else this.logToStderr(`no guarded shutdown recorded in ${stateDir}`);
    }
    this.setExitCode(last.record ? ExitCode.Done : ExitCode.NotFound);
    return last;
  }

  /** -w: the first listing as a table (or JSON lines), then one line per change until the signal or --watch-for. */
  async #watch(
    result: StatusResult,
    selection: PodSelection,
    flags: { output: 'table' | 'wide' | 'name' | 'json' | 'yaml'; 'no-headers': boolean; 'show-labels': boolean; labelColumns: string[]; watchForMs: number | undefined },
  ): Promise<void> {
    // -o yaml was refused before the listing; --json is -o json
    const format = this.jsonEnabled() || (flags.output !== 'table' && flags.output !== 'wide' && flags.output !== 'name') ? 'json' : flags.output;
    const table = { showLabels: flags['show-labels'], labelColumns: flags.labelColumns, noHeaders: flags['no-headers'] };
    if (format === 'json') {
      for (const pod of result.pods) process.stdout.write(`${JSON.stringify({ type: 'added', at: result.generatedAt, pod })}\n`);
    } else if (format === 'name') {
      if (result.pods.length > 0) this.log(result.pods.map((p) => `${p.namespace}/${p.name}`).join('\n'));
    } else if (result.pods.length > 0 || !flags['no-headers']) {
      this.log(await renderTable(statusTable(result, format === 'wide', this.styler, table), this.styler, { noHeaders: flags['no-headers'] }));
    }
    const { watchStatus } = await import('../services/watch/status-watch.js');
    const { statusChangeLines } = await import('../services/watch/output.js');
    await watchStatus({
      session: await this.session(),
      selection,
      line: statusChangeLines({ format, initial: result.pods, styler: this.styler, table }),
      initial: result.pods,
      out: process.stdout,
      signal: this.abort.signal,
      ...(flags.watchForMs !== undefined ? { forMs: flags.watchForMs } : {}),
      facts: { ...NO_NODE_FACTS, kubeletRunning: result.kubelet?.state === 'running' },
    });
  }
}
