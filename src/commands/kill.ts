/**
 * `podctl kill`: parse and validate, call the kill service, render. No logic of its own.
 */
import { Args } from '@oclif/core';
import { PodctlCommand } from '../lib/command.js';
import { ExitCode, exitCodesHelp } from '../lib/exit-codes.js';
import { selectionFlags, terminationFlags, terminationOptionsFromFlags } from '../lib/flags.js';
import { driverFlags, safetyFlags } from '../lib/safety-flags.js';
import { renderTable } from '../lib/output.js';
import { selectionFromFlags } from '../lib/refs.js';
import { killPods, type KillResult } from '../services/kill.js';
import { terminateExitCode, terminateSummary, terminateTable } from '../services/terminate.js';

export default class Kill extends PodctlCommand {
  static override summary = 'Terminate pods with the kubelet\'s grace semantics and wait for them.';
  static override description = `Each pod is driven by a pod worker exactly as the kubelet would: preStop hooks, then its containers are stopped within the grace period, then its sandbox. A grace given with --grace only ever shortens the pod's grace; a second kill with a shorter grace shortens a kill already in flight (even one driven by another podctl process).

podctl waits until the pods are terminated, showing progress on stderr, for at most --timeout (default: the kubelet's killPodNow bound, max(10s, 1.5 × grace)). When the wait times out the termination goes on in the background; see \`podctl status REF --explain\`.

REF is ns/name, or name with -n (namespace "default" when omitted).

${exitCodesHelp([ExitCode.Done, ExitCode.Failure, ExitCode.Usage, ExitCode.TimedOut, ExitCode.NotFound, ExitCode.Interrupted])}`;

  static override examples = [
    { description: 'Kill one pod with its own grace period:', command: '<%= config.bin %> <%= command.id %> web/frontend-1a2b3' },
    { description: 'Shorten the grace to 5 seconds and wait at most 20 seconds:', command: '<%= config.bin %> <%= command.id %> frontend-1a2b3 -n web --grace 5 --timeout 20s' },
    { description: 'Kill every pod labelled app=api in namespace web, without waiting:', command: '<%= config.bin %> <%= command.id %> -n web -l app=api --no-wait' },
    { description: 'Kill by UID and read the result as JSON:', command: '<%= config.bin %> <%= command.id %> --uid 0b6f4c1e-… --json' },
  ];

  static override strict = false;
  static override args = {
    ref: Args.string({ description: 'Pods to kill: ns/name, or name with -n (repeatable).' }),
  };
  static override flags = { ...selectionFlags, ...terminationFlags, ...safetyFlags, ...driverFlags };
  /** Exit codes are asked for only where the session decides by them (SessionOptions.exitDetails). */
  protected override exitDetails = 'driven' as const;

  async run(): Promise<KillResult> {
    const { argv, flags } = await this.parse(Kill);
    this.configure(flags);
    const selection = selectionFromFlags(argv, flags);
    const termination = terminationOptionsFromFlags(flags);
    await this.waitForHandingProcess(flags['after-pid']);
    const result = await killPods({
      session: await this.session(),
      selection,
      ...termination,
      ...this.safetyOptions(flags),
      ...(flags.drive ? { unbounded: true } : {}),
      reporter: this.reporter,
      signal: this.abort.signal,
    });
    const { podsToHandOff } = await import('../services/terminate.js');
    await this.handOffUnfinished(result.action, result, podsToHandOff(result));
    if (!this.jsonEnabled()) {
      this.log(await renderTable(terminateTable(result, this.styler), this.styler));
      this.logToStderr(terminateSummary(result));
    }
    this.setExitCode(terminateExitCode(result));
    return result;
  }
}
