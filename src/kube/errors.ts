/**
 * The API server's failures as podctl's own typed error, decided at the transport boundary.
 *
 * Invariants:
 * - Every failure of an API call is a `KubeError` naming the call; its message is one line.
 * - `transient` is true exactly for what is worth retrying: 429, 5xx, a dropped or refused
 *   connection, and a call that did not answer within its deadline.
 * - 401/403 say which RBAC verb on which resource is missing, never a raw Status dump.
 */

export class KubeError extends Error {
  override readonly name = 'KubeError';
  readonly call: string;
  /** HTTP status, when the server answered. */
  readonly statusCode: number | undefined;
  /** The Status object's reason (NotFound, Conflict, TooManyRequests, Expired, …). */
  readonly reason: string | undefined;
  /** The server's Retry-After, ms. */
  readonly retryAfterMs: number | undefined;
  /** Worth retrying (429, 5xx, connection errors, deadline). */
  readonly transient: boolean;
  /** The Status object's details.causes (a PodDisruptionBudget's 429 names its budget there). */
  readonly causes: readonly { reason?: string; message?: string }[];
  /** The attempt's deadline, ms, when the call failed because the server did not answer within it. */
  readonly deadlineMs: number | undefined;
  constructor(
    call: string,
    message: string,
    statusCode?: number,
    options?: { cause?: unknown; reason?: string; retryAfterMs?: number; transient?: boolean; causes?: readonly { reason?: string; message?: string }[]; deadlineMs?: number },
  ) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.call = call;
    this.statusCode = statusCode;
    this.reason = options?.reason;
    this.retryAfterMs = options?.retryAfterMs;
    this.causes = options?.causes ?? [];
    this.deadlineMs = options?.deadlineMs;
    this.transient = options?.transient ?? (statusCode === undefined || statusCode === 429 || statusCode >= 500);
  }
}

/** What a call needs in RBAC terms: "delete" on "pods" in namespace "web". */
export interface RbacNeed {
  verb: string;
  resource: string;
  group?: string;
  namespace?: string;
}

/** The one line an operator reads for a 401 or 403. */
export function authMessage(call: string, statusCode: 401 | 403, need: RbacNeed, where: string): string {
  if (statusCode === 401) return `${call}: the API server refused the credentials of ${where} (HTTP 401 Unauthorized); renew the token or certificate`;
  const resource = need.group ? `${need.resource}.${need.group}` : need.resource;
  const scope = need.namespace ? ` in namespace ${need.namespace}` : '';
  return `${call}: forbidden (HTTP 403): the identity of ${where} lacks RBAC verb "${need.verb}" on resource "${resource}"${scope}; grant it in a (Cluster)Role`;
}

/** Retry-After in ms: seconds, or an HTTP date. */
export function parseRetryAfter(header: string | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export const isNotFound = (error: unknown): boolean => error instanceof KubeError && error.statusCode === 404;
export const isConflict = (error: unknown): boolean => error instanceof KubeError && error.statusCode === 409;
