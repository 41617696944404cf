/**
 * GetContainerEvents read over HTTP/2 directly, in gRPC's wire format (the gRPC-over-HTTP/2
 * protocol: a POST to the method's path, each message a 5-byte prefix — compressed flag, 32-bit
 * length — and its bytes; the call's status in the trailers, or in the headers of a response that
 * has no messages).
 *
 * Why not grpc-js for this one call: it hands a server stream's messages on one at a time — after
 * each it pauses the HTTP/2 stream, passes the message through a promise and two streams, and
 * resumes when the reader asks for the next. A drain of 500 pods makes over a thousand events, all
 * read by every follower of the node (`watch`, the agent); that hand-over was a fifth of a
 * `watch -o json`'s CPU during one. Here each chunk the connection delivers is cut into messages
 * and decoded at once. The unary calls speak the same protocol (channel.ts).
 *
 * Invariants:
 * - Events reach `onEvents` in the order the runtime sent them, each exactly once; a message split
 *   over chunks is joined first. Each chunk's events come in one call; those before a message that
 *   cannot be read still come, then the stream ends.
 * - The stream ends exactly once, through `onEnd`: with no error on an OK status or on abort
 *   (nothing is delivered after an abort); otherwise with a CriError — the runtime's status code and
 *   message (Unimplemented from a runtime without events), UNAVAILABLE when the connection fails or
 *   closes without a status, INTERNAL for a malformed or compressed message (compression is never
 *   offered), RESOURCE_EXHAUSTED for one over `maxMessageBytes`.
 * - The connection is the stream's own: it is closed when the stream ends.
 */
import type { ContainerEventSummary } from './container-event.js';
import { CriError, GrpcStatus } from './errors.js';
import { codeOfHttpStatus, statusOf } from './wire.js';
import { ErrorCode, connect, type H2Session, type H2Stream, type IncomingHeaders } from './h2/session.js';

const METHOD = 'GetContainerEvents';
const PATH = '/runtime.v1.RuntimeService/GetContainerEvents';
/** GetEventsRequest has no fields: its message is the 5-byte prefix of an empty one. */
const EMPTY_REQUEST = Buffer.alloc(5);
const PREFIX_BYTES = 5;

export interface EventStreamOptions {
  /** The runtime's unix socket (a filesystem path). */
  socketPath: string;
  decode: (bytes: Uint8Array) => ContainerEventSummary;
  onEvents: (events: ContainerEventSummary[]) => void;
  /** Called once when the stream ends: `error` undefined for an OK status or an abort. */
  onEnd: (error?: CriError) => void;
  signal: AbortSignal;
  /** Largest message accepted (bytes); default 16 MiB, as the unary calls'. */
  maxMessageBytes?: number;
}

/** How a stream ends: code OK ends it cleanly, any other with that code and message. */
interface Ending {
  code: number;
  message: string;
  cause?: unknown;
}

/** The messages a chunk held, and the bytes of an unfinished one (`rest`) or the first unreadable one's `ending`. */
interface Cut {
  events: ContainerEventSummary[];
  rest?: Buffer;
  ending?: Ending;
}

/**
 * Cuts `bytes` into whole messages and decodes each; stops at the first that is compressed, over
 * `maxBytes` or cannot be decoded (its `ending`, after the events read before it).
 */
function cutMessages(bytes: Buffer, maxBytes: number, decode: EventStreamOptions['decode']): Cut {
  const events: ContainerEventSummary[] = [];
  let at = 0;
  while (bytes.length - at >= PREFIX_BYTES) {
    const compressed = bytes[at]!;
    const length = bytes.readUInt32BE(at + 1);
    if (compressed !== 0) return { events, ending: { code: GrpcStatus.INTERNAL, message: 'a compressed message, which podctl did not offer to read' } };
    if (length > maxBytes) return { events, ending: { code: GrpcStatus.RESOURCE_EXHAUSTED, message: `a message of ${length} bytes, over the ${maxBytes}-byte limit` } };
    if (bytes.length - at - PREFIX_BYTES < length) break;
    const start = at + PREFIX_BYTES;
    try {
      events.push(decode(bytes.subarray(start, start + length)));
    } catch (error) {
      return { events, ending: { code: GrpcStatus.INTERNAL, message: `an event that cannot be read: ${(error as Error).message}`, cause: error } };
    }
    at = start + length;
  }
  if (at === bytes.length) return { events };
  return { events, rest: at === 0 ? bytes : Buffer.from(bytes.subarray(at)) };
}

/** What a response's headers say: undefined while messages follow, else how the stream ends. */
function endingOfResponse(headers: IncomingHeaders): Ending | undefined {
  const status = Number(headers[':status']);
  if (status !== 200) return { code: codeOfHttpStatus(status), message: `HTTP status ${status} from the runtime` };
  // a response with no messages carries its status in its headers (Unimplemented, a fault)
  return statusOf(headers);
}

/** How the trailers end the stream, given the bytes of a message still unfinished (`pending`). */
function endingOfTrailers(headers: IncomingHeaders, pending: Buffer | undefined): Ending {
  const status = statusOf(headers);
  if (status === undefined) return { code: GrpcStatus.INTERNAL, message: 'the runtime ended the stream without a status' };
  if (status.code !== GrpcStatus.OK || pending === undefined) return status;
  return { code: GrpcStatus.INTERNAL, message: `the runtime ended the stream inside a message (${pending.length} bytes of it came)` };
}

/** Opens the stream's own connection and its request (not yet sent: the caller listens first). */
function openRequest(socketPath: string): { session: H2Session; request: H2Stream } {
  const session = connect(socketPath);
  const request = session.request({
    ':method': 'POST',
    ':path': PATH,
    'content-type': 'application/grpc',
    te: 'trailers',
    'grpc-accept-encoding': 'identity',
    'user-agent': 'podctl',
  });
  return { session, request };
}

/** Opens the stream; everything after is reported through the callbacks. */
export function openContainerEventStream(options: EventStreamOptions): void {
  const maxBytes = options.maxMessageBytes ?? 16 * 1024 * 1024;
  const { signal } = options;
  let ended = false;
  let pending: Buffer | undefined;
  let session: H2Session | undefined;
  let request: H2Stream | undefined;

  const end = (error?: CriError): void => {
    if (ended) return;
    ended = true;
    signal.removeEventListener('abort', onAbort);
    if (request !== undefined && !request.closed) request.close(ErrorCode.CANCEL);
    session?.destroy();
    options.onEnd(signal.aborted ? undefined : error);
  };
  const fail = (code: number, message: string, cause?: unknown): void => end(new CriError(METHOD, code, message, cause === undefined ? undefined : { cause }));
  const finish = (ending: Ending): void => (ending.code === GrpcStatus.OK ? end() : fail(ending.code, ending.message, ending.cause));
  const onAbort = (): void => end();
  if (signal.aborted) {
    end();
    return;
  }
  signal.addEventListener('abort', onAbort, { once: true });

  /** Cuts the bytes received so far into messages; the rest waits for the next chunk. */
  const onData = (chunk: Buffer): void => {
    if (ended) return;
    const cut = cutMessages(pending === undefined ? chunk : Buffer.concat([pending, chunk]), maxBytes, options.decode);
    pending = cut.rest;
    // the events before a bad message are handed on before the stream ends with it
    if (cut.events.length > 0) options.onEvents(cut.events);
    if (cut.ending !== undefined) finish(cut.ending);
  };

  ({ session, request } = openRequest(options.socketPath));
  session.on('error', (error: Error) => fail(GrpcStatus.UNAVAILABLE, error.message, error));
  session.on('close', () => fail(GrpcStatus.UNAVAILABLE, 'the runtime closed the connection'));
  request.on('response', (headers: IncomingHeaders) => {
    const ending = endingOfResponse(headers);
    if (ending !== undefined) finish(ending);
  });
  request.on('data', onData);
  request.on('trailers', (headers: IncomingHeaders) => finish(endingOfTrailers(headers, pending)));
  request.on('error', (error: Error) => fail(GrpcStatus.UNAVAILABLE, error.message, error));
  request.on('close', () => fail(GrpcStatus.UNAVAILABLE, 'the runtime ended the stream without a status'));
  request.end(EMPTY_REQUEST);
}
