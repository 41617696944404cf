/**
 * The base of the commands that terminate pods by reference (`podctl kill`, `podctl evict`): their
 * common flags, their session (the runtime's event stream opened with the first wait), and how they
 * end — unfinished pods handed on, the table and summary drawn, the exit code set, the JSON result
 * returned.
 *
 * Invariant: a subclass's `run()` only parses, validates and calls its service, then returns
 * `this.finish(result)`; what the two commands do alike after their service lives here once.
 */
import { Args } from '@oclif/core';
import { PodctlCommand } from './command.js';
import type { SessionOptions } from '../domain/session-api.js';
import { globalFlagsOwnTimeout, selectionFlags, terminationFlags } from './flags.js';
import { metricsTextfileFlags } from './safety-flags.js';
import { terminateJson } from './json-results.js';
import { renderTable } from '../lib/output.js';
import { podsToHandOff, terminateExitCode, type TerminateResult } from '../services/terminate/terminate.js';
import { terminateSummary, terminateTable } from '../services/terminate/output.js';

/** The flags kill and evict open with: the metrics textfile, which pods, and how to terminate them. */
export const terminateCommandFlags = { ...metricsTextfileFlags, ...selectionFlags, ...terminationFlags };

/** The pods to act on, as arguments: any number of references (the commands are not strict). */
export function podRefArgs(verb: string) {
  return { ref: Args.string({ description: `Pods to ${verb}: ns/name, or name with -n (repeatable).` }) };
}

/**
 * A subclass declares `strict = false` (refs are variadic) and its `args` itself: oclif's parser
 * reads a command's own static fields for those, not the ones it inherits.
 */
export abstract class TerminateCommand extends PodctlCommand {
  // --timeout is the wait here; the request deadline is --request-timeout only
  static override baseFlags = globalFlagsOwnTimeout;
  /** Exit codes are asked for only where the session decides by them (SessionOptions.exitDetails). */
  protected override exitDetails = 'driven' as const;

  /** The runtime's event stream is opened with the wait, after the stops are on their way. */
  protected override sessionOptions(): SessionOptions {
    return { ...super.sessionOptions(), runtimeEventsFromFirstWait: true };
  }

  /** Hands the pods still terminating on, draws the result (unless --json), sets the exit code; returns the JSON result. */
  protected async finish<T extends TerminateResult & { kubelet?: unknown }>(result: T): Promise<ReturnType<typeof terminateJson<T>>> {
    await this.handOffUnfinished(result.action, result, podsToHandOff(result));
    if (!this.jsonEnabled()) {
      this.log(await renderTable(terminateTable(result, this.styler), this.styler));
      this.logToStderr(terminateSummary(result));
    }
    this.setExitCode(terminateExitCode(result));
    return terminateJson(result);
  }
}
