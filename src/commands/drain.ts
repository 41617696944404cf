/**
 * `podctl drain`: parse and validate, call the drain service, render. No logic of its own.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Flags } from '@oclif/core';
import type { NodeSession } from '../domain/session-api.js';
import { MAX_GRACE_SECONDS } from '../engine/grace.js';
import { apiNodeFor, kubeletFlags, kubeletStatusFor } from '../base/api-door.js';
import { globalFlagsOwnTimeout, nodeName, parseWaitBound, secondsFlag } from '../base/flags.js';
import { PodctlCommand } from '../base/command.js';
import { metricsTextfileFlags } from '../base/safety-flags.js';
import { UsageError } from '../lib/errors.js';
import { ExitCode, exitCodesHelp } from '../lib/exit-codes.js';
import { renderTable } from '../lib/output.js';
import { parseSelection } from '../lib/refs.js';
import { DEFAULT_CRITICAL_GRACE_SECONDS, DEFAULT_DRAIN_GRACE_SECONDS, defaultGroups, parseExcludes, parseGroups } from '../services/drain/drain-plan.js';
import type { ApiFollowReport } from '../services/api/api-follow.js';
import type { FullDrainResult } from '../services/drain/drain-run.js';
import type { TerminatedPod } from '../services/terminate/terminate.js';
import type { ShutdownStatusReport } from '../services/drain/shutdown-status.js';
import { drainJson } from '../base/json-results.js';
import { drainExitCode, drainPodsToHandOff, type DrainResult } from '../services/drain/drain.js';
import { drainNextStep, drainSummaryLine, drainTable } from '../services/drain/output.js';

export default class Drain extends PodctlCommand {
  static override summary = "Terminate every pod on the node in priority groups, as the kubelet's graceful node shutdown does.";
  static override description = `Pods are grouped by priority, lowest first; critical pods (static, mirror, or priority ≥ 2000000000) always go last. Each group gets a time budget; its pods are killed with grace = min(group budget, the pod's own grace), and the next group starts when the group's pods are gone or its budget is spent. Pods still terminating then get until their killPodNow bound.

Budgets: --grace-period is the whole shutdown budget and --critical-grace-period the critical pods' share of it (the kubelet's shutdownGracePeriod and shutdownGracePeriodCriticalPods), or give explicit groups with repeatable --group PRIORITY:SECONDS (the kubelet's shutdownGracePeriodByPodPriority).

Beside a running kubelet with an API server (--kubeconfig) the drain is kubectl drain's: every pod gets a verdict from its filters — static (mirror) and DaemonSet pods are skipped, pods already Succeeded or Failed have nothing to evict, pods with emptyDir volumes and pods no controller recreates refuse the whole drain (naming them) unless --delete-emptydir-data (or the pod's cluster-autoscaler.kubernetes.io/safe-to-evict: "true") and --delete-unmanaged consent — then the node is cordoned and the pods are evicted through the API (PodDisruptionBudgets retried every 5s up to --timeout; no bound without it), and the kubelet stops them. Over CRI podctl then stops only an evicted pod the kubelet left past its deletion plus 10s, and runtime pods the API server does not have by the orphan rule. With the kubelet down (or without an API server, or with --force) it is the node-local drain over CRI; when it would stop static or system-critical pods it asks on a terminal, and without one it refuses (exit 2) before anything is stopped unless --yes is given.

--dry-run prints the plan (every pod with its verdict) and changes nothing. The result (stdout) is a per-pod summary; --json gives it as JSON for scripts.

${exitCodesHelp([ExitCode.Done, ExitCode.Failure, ExitCode.Usage, ExitCode.TimedOut, ExitCode.Partial, ExitCode.Interrupted])}`;

  static override examples = [
    { description: 'Show the plan for the default budgets (30s, of which 10s for critical pods):', command: '<%= config.bin %> <%= command.id %> --dry-run' },
    {
      description: 'Drain with a 60 second budget, 20 of them for critical pods, as JSON (a script: --yes consents to stopping static and system-critical pods):',
      command: '<%= config.bin %> <%= command.id %> --grace-period 60 --critical-grace-period 20 --yes --json',
    },
    {
      description: 'Drain by priority groups, leaving kube-system alone:',
      command: '<%= config.bin %> <%= command.id %> --group 0:20 --group 10000:30 --group 2000000000:10 --exclude "kube-system/*"',
    },
    { description: 'Drain only the pods labelled tier=batch, bounded to 2 minutes:', command: '<%= config.bin %> <%= command.id %> -l tier=batch --timeout 2m' },
  ];

  // --timeout is the wait here; the request deadline is --request-timeout only
  static override baseFlags = globalFlagsOwnTimeout;

  static override flags = {
    ...metricsTextfileFlags,
    'grace-period': secondsFlag({
      summary: `Whole drain budget, critical pods' share included: seconds or a duration (default ${DEFAULT_DRAIN_GRACE_SECONDS}; maximum ${MAX_GRACE_SECONDS}s).`,
      flag: 'grace-period',
    }),
    'critical-grace-period': secondsFlag({
      summary: `The budget's share reserved for critical pods: seconds or a duration (default ${DEFAULT_CRITICAL_GRACE_SECONDS}).`,
      flag: 'critical-grace-period',
    }),
    group: Flags.string({
      summary: 'A priority group PRIORITY:SECONDS (repeatable); replaces --grace-period/--critical-grace-period.',
      multiple: true,
      helpValue: 'PRIORITY:SECONDS',
    }),
    selector: Flags.string({ char: 'l', summary: 'Drain only pods matching this label selector (key=value,…).' }),
    exclude: Flags.string({ summary: 'Leave a pod alone: ns/name, ns/* or a UID (repeatable).', multiple: true, helpValue: 'POD' }),
    'dry-run': Flags.boolean({ summary: 'Print the plan (groups, order, grace per pod) and change nothing.', default: false }),
    yes: Flags.boolean({
      char: 'y',
      summary: 'Answer yes to the confirmation of a drain over CRI that stops static or system-critical pods.',
      description: 'Without a terminal podctl cannot ask, so such a drain is refused (exit 2) before anything is stopped unless --yes is given.',
      default: false,
    }),
    timeout: Flags.string({
      summary: 'Bound of the whole drain (default: every group budget plus the longest killPodNow bound).',
      helpValue: 'DURATION',
    }),
    output: Flags.option({ char: 'o', summary: 'Result format on stdout.', options: ['table', 'json', 'yaml'] as const, default: 'table' as const })(),
    force: Flags.boolean({ summary: 'Beside a running kubelet: stop the pods it desires over CRI too (it may start them again) instead of refusing without an API server.', default: false }),
    'delete-emptydir-data': Flags.boolean({
      summary: "Beside a running kubelet: evict pods with emptyDir volumes (their data is lost) instead of refusing the drain (kubectl drain's flag).",
      default: false,
    }),
    'delete-unmanaged': Flags.boolean({
      summary: "Beside a running kubelet: evict pods no controller recreates (lost for good) instead of refusing the drain (kubectl drain's --force).",
      default: false,
    }),
    'ignore-pdb': Flags.boolean({ summary: 'Beside a running kubelet: delete instead of the Eviction API, so PodDisruptionBudgets do not hold pods back.', default: false }),
    ...kubeletFlags,
    report: Flags.string({
      summary: "Also write the drain's report to FILE: one self-contained HTML page of where its time went (podctl report draws it again later).",
      helpValue: 'FILE',
    }),
    'shutdown-status': Flags.boolean({
      summary: "Set the kubelet's node-shutdown status (Failed, reason Terminated, DisruptionTarget) on the pods the drain stopped; needs an API server.",
      default: false,
    }),
  };

  async run(): Promise<ReturnType<typeof drainJson<FullDrainResult & { shutdownStatus?: ShutdownStatusReport; apiServer?: ApiFollowReport }>>> {
    const { flags } = await this.parse(Drain);
    this.configure(flags);
    await this.recordMetricsTo(flags['metrics-textfile']);
    const explicitBudgets = flags['grace-period'] !== undefined || flags['critical-grace-period'] !== undefined;
    if (flags.group && explicitBudgets) {
      throw new UsageError('--group cannot be combined with --grace-period/--critical-grace-period', 'give either priority groups or the two budgets');
    }
    const groups = flags.group ? parseGroups(flags.group) : defaultGroups(flags['grace-period'] ?? DEFAULT_DRAIN_GRACE_SECONDS, flags['critical-grace-period'] ?? DEFAULT_CRITICAL_GRACE_SECONDS);
    const selection = parseSelection({ args: [], selector: flags.selector, allNamespaces: true, allowEmpty: true });
    const isExcluded = flags.exclude ? parseExcludes(flags.exclude) : undefined;
    // a bound of nothing starts nothing and ends "timed out": refused before anything is read
    const timeoutMs = flags.timeout === undefined ? undefined : parseWaitBound(flags.timeout);
    const { confirm } = this.safetyOptions({ 'dry-run': flags['dry-run'], yes: flags.yes });
    const api = await apiNodeFor(flags, this.reporter);
    if (flags['shutdown-status'] && !api) throw new UsageError('--shutdown-status needs an API server', 'pass --kubeconfig FILE or set KUBECONFIG');
    const kubeletCheck = kubeletStatusFor(flags['kubelet-healthz'], api);
    const session = await this.session();
    if (api && !flags['dry-run']) await (await import('../services/api/api-node.js')).replayPendingApiWrites(api, session);
    const kubelet = await kubeletCheck;
    // with the kubelet down and an API server, pods deleted there during the drain are killed with their (shorter) grace and
    // finished; beside a running kubelet that is the kubelet's to do
    const follower =
      api && !flags['dry-run'] && kubelet.state === 'down' ? new (await import('../services/api/api-follow.js')).ApiFollower({ session, api, act: true, reporter: this.reporter }) : undefined;
    follower?.start();
    const { runDrain } = await import('../services/drain/drain-run.js');
    const drainStartedAt = Date.now();
    const drained = await runDrain({
      session,
      selection,
      groups,
      ...(isExcluded ? { isExcluded } : {}),
      kubelet,
      api,
      force: flags.force,
      ignorePdb: flags['ignore-pdb'],
      consent: { deleteEmptyDirData: flags['delete-emptydir-data'], deleteUnmanaged: flags['delete-unmanaged'] },
      dryRun: flags['dry-run'],
      gate: { yes: flags.yes, ...(confirm ? { confirm } : {}) },
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      node: nodeName(flags.node),
      reporter: this.reporter,
      signal: this.abort.signal,
    }).catch(async (error: unknown) => {
      await follower?.stop().catch(() => undefined);
      api?.close();
      throw error;
    });
    const drainEndedAt = Date.now();
    const apiServer = follower ? await follower.stop() : undefined;
    // an --exclude that matched no pod is almost always a typo: said, not silently accepted
    for (const value of isExcluded?.unmatched() ?? []) this.reporter.warn(`--exclude ${value} matches no pod on this node`);
    const result: FullDrainResult & { shutdownStatus?: ShutdownStatusReport; apiServer?: ApiFollowReport } = {
      ...drained,
      ...(apiServer ? { apiServer } : {}),
      ...(api && flags['shutdown-status'] && !drained.dryRun ? { shutdownStatus: await (await import('../services/drain/shutdown-status.js')).reportShutdownStatus(api, drained, this.reporter) } : {}),
    };
    api?.close();
    if (!drained.dryRun) await this.#report(flags.report, { session, result: drained, startedAt: drainStartedAt, endedAt: drainEndedAt, viaApi: drained.viaApi, node: nodeName(flags.node) });
    // pods still terminating (bound reached, or interrupted) keep being driven after this process
    await this.handOffUnfinished('drain', result, drainPodsToHandOff(result));
    if (!this.jsonEnabled()) {
      if (flags.output === 'json' || flags.output === 'yaml') await this.printStructured(drainJson(result), flags.output);
      else if (result.groups.length > 0 || result.skipped.length > 0 || result.decisions.length > 0) this.log(await renderTable(drainTable(result, this.styler), this.styler));
      this.logToStderr(drainSummaryLine(result));
    }
    const next = result.dryRun ? undefined : drainNextStep(result);
    if (next !== undefined) this.reporter.warn(next);
    const refused = result.decisions.filter((d) => d.decision === 'refuse');
    if (result.dryRun && refused.length > 0) {
      // the plan shows every verdict; the drain itself would refuse to start (exit 2), as said here
      this.reporter.warn(`drain would refuse to start: ${refused.map((d) => `${d.namespace}/${d.name} (${d.reason})`).join(', ')}; consent with --delete-emptydir-data / --delete-unmanaged`);
      this.setExitCode(ExitCode.Usage);
    } else this.setExitCode(drainExitCode(result));
    return drainJson(result);
  }

  /** Keeps the drain's report in the state dir and, with --report, writes its page. */
  async #report(file: string | undefined, input: { session: NodeSession; result: DrainResult; startedAt: number; endedAt: number; viaApi: TerminatedPod[]; node: string }): Promise<void> {
    const { recordDrainReport } = await import('../services/drain/report/report.js');
    const { report } = await recordDrainReport({ ...input, source: 'drain', onError: (message) => this.reporter.warn(message) });
    if (file === undefined) return;
    const { renderReportHtml } = await import('../services/drain/report/html.js');
    try {
      await writeFile(file, renderReportHtml(report));
      this.reporter.info(`drain: report written to ${path.resolve(file)}`);
    } catch (error) {
      this.reporter.warn(`--report ${file}: ${(error as Error).message}`);
    }
  }
}
