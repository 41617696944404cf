/**
 * CriError: the one error type every CRI call rejects with (apart from an abort, which rejects
 * with the caller's `signal.reason`).
 *
 * Invariants:
 * - A transport or runtime failure never escapes the CRI layer as a raw grpc-js ServiceError; it is
 *   turned into a CriError at the boundary, carrying the RPC method, the gRPC status code and the
 *   runtime's details text.
 * - This module imports nothing at run time (no grpc-js): the status codes are the gRPC wire
 *   constants, so commands can test errors without paying for the gRPC import.
 */

/** gRPC status codes (the wire values; identical to grpc-js `status`). */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export type GrpcStatusName = keyof typeof GrpcStatus;

const NAMES: Record<number, string> = Object.fromEntries(Object.entries(GrpcStatus).map(([name, code]) => [code, toCamel(name)]));

function toCamel(name: string): string {
  return name
    .toLowerCase()
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

/** "DeadlineExceeded" for 4, "Unavailable" for 14, "Code99" for unknown codes. */
export function statusName(code: number): string {
  return NAMES[code] ?? `Code${code}`;
}

/** A failed CRI call: which RPC, which gRPC status, and what the runtime said. */
export class CriError extends Error {
  override readonly name = 'CriError';
  /** The RPC method name as the proto spells it, e.g. "StopContainer". */
  readonly method: string;
  /** gRPC status code (see GrpcStatus). */
  readonly code: number;
  /** The runtime's error text (gRPC details), possibly empty. */
  readonly details: string;

  constructor(method: string, code: number, details: string, options?: { cause?: unknown }) {
    super(`${method}: ${statusName(code)}${details ? `: ${details}` : ''}`, options);
    this.method = method;
    this.code = code;
    this.details = details;
  }

  /** "DeadlineExceeded", "NotFound", … */
  get codeName(): string {
    return statusName(this.code);
  }
}

export function isCriError(err: unknown): err is CriError {
  return err instanceof CriError;
}

function hasCode(err: unknown, code: number): boolean {
  return err instanceof CriError && err.code === code;
}

/** The runtime could not be reached (socket missing, connection refused, runtime restarting). */
export function isUnavailable(err: unknown): boolean {
  return hasCode(err, GrpcStatus.UNAVAILABLE);
}

/**
 * A failure that may pass on a second try of a read: the runtime erred, was busy, slow or away
 * (UNKNOWN, INTERNAL, UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED).
 */
export function isTransient(err: unknown): boolean {
  if (!(err instanceof CriError)) return false;
  const transient: readonly number[] = [GrpcStatus.UNKNOWN, GrpcStatus.INTERNAL, GrpcStatus.UNAVAILABLE, GrpcStatus.DEADLINE_EXCEEDED, GrpcStatus.RESOURCE_EXHAUSTED, GrpcStatus.ABORTED];
  return transient.includes(err.code);
}

/** The container or sandbox does not exist (already removed): idempotent callers treat it as done. */
export function isNotFound(err: unknown): boolean {
  return hasCode(err, GrpcStatus.NOT_FOUND);
}

/** The call's deadline passed before the runtime answered. */
export function isDeadlineExceeded(err: unknown): boolean {
  return hasCode(err, GrpcStatus.DEADLINE_EXCEEDED);
}

/** The runtime does not implement the RPC (e.g. GetContainerEvents on containerd 1.6). */
export function isUnimplemented(err: unknown): boolean {
  return hasCode(err, GrpcStatus.UNIMPLEMENTED);
}

/** Shape of a grpc-js ServiceError, as far as this module needs it. */
interface ServiceErrorLike {
  code: number;
  details?: string;
  message?: string;
}

function isServiceErrorLike(err: unknown): err is ServiceErrorLike {
  return typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'number';
}

/** Turns whatever a grpc-js call rejected with into a CriError for `method`. */
export function toCriError(method: string, err: unknown): CriError {
  if (err instanceof CriError) return err;
  if (isServiceErrorLike(err)) {
    return new CriError(method, err.code, err.details ?? err.message ?? '', { cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new CriError(method, GrpcStatus.UNKNOWN, message, { cause: err });
}
