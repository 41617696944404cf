/**
 * What the gRPC-over-HTTP/2 protocol says about a response's headers, shared by the unary calls
 * (channel.ts) and the event stream (event-stream.ts).
 */
import type { IncomingHeaders } from './h2/session.js';
import { GrpcStatus } from './errors.js';

/** gRPC's code for an HTTP status that is not 200 (the protocol's mapping). */
export function codeOfHttpStatus(status: number): number {
  switch (status) {
    case 400:
      return GrpcStatus.INTERNAL;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
      return GrpcStatus.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return GrpcStatus.UNAVAILABLE;
    default:
      return GrpcStatus.UNKNOWN;
  }
}

/** The status a header block carries (`grpc-status`, `grpc-message` percent-decoded), if any. */
export function statusOf(headers: IncomingHeaders): { code: number; message: string } | undefined {
  const raw = headers['grpc-status'];
  if (raw === undefined) return undefined;
  const code = Number(raw);
  const encoded = headers['grpc-message'];
  let message = typeof encoded === 'string' ? encoded : '';
  try {
    message = decodeURIComponent(message);
  } catch {
    // left as sent
  }
  return { code: Number.isInteger(code) ? code : GrpcStatus.UNKNOWN, message };
}
