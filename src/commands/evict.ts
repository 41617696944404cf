/**
 * `podctl evict`: parse and validate, call the evict service, render. No logic of its own.
 */
import { Flags } from '@oclif/core';
import { apiNodeFor, kubeletFlags, kubeletStatusFor } from '../base/api-door.js';
import { UsageError } from '../lib/errors.js';
import { ExitCode, exitCodesHelp } from '../lib/exit-codes.js';
import { terminationOptionsFromFlags } from '../base/flags.js';
import { safetyFlags } from '../base/safety-flags.js';
import { selectionFromFlags } from '../lib/refs.js';
import { DEFAULT_EVICTION_REASON, evictPods, type EvictResult } from '../services/terminate/evict.js';
import { replayPendingApiWrites } from '../services/api/api-node.js';
import type { terminateJson } from '../base/json-results.js';
import { podRefArgs, TerminateCommand, terminateCommandFlags } from '../base/terminate-command.js';

export default class Evict extends TerminateCommand {
  static override summary = 'Evict pods: a kill whose stopped containers and sandboxes are then removed.';
  static override description = `Like \`podctl kill\`, with eviction semantics: once the pod is terminated its containers and sandboxes are removed from the runtime. With an API server (--kubeconfig, $KUBECONFIG or in-cluster), podctl also posts a Warning Event with --reason/--message and sets the pod's status to phase Failed, reason Evicted, as the kubelet's eviction manager does.

Waiting, --grace and --timeout work as for kill. Beside a running kubelet (see "podctl and the kubelet" in the operator guide) the pods it desires go through the Eviction API instead, honouring PodDisruptionBudgets (a pod a budget holds back within the wait is reported blocked-by-pdb; --ignore-pdb deletes it instead); without an API server they are refused unless --force.

${exitCodesHelp([ExitCode.Done, ExitCode.Failure, ExitCode.Usage, ExitCode.TimedOut, ExitCode.NotFound, ExitCode.Interrupted])}`;

  static override examples = [
    { description: 'Evict a pod with a reason recorded in its Event:', command: '<%= config.bin %> <%= command.id %> batch/report-7f3c1 --reason DiskPressure --message "node is low on disk"' },
    { description: 'Evict all pods of namespace batch with a 10 second grace:', command: '<%= config.bin %> <%= command.id %> -n batch --all --grace 10' },
  ];

  static override strict = false;
  static override args = podRefArgs('evict');
  static override flags = {
    ...terminateCommandFlags,
    reason: Flags.string({
      summary: `Why the pod is evicted (e.g. DiskPressure): leads the message; the status and Event reason stay ${DEFAULT_EVICTION_REASON}, as the kubelet writes them.`,
      helpValue: 'REASON',
    }),
    message: Flags.string({ summary: 'Human-readable eviction message for the Event, the pod status and its DisruptionTarget condition.', helpValue: 'TEXT' }),
    ...safetyFlags,
    force: Flags.boolean({
      summary: 'Evict static and system-critical pods too (refused by default, as the kubelet does), and beside a running kubelet stop the pods it desires over CRI (it may start them again).',
      default: false,
    }),
    'ignore-pdb': Flags.boolean({ summary: 'Beside a running kubelet: delete instead of the Eviction API, so PodDisruptionBudgets do not hold the eviction back.', default: false }),
    ...kubeletFlags,
  };

  async run(): Promise<ReturnType<typeof terminateJson<EvictResult>>> {
    const { argv, flags } = await this.parse(Evict);
    this.configure(flags);
    await this.recordMetricsTo(flags['metrics-textfile']);
    const selection = selectionFromFlags(argv, flags);
    const termination = terminationOptionsFromFlags(flags);
    if (flags.reason !== undefined && !/^[A-Za-z][A-Za-z0-9]*$/.test(flags.reason)) {
      throw new UsageError(`--reason "${flags.reason}" is not a CamelCase reason`, 'e.g. --reason DiskPressure');
    }
    const safety = this.safetyOptions(flags);
    const api = await apiNodeFor(flags, this.reporter);
    const kubeletCheck = kubeletStatusFor(flags['kubelet-healthz'], api);
    const kube = api?.evictionReporter();
    const session = await this.session();
    if (api && !flags['dry-run']) await replayPendingApiWrites(api, session);
    const result = await evictPods({
      session,
      selection,
      ...termination,
      ...(flags.reason !== undefined ? { reason: flags.reason } : {}),
      ...(flags.message !== undefined ? { message: flags.message } : {}),
      ...(kube ? { kube } : {}),
      ...safety,
      force: flags.force,
      kubelet: { kubelet: await kubeletCheck, api, force: flags.force, viaApi: false, ignorePdb: flags['ignore-pdb'] },
      reporter: this.reporter,
      signal: this.abort.signal,
    }).finally(() => api?.close());
    return this.finish(result);
  }
}
