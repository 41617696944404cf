/**
 * podctl's exit codes: the part of the operator contract that scripts branch on.
 *
 * Invariants: the numbers never change meaning; every command maps its outcome to exactly one of
 * them (see `docs/operator-guide.md#exit-codes`), and the mapping is tested.
 */
export const ExitCode = {
  /** Everything asked for is done. */
  Done: 0,
  /** A runtime, store or internal error stopped the command. */
  Failure: 1,
  /** Bad flags or arguments: nothing was done. */
  Usage: 2,
  /** A wait ran out of time (--timeout or the default bound); a background driver finishes the work. */
  TimedOut: 3,
  /** A pod named on the command line is not on this node. */
  NotFound: 4,
  /** drain: some pods terminated, others did not. */
  Partial: 5,
  /** SIGINT/SIGTERM: the command stopped waiting; pods it drove are handed to a background driver. */
  Interrupted: 130,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** One line per code, as shown by `--help` and the operator guide. */
export const EXIT_CODE_HELP: readonly string[] = [
  '0   done',
  '1   runtime or internal error',
  '2   usage error (bad flag or argument; nothing was done)',
  '3   timed out waiting (a background podctl, PID printed, drives the termination on)',
  '4   pod not found on this node',
  '5   partially done (drain: some pods did not terminate)',
  '130 interrupted (pods still terminating are handed to a background podctl, PID printed)',
];

/** The EXIT CODES block of a command's --help, for the codes it can return. */
export function exitCodesHelp(codes: readonly ExitCodeValue[]): string {
  const lines = EXIT_CODE_HELP.filter((line) => codes.includes(Number(line.split(' ')[0]) as ExitCodeValue));
  return `Exit codes:\n${lines.map((l) => `  ${l}`).join('\n')}`;
}
