/**
 * `podctl watch`: the node's pod workers live. On a terminal, an Ink screen with actions (kill, evict,
 * shorten a grace); otherwise (stdout not a terminal, `--json` or `-o json`) one JSON object per line
 * for scripts. A thin door to `services/watch/watch.ts`; Ink is loaded by the service, only for the screen.
 */
import { Errors, Flags } from '@oclif/core';
import { apiNodeFor, kubeletFlags, kubeletStatusFor } from '../base/api-door.js';
import { PodctlCommand } from '../base/command.js';
import { UsageError } from '../lib/errors.js';
import { ExitCode, exitCodesHelp } from '../lib/exit-codes.js';
import { nodeName } from '../base/flags.js';
import { tierUpLikeAFollower } from '../base/tier-up.js';
import type { LogLevel, SessionOptions } from '../domain/session-api.js';
import type { WatchFormat, WatchResult } from '../services/watch/watch.js';
import type { WatchFeed } from '../services/watch/watch-feed.js';

export default class Watch extends PodctlCommand {
  static override summary = "Follow the node's pods live: a screen with actions, or a JSON stream for scripts.";

  static override description = `On a terminal: a header with the node, the runtime endpoint and the working-pods breakdown (sync / terminating / terminated, desired / orphan / runtime-only), the pod table (state, grace countdown, containers running/total, time in state, owner PID, last error) and the latest events. Keys: ↑/↓ or j/k select, ⏎ or d the selected pod's --explain view, ctrl-k kill (asks the grace, then confirmation), e evict, g shorten a terminating pod's grace, / filter, s sort, ? help, q quit. -n and -l show only some pods; a banner says when the runtime stops answering. Kills go through the same session as \`podctl kill\`: a pod another podctl process drives is handed to that process.

When stdout is not a terminal, or with --json / -o json: one JSON object per line — a "pod" record per pod at start, then "transition" records (any process's) and "event" records (errors, warnings, grace changes) — until SIGINT/SIGTERM or the reader goes away. See docs/watch.md for the record fields.

${exitCodesHelp([ExitCode.Done, ExitCode.Failure, ExitCode.Usage])}`;

  static override examples = [
    { description: 'Watch the node on the terminal.', command: '<%= config.bin %> watch' },
    { description: "Only the control plane's pods.", command: '<%= config.bin %> watch -n kube-system' },
    { description: 'Only the pods of one app, in every namespace.', command: '<%= config.bin %> watch -A -l app=web' },
    { description: 'Stream transitions to a script.', command: '<%= config.bin %> watch -o json | jq -c \'select(.type=="transition")\'' },
    {
      description: 'Watch the embedded simulator and keep the metrics when done.',
      command: '<%= config.bin %> watch --runtime-endpoint unix:///tmp/sim.sock --state-dir /tmp/podctl --metrics-file /tmp/podctl.prom',
    },
  ];

  static override flags = {
    output: Flags.option({
      char: 'o',
      summary: 'json: stream JSON lines instead of the screen (the default when stdout is not a terminal).',
      options: ['json'] as const,
    })(),
    namespace: Flags.string({
      char: 'n',
      summary: 'Only the pods of this namespace (default: every namespace, as -A).',
      helpValue: 'NAMESPACE',
    }),
    'all-namespaces': Flags.boolean({
      char: 'A',
      summary: "Pods of every namespace (the default; as kubectl's -A, so scripts can say it).",
      default: false,
      exclusive: ['namespace'],
    }),
    selector: Flags.string({
      char: 'l',
      summary: 'Only the pods whose labels match: key=value, key!=value, key in (a,b), key notin (a,b), key, !key; comma-separated.',
      helpValue: 'SELECTOR',
    }),
    ...kubeletFlags,
    'metrics-file': Flags.string({
      summary: 'Write the Prometheus text exposition (podctl_working_pods, transitions, …) to FILE on exit.',
      helpValue: 'FILE',
    }),
  };

  protected override interruptMessage = 'stopping the watch';
  protected override interruptIsNormal = true;
  /**
   * Exit codes are asked for only where this session decides by them (pods killed from the screen):
   * the screen and the stream show no exit codes (as `status`), and a drain followed by a watch
   * would otherwise cost one ContainerStatus call per exited container twice over.
   */
  protected override exitDetails = 'driven' as const;

  /** Log lines of the session while the screen is up go to its events pane, not over it. */
  #screenLog: { feed?: WatchFeed; pending: { level: LogLevel; message: string }[] } | undefined;

  /** The runtime relist bound of a watch (services/watch/watch.ts), loaded with the service before the session opens. */
  #eventRelistIntervalMs: ((pods: number) => number) | undefined;

  protected override sessionOptions(): SessionOptions {
    // the runtime's events keep the watch's listing current (cri/cache/cache.ts): a drain's thousands of
    // container events change the pods they name instead of starting relists of the whole node
    const options: SessionOptions = { ...super.sessionOptions(), runtimeEventPatches: true, ...(this.#eventRelistIntervalMs ? { eventRelistIntervalMs: this.#eventRelistIntervalMs } : {}) };
    const screen = this.#screenLog;
    if (screen === undefined) return options;
    return {
      ...options,
      log: (level, message) => {
        if (level === 'debug' || level === 'info') return;
        if (screen.feed === undefined) screen.pending.push({ level, message });
        else screen.feed.note({ source: 'session', level, kind: 'log', detail: message });
      },
    };
  }

  /**
   * The JSON stream's readers get its errors in the stream too (with --json as well): one
   * `{"type":"error",…}` line on stdout (as the records before it), besides the usual one line on
   * stderr and the exit code.
   */
  override async catch(error: Error & { exitCode?: number }): Promise<unknown> {
    // decided from argv too: the error may come before the flags are parsed
    const streaming =
      this.jsonEnabled() ||
      process.stdout.isTTY !== true ||
      this.argv.some((a, i) => (a === '-o' || a === '--output') && this.argv[i + 1] === 'json') ||
      this.argv.includes('-ojson') ||
      this.argv.includes('--output=json');
    if (streaming && !(error instanceof Errors.ExitError)) this.jsonStream = true;
    return super.catch(error);
  }

  async run(): Promise<WatchResult | undefined> {
    const { flags } = await this.parse(Watch);
    this.configure(flags);
    const format: WatchFormat = this.jsonEnabled() || flags.output === 'json' || process.stdout.isTTY !== true ? 'json' : 'tui';
    if (format === 'tui') this.#screenLog = { pending: [] };
    if (flags['metrics-file'] !== undefined) {
      const { metricsFileProblem } = await import('../metrics/registry.js');
      const problem = await metricsFileProblem(flags['metrics-file']);
      if (problem) throw new UsageError(`--metrics-file: ${problem}`, 'point it into an existing directory');
    }
    if (flags.namespace !== undefined && flags.namespace.trim() === '') throw new UsageError('-n/--namespace: empty namespace', 'name one, or leave -n out to watch every namespace');
    const { parseSelector } = await import('../lib/selector.js');
    const scope = {
      ...(flags.namespace !== undefined ? { namespace: flags.namespace.trim() } : {}),
      ...(flags.selector !== undefined ? { selector: parseSelector(flags.selector) } : {}),
    };
    const kubeletCheck = kubeletStatusFor(flags['kubelet-healthz'], undefined);
    const { runWatch, watchRuntimeMaxAgeMs } = await import('../services/watch/watch.js');
    // a follower's work comes in bursts: V8 need not optimize what a burst made warm (base/tier-up.ts)
    tierUpLikeAFollower();
    // runtime events start relists no more often than the watch's own re-reads accept them
    this.#eventRelistIntervalMs = watchRuntimeMaxAgeMs;
    const session = await this.session();
    // with an API server, this node's pods there are followed (list + watch) and their deletions shown
    const api = await apiNodeFor(flags, this.reporter).catch(() => undefined);
    let feedRef: WatchFeed | undefined;
    const follower = api
      ? new (await import('../services/api/api-follow.js')).ApiFollower({
          session,
          api,
          act: false,
          onNote: (level, detail) => feedRef?.note({ source: 'session', level, kind: 'api-server', detail }),
        })
      : undefined;
    follower?.start();
    const PodSpecs = follower ? (await import('../services/api/pod-specs.js')).PodSpecs : undefined;
    const result = await runWatch(session, {
      format,
      signal: this.abort.signal,
      stdout: process.stdout,
      stdin: process.stdin,
      stderr: process.stderr,
      node: nodeName(flags.node),
      kubelet: await kubeletCheck,
      kubeletRoot: flags['kubelet-root'],
      // a kill from the screen hands the pod as the API server holds it (the follower's copy)
      ...(follower && PodSpecs ? { apiPod: (uid: string) => new PodSpecs(follower.source.pods()).of(uid) } : {}),
      scope,
      color: this.styler.enabled,
      ...(flags['metrics-file'] !== undefined ? { metricsFile: flags['metrics-file'] } : {}),
      screen: async (options) => (await import('../tui/index.js')).renderWatch(options),
      onFeed: (feed) => {
        feedRef = feed;
        const screen = this.#screenLog;
        if (screen === undefined) return;
        screen.feed = feed;
        for (const line of screen.pending.splice(0)) feed.note({ source: 'session', level: line.level === 'error' ? 'error' : 'warn', kind: 'log', detail: line.message });
      },
    }).finally(() => follower?.stop());
    // The JSON stream is the output; a final pretty-printed object would break one-object-per-line.
    return format === 'json' ? undefined : result;
  }
}
