/**
 * `podctl sync-known`: parse and validate, call the sync-known service, render. No logic of its own.
 */
import { Flags } from '@oclif/core';
import { detectKube } from '../kube/index.js';
import { apiNodeFor, kubeletFlags, kubeletStatusFor } from '../base/api-door.js';
import { PodctlCommand } from '../base/command.js';
import { metricsTextfileFlags } from '../base/safety-flags.js';
import { UsageError } from '../lib/errors.js';
import { ExitCode, exitCodesHelp } from '../lib/exit-codes.js';
import { renderTable } from '../lib/output.js';
import { syncKnownJson } from '../base/json-results.js';
import { syncKnown, type DesiredSource } from '../services/housekeeping/sync-known.js';
import { syncKnownSummary, syncKnownTable } from '../services/housekeeping/output.js';

export default class SyncKnown extends PodctlCommand {
  static override summary = "Run the kubelet's housekeeping step: forget finished pods, finish orphans, resume abandoned pods.";
  static override description = `Desired pods come from the API server when one is configured (--kubeconfig, $KUBECONFIG, in-cluster), else from --desired FILE (a PodList, a list of pods or one pod, JSON or YAML) or --desired-from runtime (every pod still in the runtime is desired).

Then, as the kubelet's SyncKnownPods: finished workers of pods no longer desired are forgotten; unfinished workers of pods no longer desired (orphans) are driven to termination; runtime pods no worker knows are terminated (orphaned runtime pods); pods whose owning podctl process died are taken over and resumed from their checkpoint. This is how a pod stuck after a crash is recovered.

Safety: static pods (kubelet annotation kubernetes.io/config.source other than "api") are never orphans: their desired state comes from the node's manifests, never from a list, so they are kept unless --include-static. An empty desired list while the node runs pods is refused unless --yes. --dry-run prints what would be done, in the same shape, and changes nothing.

Prints the known-workers map (state, orphan, hasConfig, static).

${exitCodesHelp([ExitCode.Done, ExitCode.Failure, ExitCode.Usage, ExitCode.Interrupted])}`;

  static override examples = [
    { description: 'Recover after a crash, treating what the runtime runs as desired:', command: '<%= config.bin %> <%= command.id %> --desired-from runtime' },
    { description: 'Desired pods from a file exported with kubectl:', command: '<%= config.bin %> <%= command.id %> --desired pods.yaml' },
    { description: 'See what a sync against a file would do, changing nothing:', command: '<%= config.bin %> <%= command.id %> --desired pods.yaml --dry-run' },
    { description: 'Desired pods from the API server, as JSON:', command: '<%= config.bin %> <%= command.id %> --kubeconfig ~/.kube/config --json' },
  ];

  static override flags = {
    ...metricsTextfileFlags,
    desired: Flags.string({ summary: 'File of desired pods: PodList, list or pod, JSON or YAML.', helpValue: 'FILE' }),
    'desired-from': Flags.option({ summary: 'Where desired pods come from without --desired.', options: ['api', 'runtime'] as const })(),
    'include-static': Flags.boolean({ summary: 'Let static pods missing from the desired list be terminated too (default: always kept).', default: false }),
    yes: Flags.boolean({ summary: 'Proceed even when the desired list is empty and would terminate every pod.', default: false }),
    'dry-run': Flags.boolean({ summary: 'Print what would be done (same shape as the result) and change nothing.', default: false }),
    force: Flags.boolean({ summary: "Beside a running kubelet: terminate orphans at once, without the fresh GET and the kubelet's cleanup time.", default: false }),
    ...kubeletFlags,
    output: Flags.option({ char: 'o', summary: 'Result format on stdout.', options: ['table', 'json', 'yaml'] as const, default: 'table' as const })(),
  };

  async run(): Promise<ReturnType<typeof syncKnownJson>> {
    const { flags } = await this.parse(SyncKnown);
    this.configure(flags);
    await this.recordMetricsTo(flags['metrics-textfile']);
    if (flags.desired !== undefined && flags['desired-from'] !== undefined) {
      throw new UsageError('--desired and --desired-from are mutually exclusive', 'give one source of desired pods');
    }
    const kube = detectKube(flags.kubeconfig);
    let source: DesiredSource;
    if (flags.desired !== undefined) source = { kind: 'file', path: flags.desired };
    else if (flags['desired-from'] === 'runtime') source = { kind: 'runtime' };
    else if (kube) source = { kind: 'api' };
    else if (flags['desired-from'] === 'api') throw new UsageError('--desired-from api needs an API server', 'pass --kubeconfig FILE or set KUBECONFIG');
    else throw new UsageError('no source of desired pods', 'pass --desired FILE or --desired-from runtime, or configure an API server with --kubeconfig');
    if (flags['dry-run']) this.readOnlySession = true;
    // the API server is asked whenever one is configured: beside a running kubelet it confirms orphans
    const api = source.kind === 'api' || kube ? await apiNodeFor(flags, this.reporter) : undefined;
    const kubelet = await kubeletStatusFor(flags['kubelet-healthz'], api);
    const result = await syncKnown({
      session: await this.session(),
      source,
      reporter: this.reporter,
      signal: this.abort.signal,
      includeStatic: flags['include-static'],
      yes: flags.yes,
      dryRun: flags['dry-run'],
      kubelet: { state: kubelet.state, detail: kubelet.detail },
      force: flags.force,
      kubeletRoot: flags['kubelet-root'],
      ...(api ? { api } : {}),
    }).finally(() => api?.close());
    if (!this.jsonEnabled()) {
      if (flags.output === 'json' || flags.output === 'yaml') await this.printStructured(syncKnownJson(result), flags.output);
      else {
        // the result, on stdout (kubectl habit): the table of known workers, then the summary
        if (result.workers.length > 0) this.log(await renderTable(syncKnownTable(result, this.styler), this.styler));
        this.log(syncKnownSummary(result));
      }
    }
    return syncKnownJson(result);
  }
}
