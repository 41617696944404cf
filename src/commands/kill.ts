/**
 * `podctl kill`: parse and validate, call the kill service, render. No logic of its own.
 */
import { Flags } from '@oclif/core';
import { apiNodeFor, kubeletFlags, kubeletStatusFor } from '../base/api-door.js';
import { UsageError } from '../lib/errors.js';
import { ExitCode, exitCodesHelp } from '../lib/exit-codes.js';
import { terminationOptionsFromFlags } from '../base/flags.js';
import { driverFlags, safetyFlags } from '../base/safety-flags.js';
import { selectionFromFlags } from '../lib/refs.js';
import { prepareSha256 } from '../lib/sha256.js';
import type { Persist } from '../services/terminate/drive.js';
import { killPods, type KillResult } from '../services/terminate/kill.js';
import type { terminateJson } from '../base/json-results.js';
import { podRefArgs, TerminateCommand, terminateCommandFlags } from '../base/terminate-command.js';

const noop = (): void => undefined;

export default class Kill extends TerminateCommand {
  static override summary = "Terminate pods with the kubelet's grace semantics and wait for them.";
  static override description = `Each pod is driven by a pod worker exactly as the kubelet would: preStop hooks, then its containers are stopped within the grace period, then its sandbox. A grace given with --grace only ever shortens the pod's grace; a second kill with a shorter grace shortens a kill already in flight (even one driven by another podctl process).

podctl waits until the pods are terminated, showing progress on stderr, for at most --timeout (default: the kubelet's killPodNow bound, max(10s, 1.5 × grace)). When the wait times out the termination goes on in the background; see \`podctl status REF --explain\`.

REF is ns/name, or name with -n (namespace "default" when omitted).

Beside a running kubelet (its healthz answers, or a kubelet process exists), a pod it still desires (bound to this node in the API server, or a static pod; a pod it took from the API server counts while no API server answers) would be started again over CRI: with an API server (--kubeconfig, $KUBECONFIG, in-cluster) the kill is a delete through it with the grace, and podctl waits (bounded) for the kubelet to finish the pod; without one it is refused (exit 2); --force kills over CRI anyway, and the kubelet may start the pod again. Static pods cannot be stopped through the API: refused unless --force. A pod already being deleted in the API server while the kubelet runs is the kubelet's: left to it (a shorter --grace is asked for by a delete through the API), never stopped over CRI.

With an API server, every pod stopped over CRI is stopped with its spec as the API server holds it: restartable init containers (sidecars) after the main containers, in reverse order, and every preStop hook (exec, httpGet, sleep). Without one, podctl has what the kubelet recorded in the runtime (each container's preStop hook, not which containers are sidecars): the stop is parallel, and the result says so (ordering: parallel, no pod spec).

${exitCodesHelp([ExitCode.Done, ExitCode.Failure, ExitCode.Usage, ExitCode.TimedOut, ExitCode.NotFound, ExitCode.Interrupted])}`;

  static override examples = [
    { description: 'Kill one pod with its own grace period:', command: '<%= config.bin %> <%= command.id %> web/frontend-1a2b3' },
    { description: 'Shorten the grace to 5 seconds and wait at most 20 seconds:', command: '<%= config.bin %> <%= command.id %> frontend-1a2b3 -n web --grace 5 --timeout 20s' },
    { description: 'Kill every pod labelled app=api in namespace web, without waiting:', command: '<%= config.bin %> <%= command.id %> -n web -l app=api --no-wait' },
    { description: 'Kill by UID and read the result as JSON:', command: '<%= config.bin %> <%= command.id %> --uid 0b6f4c1e-… --json' },
  ];

  static override strict = false;
  static override args = podRefArgs('kill');
  static override flags = {
    ...terminateCommandFlags,
    ...safetyFlags,
    ...driverFlags,
    ...kubeletFlags,
    force: Flags.boolean({ summary: 'Kill over CRI even pods a running kubelet still desires (it may start them again).', default: false }),
    'via-api': Flags.boolean({ summary: 'Go through the API server for the pods a running kubelet desires (the default whenever an API server is configured); an error without one.', default: false }),
  };

  async run(): Promise<ReturnType<typeof terminateJson<KillResult>>> {
    const { argv, flags } = await this.parse(Kill);
    // the write-ahead checkpoint's checksum: its module compiled off the main thread meanwhile
    if (!flags['dry-run']) prepareSha256();
    if (flags.drive) {
      this.backgroundDriver = true;
      this.interruptMessage = 'stopping; the pods this driver drives go to the agent serving the state dir, if one runs, else they are left undriven';
    }
    this.configure(flags);
    await this.recordMetricsTo(flags['metrics-textfile']);
    const selection = selectionFromFlags(argv, flags);
    const termination = terminationOptionsFromFlags(flags);
    await this.waitForHandingProcess(flags['after-pid']);
    if (flags.force && flags['via-api']) throw new UsageError('--force and --via-api are mutually exclusive', 'choose CRI (--force) or the API server (--via-api)');
    const api = await apiNodeFor(flags, this.reporter).catch((error: Error) => {
      if (flags['via-api']) throw error;
      this.reporter.warn(`${error.message}; going on without the API server`);
      return undefined;
    });
    if (flags['via-api'] && !api) throw new UsageError('--via-api needs an API server', 'pass --kubeconfig FILE or set KUBECONFIG');
    const safety = this.safetyOptions(flags);
    // the background driver waits out a runtime that is away (services/terminate/drive.ts); a kill does not
    const persist: Persist = flags.drive
      ? (await import('../services/terminate/drive.js')).driverPatience({ stateDir: flags['state-dir'], uids: flags.uid ?? [], reporter: this.reporter, signal: this.abort.signal })
      : (_what, attempt) => attempt();
    // the kubelet check (healthz, then a synchronous /proc scan when refused) starts once the runtime
    // has been sent Version and the first relist (or once the session is open, with a runtime that
    // does not say when it is asked), so it runs while the runtime answers them, neither delaying
    // the connection nor waiting for the answers; awaited before any stop
    const { opening, asked } = this.openingSession(() => persist('opening the session', () => this.session()));
    const kubeletCheck = asked.then(() => kubeletStatusFor(flags['kubelet-healthz'], api));
    // a failed open (before the runtime was asked: no check) leaves it unread
    kubeletCheck.catch(noop);
    const session = await opening;
    if (api && !flags['dry-run']) await (await import('../services/api/api-node.js')).replayPendingApiWrites(api, session);
    const kubelet = await kubeletCheck;
    // a fresh listing the kill's own lookups (≤ 1 s old) reuse: the runtime answered just before
    if (flags.drive) await persist("listing the runtime's pods", () => session.listPods({ scope: 'runtime', runtimeMaxAgeMs: 0, signal: this.abort.signal }));
    const result = await persist('driving the pods', () =>
      killPods({
        session,
        selection,
        ...termination,
        ...safety,
        ...(flags.drive ? { unbounded: true } : {}),
        // a background driver carries on what its caller decided (it hands nothing beside a kubelet to CRI by itself)
        kubelet: { kubelet, api, force: flags.force || flags.drive, viaApi: flags['via-api'] },
        reporter: this.reporter,
        signal: this.abort.signal,
      }),
    ).finally(() => api?.close());
    return this.finish(result);
  }
}
