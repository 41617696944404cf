/**
 * The last resort: an error nothing else caught (an uncaught exception, an unhandled rejection, a
 * write to a stdout that cannot take it such as /dev/full) ends podctl with one line on stderr and
 * its documented exit code (errors.ts `exitCodeOf`: 1 for a failure), never a Node stack trace or a
 * line of the bundled script. The stack is printed only with `--log-level debug` (or
 * PODCTL_LOG_LEVEL=debug).
 *
 * Invariants: installed once per process, before the command runs. A reader that went away (EPIPE on
 * stdout or stderr, e.g. `podctl kill … 2>&1 | head -1`) is not an error and does not end podctl:
 * what is written there after it is dropped, and the command carries on to its own end, so the pods it
 * drives are terminated or handed on as at any other end (ending at once would drop a pod in the middle
 * of its termination, with exit 0). `watch` ends itself when its reader goes (services/watch/watch.ts).
 */
import { exitCodeOf, oneLine } from '../lib/errors.js';

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
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EPIPE' ? dropWrites(stream) : end(error)));
  }
}

/** The stream's reader went away: later writes go nowhere (their callbacks still run) instead of failing. */
function dropWrites(stream: NodeJS.WriteStream): void {
  stream.write = (...args: unknown[]): boolean => {
    const done = args.find((a): a is () => void => typeof a === 'function');
    if (done) process.nextTick(done);
    return true;
  };
}
