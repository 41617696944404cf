/**
 * `podctl report`: parse and validate, call the report service, render (HTML page or JSON). No logic of its own.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../base/command.js';
import { UsageError } from '../lib/errors.js';
import { ExitCode, exitCodesHelp } from '../lib/exit-codes.js';
import { selectionFlags } from '../base/flags.js';
import { parseDuration } from '../lib/duration.js';
import { renderJson } from '../lib/output.js';
import { selectionFromFlags } from '../lib/refs.js';
import type { DrainReport } from '../services/drain/report/model.js';

export default class Report extends PodctlCommand {
  static override summary = 'Draw where a drain’s time went: one self-contained HTML page (or its data as JSON).';
  static override description = `Without pods or --since: the last drain whose report the state dir keeps (podctl drain's, or the agent's maintenance drain; the newest 20 are kept). With --since or pods (ns/name, -n, -l, --uid): those pods still in the state dir whose termination was requested (since then).

The page (--file, default drain-report.html) holds no script and loads nothing: inline SVG and CSS that any browser opens. The summary comes first — the wall time against the sum of the group budgets, why the drain took that long (the pod that ended each group), the pods killed at their grace deadline, the slowest pods, the failures — then one lane per pod on a shared time axis, grouped by priority group with the group's budget as a band: the request, each preStop hook, each container's stop (SIGTERM to exit; ✕ where it was SIGKILLed at its grace deadline), the sandbox's stop and removal, the waits in the API server, and the cause that holds a pod that did not finish. Hovering shows exact times. -o json writes the same data (to --file, or stdout without one).

${exitCodesHelp([ExitCode.Done, ExitCode.Failure, ExitCode.Usage])} Exit 2 also when no drain report is kept or no pod matches.`;

  static override examples = [
    { description: 'The last drain, as a page:', command: '<%= config.bin %> <%= command.id %> --file /tmp/drain.html' },
    { description: "The agent's last maintenance drain:", command: '<%= config.bin %> <%= command.id %> --last-drain' },
    { description: 'Every pod stopped in the last hour, in namespace web:', command: '<%= config.bin %> <%= command.id %> -n web --since 1h' },
    { description: 'The data for a script:', command: '<%= config.bin %> <%= command.id %> -o json' },
  ];

  static override strict = false;
  protected override readOnlySession = true;
  static override args = {
    ref: Args.string({ description: 'Pods to draw: ns/name, or name with -n (repeatable). Default: the last drain.' }),
  };
  static override flags = {
    namespace: selectionFlags.namespace,
    uid: selectionFlags.uid,
    selector: selectionFlags.selector,
    'last-drain': Flags.boolean({ summary: 'The last drain kept in the state dir (the default without pods or --since).', default: false }),
    since: Flags.string({ summary: 'Pods whose termination was requested in the last DURATION (30s, 10m, 1h).', helpValue: 'DURATION' }),
    file: Flags.string({ char: 'f', summary: 'Write the page (or -o json data) to FILE; default drain-report.html (-o json: stdout).', helpValue: 'FILE' }),
    output: Flags.option({ char: 'o', summary: 'What to write.', options: ['html', 'json'] as const, default: 'html' as const })(),
  };

  async run(): Promise<DrainReport> {
    const { argv, flags } = await this.parse(Report);
    this.configure(flags);
    const selection = selectionFromFlags(argv, flags, { defaultAllNamespaces: true, allowEmpty: true });
    const picked = flags.since !== undefined || selection.refs.length > 0 || selection.selector !== undefined || selection.namespace !== undefined;
    if (flags['last-drain'] && picked) throw new UsageError('--last-drain draws a kept drain: it does not take pods or --since', 'leave out --last-drain to pick pods');
    const sinceMs = flags.since === undefined ? undefined : parseDuration(flags.since, 'since');
    const service = await import('../services/drain/report/report.js');
    let report: DrainReport;
    if (picked) {
      report = await service.reportOfPods({ session: await this.session(), selection, ...(sinceMs !== undefined ? { since: Date.now() - sinceMs } : {}) });
    } else {
      const kept = await service.lastDrainReport(this.sessionOptions().stateDir);
      this.reporter.info(`report: the drain kept in ${kept.file}`);
      report = kept.report;
    }
    const json = this.jsonEnabled() || flags.output === 'json';
    const file = flags.file ?? (json ? undefined : 'drain-report.html');
    if (file !== undefined) {
      const text = json ? renderJson(report) : (await import('../services/drain/report/html.js')).renderReportHtml(report);
      await writeFile(file, text).catch((error: Error) => {
        throw new UsageError(`--file ${file}: ${error.message}`, 'give a path in a folder you can write');
      });
      if (!this.jsonEnabled()) this.log(path.resolve(file));
      this.logToStderr(`report: ${report.pods.length} pod(s) in ${report.groups.length} group(s) written to ${path.resolve(file)}`);
    } else if (!this.jsonEnabled()) {
      this.log(renderJson(report));
    }
    return report;
  }
}
