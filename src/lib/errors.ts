/**
 * podctl's error hierarchy: errors an operator can act on, each with its exit code and (when there
 * is one) the flag or path to fix, versus bugs.
 *
 * Invariants:
 * - A `PodctlError` is shown as one line (`error: <message>` plus an optional `fix:` hint on the same
 *   line); its stack only with `--log-level debug`.
 * - Anything else is treated as an internal/runtime error (exit 1), also shown as one line.
 */
import { ExitCode, type ExitCodeValue } from './exit-codes.js';

export class PodctlError extends Error {
  readonly exitCode: ExitCodeValue;
  /** What to change to fix it: a flag, a path, a next command. */
  readonly hint: string | undefined;

  constructor(message: string, exitCode: ExitCodeValue, hint?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.exitCode = exitCode;
    this.hint = hint;
  }
}

/** Bad flags or arguments (exit 2). The message names the flag. */
export class UsageError extends PodctlError {
  constructor(message: string, hint?: string) {
    super(message, ExitCode.Usage, hint);
  }
}

/** A pod named on the command line is not on this node (exit 4). */
export class PodNotFoundError extends PodctlError {
  readonly refs: string[];
  constructor(refs: string[], hint = 'list the node\'s pods with `podctl status -A`') {
    super(`pod not found on this node: ${refs.join(', ')}`, ExitCode.NotFound, hint);
    this.refs = refs;
  }
}

/** A runtime, store or environment problem (exit 1), usually with a path or flag to check. */
export class RuntimeFailure extends PodctlError {
  constructor(message: string, hint?: string, options?: { cause?: unknown }) {
    super(message, ExitCode.Failure, hint, options);
  }
}

/** The exit code an arbitrary thrown value maps to. */
export function exitCodeOf(error: unknown): ExitCodeValue {
  if (error instanceof PodctlError) return error.exitCode;
  if (isAbort(error)) return ExitCode.Interrupted;
  const oclif = (error as { oclif?: { exit?: number } } | undefined)?.oclif;
  if (oclif?.exit === ExitCode.Usage) return ExitCode.Usage;
  return ExitCode.Failure;
}

export function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

/** The one line shown for an error: its first message line, plus the hint when there is one. */
export function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const lines = message.split('\n').map((line) => line.trim()).filter((line) => line !== '');
  let first = lines[0] ?? 'unknown error';
  // oclif reports a bad flag value as "Parsing --flag" with the reason on the next line
  if (/^Parsing --[\w-]+$/.test(first) && lines[1] !== undefined) first = `${first}: ${lines[1]}`;
  const hint = error instanceof PodctlError ? error.hint : undefined;
  return hint ? `${first} (${hint})` : first;
}
