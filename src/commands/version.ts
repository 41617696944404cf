/**
 * `podctl version`: parse, call the version service, print one line each. No logic of its own.
 */
import { Flags } from '@oclif/core';
import { PodctlCommand } from '../base/command.js';
import { RuntimeFailure, oneLine } from '../lib/errors.js';
import { ExitCode, exitCodesHelp } from '../lib/exit-codes.js';
import { isSingleExecutable } from '../base/self.js';
import { podctlVersion, versionLines, type VersionResult } from '../services/runtime/version.js';

export default class Version extends PodctlCommand {
  static override summary = "Show podctl's version, the Node.js it runs on, and the container runtime's name and version.";
  static override description = `One line each: podctl's version (and whether it runs as the single executable), the Node.js version it runs on, and the runtime's name, version and CRI API version as its Version call reports them. With --client the runtime is not asked.

${exitCodesHelp([ExitCode.Done, ExitCode.Failure, ExitCode.Usage, ExitCode.Interrupted])}`;

  static override examples = [
    { description: 'podctl, Node.js and the runtime:', command: '<%= config.bin %> <%= command.id %>' },
    { description: 'Only podctl and Node.js, as JSON:', command: '<%= config.bin %> <%= command.id %> --client --json' },
  ];

  static override flags = {
    client: Flags.boolean({ summary: "Only podctl's and Node.js's versions; do not ask the runtime.", default: false }),
  };

  async run(): Promise<VersionResult> {
    const { flags } = await this.parse(Version);
    this.configure(flags);
    let result: VersionResult;
    try {
      result = await podctlVersion({
        podctlVersion: this.config.version,
        singleExecutable: isSingleExecutable(),
        client: flags.client,
        stateDir: flags['state-dir'],
        ...(flags['runtime-endpoint'] ? { runtimeEndpoint: flags['runtime-endpoint'] } : {}),
        ...(flags['request-timeout'] ? { timeoutMs: flags['request-timeout'] } : {}),
        signal: this.abort.signal,
      });
    } catch (error) {
      if (this.abort.signal.aborted) throw error;
      throw new RuntimeFailure(`runtime version: ${oneLine(error)}`, "podctl version --client shows podctl's own versions", { cause: error });
    }
    if (!this.jsonEnabled()) this.log(versionLines(result).join('\n'));
    return result;
  }
}
