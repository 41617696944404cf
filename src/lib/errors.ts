/**
 * podctl's error hierarchy: errors an operator can act on, each with its exit code and (when there
 * is one) the flag or path to fix, versus bugs.
 *
 * Invariants:
 * - A `PodctlError` is shown as one line (`error: <message>` plus an optional `fix:` hint on the same
 *   line); its stack only with `--log-level debug`.
 * - Anything else is treated as an internal/runtime error (exit 1), also shown as one line.
 * - Every error record a program reads (`--json`'s `{ error }`, watch's `{"type":"error"}` line)
 *   names its error with one of ERROR_NAMES (`errorName`), whatever class was thrown; the list and
 *   each name's exit code are documented in docs/operator-guide.md ("Exit codes").
 */
import { ExitCode, type ExitCodeValue } from './exit-codes.js';

class PodctlError extends Error {
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
  constructor(refs: string[], hint = "list the node's pods with `podctl status -A`") {
    super(`pod not found on this node: ${refs.join(', ')}`, ExitCode.NotFound, hint);
    this.refs = refs;
  }
}

/** A runtime, store or environment problem (exit 1), usually with a path or flag to check. */
export class RuntimeFailure extends PodctlError {
  /** Which part failed, when the cause does not say (a record's `error.name`). */
  readonly kind: 'RuntimeError' | 'StoreError' | 'ApiServerError' | undefined;
  constructor(message: string, hint?: string, options?: { cause?: unknown; kind?: RuntimeFailure['kind'] }) {
    super(message, ExitCode.Failure, hint, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.kind = options?.kind;
  }
}

/**
 * The names an error record carries (`error.name`), with the exit code each goes with:
 * UsageError 2, PodNotFoundError 4, RuntimeError 1 (the container runtime: unreachable, a CRI call
 * failed), StoreError 1 (the state dir or a checkpoint), ApiServerError 1 (the API server or the
 * kubeconfig), Failure 1 (another problem podctl names a fix for), InterruptedError 130
 * (SIGINT/SIGTERM), InternalError 1 (a bug: anything else).
 */
export const ERROR_NAMES = ['UsageError', 'PodNotFoundError', 'RuntimeError', 'StoreError', 'ApiServerError', 'Failure', 'InterruptedError', 'InternalError'] as const;
export type ErrorName = (typeof ERROR_NAMES)[number];

/** The part a thrown error of another layer stands for, by its class name (lib imports none of them). */
const NAME_OF_CLASS: Readonly<Record<string, ErrorName>> = {
  CriError: 'RuntimeError',
  EndpointError: 'RuntimeError',
  StoreError: 'StoreError',
  KubeError: 'ApiServerError',
};

/** The record name of a thrown value: one of ERROR_NAMES (a wrapped error is named by its cause). */
export function errorName(error: unknown): ErrorName {
  if (error instanceof UsageError) return 'UsageError';
  if (error instanceof PodNotFoundError) return 'PodNotFoundError';
  if (isAbort(error)) return 'InterruptedError';
  if (exitCodeOf(error) === ExitCode.Usage) return 'UsageError';
  if (error instanceof RuntimeFailure && error.kind !== undefined) return error.kind;
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth += 1) {
    const named = NAME_OF_CLASS[e.name];
    if (named !== undefined) return named;
  }
  return error instanceof PodctlError ? 'Failure' : 'InternalError';
}

/** The `error` object of an error record: its name (ERROR_NAMES), its one line, its exit code. */
export function errorRecord(error: unknown, line = oneLine(error)): { name: ErrorName; message: string; exitCode: ExitCodeValue } {
  return { name: errorName(error), message: line, exitCode: exitCodeOf(error) };
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
  const lines = message
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  let first = lines[0] ?? 'unknown error';
  // oclif reports a bad flag value as "Parsing --flag" with the reason on the next line; a reason
  // that names its flag already (podctl's own parsers: "--grace: …") stands alone
  const parsing = /^Parsing (--[\w-]+)$/.exec(first);
  if (parsing && lines[1] !== undefined) first = lines[1].startsWith(`${parsing[1]}:`) ? lines[1] : `${first}: ${lines[1]}`;
  const hint = error instanceof PodctlError ? error.hint : undefined;
  return hint ? `${first} (${hint})` : first;
}
