/**
 * The last resort: an error nothing else caught (an uncaught exception, an unhandled rejection, a
 * write to a stdout that cannot take it such as /dev/full) ends podctl with one line on stderr and
 * its documented exit code (errors.ts `exitCodeOf`: 1 for a failure), never a Node stack trace or a
 * line of the bundled script. The stack is printed only with `--log-level debug` (or
 * PODCTL_LOG_LEVEL=debug).
 *
 * Invariants: installed once per process, before the command runs; a reader that went away (EPIPE on
 * stdout, e.g. `podctl status | head -1`) is not an error: the process ends with the exit code it had.
 */
import { exitCodeOf, oneLine } from './errors.js';

let installed = false;

function wantsDebug(argv: readonly string[]): boolean {
  const i = argv.indexOf('--log-level');
  return argv.includes('--log-level=debug') || (i >= 0 && argv[i + 1] === 'debug') || process.env.PODCTL_LOG_LEVEL === 'debug';
}

/** The one line for an error that escaped every handler. */
function lastResortLine(error: unknown): string {
  const e = error as NodeJS.ErrnoException | undefined;
  if (e && typeof e === 'object' && e.syscall === 'write' && typeof e.code === 'string') {
    return `cannot write the output: ${e.code}${e.code === 'ENOSPC' ? ' (no space left on the device)' : ''}`;
  }
  return oneLine(error);
}

export function installLastResort(argv: readonly string[]): void {
  if (installed) return;
  installed = true;
  const debug = wantsDebug(argv);
  let ending = false;
  const end = (error: unknown): void => {
    if ((error as NodeJS.ErrnoException | undefined)?.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    if (ending) return; // a second error while reporting the first: the first one's code stands
    ending = true;
    try {
      process.stderr.write(`error: ${lastResortLine(error)}\n`);
      if (debug && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
    } catch {
      // stderr is gone too: the exit code still says it
    }
    process.exit(exitCodeOf(error));
  };
  process.on('uncaughtException', end);
  process.on('unhandledRejection', end);
  process.stdout.on('error', end);
}
