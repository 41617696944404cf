/**
 * Unary gRPC calls over one HTTP/2 connection to the runtime's unix socket (the gRPC-over-HTTP/2
 * protocol: a POST to `/<service>/<method>`, the request and the response each one message with a
 * 5-byte prefix — compressed flag, 32-bit length — the call's status in the trailers, or in the
 * headers of a response that has no message, "Trailers-Only").
 *
 * Why not grpc-js: loading it costs a one-shot command tens of milliseconds, and its channel adds
 * name resolution, load balancing and a connectivity state machine that a unix socket to one runtime
 * never needs. The connection is our own HTTP/2 client over node:net (h2/session.ts), not node:http2,
 * whose load brought tls, crypto and http. The container event stream speaks the same protocol
 * (event-stream.ts).
 *
 * Invariants:
 * - At most one connection (session) is in use at a time. One that closed, failed or was told to go
 *   away (GOAWAY) takes no new call: the next call opens a new one, so a runtime that restarted is
 *   reached again without the client being rebuilt; the calls in flight on the old one end
 *   UNAVAILABLE (the client's retry decides what happens next).
 * - Every call ends exactly once: with its response message's bytes, with the caller's
 *   `signal.reason` on abort, or with a CriError (the runtime's status code and message; UNAVAILABLE
 *   when the connection failed or closed first; DEADLINE_EXCEEDED "Deadline exceeded" when the
 *   deadline passed; RESOURCE_EXHAUSTED for a message over `maxMessageBytes` either way; INTERNAL for
 *   a compressed or malformed response).
 * - The deadline is sent as `grpc-timeout` (the runtime stops working on it) and kept by a local
 *   timer; a call ended early (deadline, abort, a refused message) is cancelled (RST_STREAM CANCEL).
 * - A connection holds the process open only while a call is in flight on it.
 * - `close()` ends the calls in flight with Cancelled and opens no new connection.
 */
import type net from 'node:net';
import { CriError, GrpcStatus } from './errors.js';
import { codeOfHttpStatus, statusOf } from './wire.js';
import { clampTimerMs } from '../../engine/timers.js';
import { ErrorCode, Flag, connect, type H2Session, type H2Stream, type IncomingHeaders } from './h2/session.js';

const PREFIX_BYTES = 5;
/** Per-stream and connection receive windows: a 16 MiB listing arrives without a window round trip per 64 KiB. */
const STREAM_WINDOW_BYTES = 4 * 1024 * 1024;
const CONNECTION_WINDOW_BYTES = 32 * 1024 * 1024;
/** Pauses between connection attempts while waiting for the runtime to answer (`waitForReady`). */
const RECONNECT_MS: readonly number[] = [100, 200, 400, 800, 1000];

/** One connection and what is known of it. */
interface Connection {
  session: H2Session;
  /** Set once the runtime's SETTINGS frame arrived: it answers as an HTTP/2 server. */
  ready: boolean;
  /** Set when the connection takes no new call (closed, failed, GOAWAY). */
  retired: boolean;
  /** Why it failed, for the calls that were on it. */
  error?: Error;
  calls: number;
  /** Called on every change of `ready` or `retired` (waitForReady). */
  readonly watchers: Set<() => void>;
}

/** `grpc-timeout`: at most 8 digits and a unit. */
function grpcTimeout(ms: number): string {
  const whole = Math.max(1, Math.ceil(ms));
  return whole < 1e8 ? `${whole}m` : `${Math.min(99_999_999, Math.ceil(whole / 1000))}S`;
}

/** The request message with its 5-byte prefix. */
function frame(message: Uint8Array): Buffer {
  const framed = Buffer.allocUnsafe(PREFIX_BYTES + message.length);
  framed[0] = 0;
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, PREFIX_BYTES);
  return framed;
}

/** How a call ends (before the CriError is made): a message's bytes, or a status. */
type Outcome = { message: Buffer } | { code: number; details: string; cause?: unknown };

/** The gRPC code of a stream reset without a status (as grpc-js maps them). */
function codeOfReset(rstCode: number): number {
  if (rstCode === ErrorCode.REFUSED_STREAM) return GrpcStatus.UNAVAILABLE;
  if (rstCode === ErrorCode.CANCEL) return GrpcStatus.CANCELLED;
  if (rstCode === ErrorCode.ENHANCE_YOUR_CALM) return GrpcStatus.RESOURCE_EXHAUSTED;
  if (rstCode === ErrorCode.INADEQUATE_SECURITY) return GrpcStatus.PERMISSION_DENIED;
  return GrpcStatus.INTERNAL;
}

/**
 * Reads one unary response from `stream`: collects the message (refusing one over `maxBytes` as
 * soon as its prefix shows it), then ends with the status. `connection` is asked why, when the
 * stream closes without a status.
 */
function readResponse(stream: H2Stream, maxBytes: number, connection: Connection, end: (outcome: Outcome) => void): void {
  const chunks: Buffer[] = [];
  let received = 0;
  let trailers: IncomingHeaders | undefined;
  let streamError: Error | undefined;
  const finish = (headers: IncomingHeaders): void => {
    const status = statusOf(headers);
    if (status === undefined) return end({ code: GrpcStatus.INTERNAL, details: 'the runtime ended the call without a status' });
    if (status.code !== GrpcStatus.OK) return end({ code: status.code, details: status.message });
    end(messageOf(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received)));
  };
  stream.on('response', (headers: IncomingHeaders, flags: number) => {
    const httpStatus = Number(headers[':status']);
    if (httpStatus !== 200) return end({ code: codeOfHttpStatus(httpStatus), details: `HTTP status ${httpStatus} from the runtime` });
    // Trailers-Only: the status in the headers, which end the stream
    if ((flags & Flag.END_STREAM) !== 0 || headers['grpc-status'] !== undefined) finish(headers);
  });
  stream.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    received += chunk.length;
    if (received < PREFIX_BYTES) return;
    const head = chunks[0]!.length >= PREFIX_BYTES ? chunks[0]! : Buffer.concat(chunks, received);
    const length = head.readUInt32BE(1);
    if (length > maxBytes) end({ code: GrpcStatus.RESOURCE_EXHAUSTED, details: `a response of ${length} bytes, over the ${maxBytes}-byte limit` });
  });
  // the status is read once every byte before it has been: at the end of the data
  stream.on('trailers', (headers: IncomingHeaders) => {
    trailers = headers;
  });
  stream.on('end', () => {
    if (trailers !== undefined) finish(trailers);
  });
  stream.on('error', (error: Error) => {
    streamError = error;
  });
  stream.on('close', () => {
    if (trailers !== undefined) return finish(trailers);
    const session = connection.session;
    const cause = connection.error ?? (streamError?.cause instanceof Error ? streamError.cause : streamError);
    if (connection.retired || session.destroyed || session.closed) end({ code: GrpcStatus.UNAVAILABLE, details: cause?.message ?? 'the runtime closed the connection', cause });
    else if (stream.rstCode === ErrorCode.NO_ERROR) end({ code: GrpcStatus.INTERNAL, details: 'the runtime ended the call without a status' });
    else end({ code: codeOfReset(stream.rstCode ?? ErrorCode.INTERNAL_ERROR), details: cause?.message ?? `the runtime reset the call (HTTP/2 code ${stream.rstCode})`, cause });
  });
}

/** The one message of a unary response (its prefix checked), or why there is none. */
function messageOf(bytes: Buffer): Outcome {
  if (bytes.length === 0) return { code: GrpcStatus.UNIMPLEMENTED, details: 'No message received' };
  if (bytes[0] !== 0) return { code: GrpcStatus.INTERNAL, details: 'a compressed response, which podctl did not offer to read' };
  const length = bytes.length >= PREFIX_BYTES ? bytes.readUInt32BE(1) : -1;
  if (length < 0 || bytes.length < PREFIX_BYTES + length) return { code: GrpcStatus.INTERNAL, details: 'the runtime ended the call inside its response' };
  if (bytes.length > PREFIX_BYTES + length) return { code: GrpcStatus.UNIMPLEMENTED, details: 'Too many responses received' };
  return { message: bytes.subarray(PREFIX_BYTES) };
}

export interface ChannelOptions {
  /** The runtime's unix socket (a filesystem path). */
  socketPath: string;
  /** Largest message sent or received (bytes); default 16 MiB. */
  maxMessageBytes?: number;
  /**
   * A connection to `socketPath` already made (endpoint.ts's probe, `keepConnection`): the first
   * connection goes over it when it is still open, else a new one is made. The channel owns it.
   */
  connection?: net.Socket;
}

export class Http2Channel {
  readonly #socketPath: string;
  readonly #maxBytes: number;
  #handed: net.Socket | undefined;
  #current: Connection | undefined;
  #closed = false;

  constructor(options: ChannelOptions) {
    this.#socketPath = options.socketPath;
    this.#maxBytes = options.maxMessageBytes ?? 16 * 1024 * 1024;
    this.#handed = options.connection;
  }

  /** The connection handed over, once, if it is still open; a closed one is let go. */
  #takeHanded(): net.Socket | undefined {
    const socket = this.#handed;
    this.#handed = undefined;
    if (socket === undefined || (!socket.destroyed && socket.readyState === 'open')) return socket;
    socket.destroy();
    return undefined;
  }

  /** The connection new calls go to: the current one, or a new one when it is retired. */
  #connection(): Connection {
    const current = this.#current;
    if (current !== undefined && !current.retired) return current;
    const session = connect(this.#socketPath, { initialWindowSize: STREAM_WINDOW_BYTES }, this.#takeHanded());
    const connection: Connection = { session, ready: false, retired: false, calls: 0, watchers: new Set() };
    const changed = (): void => {
      for (const watcher of [...connection.watchers]) watcher();
    };
    const retire = (error?: Error): void => {
      connection.error ??= error;
      connection.retired = true;
      if (this.#current === connection) this.#current = undefined;
      changed();
    };
    session.once('remoteSettings', () => {
      connection.ready = true;
      changed();
    });
    session.once('connect', () => {
      if (!session.destroyed) session.setLocalWindowSize(CONNECTION_WINDOW_BYTES);
    });
    session.on('error', (error: Error) => retire(error));
    session.once('goaway', () => retire());
    session.once('close', () => {
      retire();
      connection.watchers.clear();
    });
    session.unref();
    this.#current = connection;
    return connection;
  }

  /**
   * One unary call: `message` (encoded) to `path`, resolving with the response message's bytes.
   * `deadline` is an absolute time (ms since the epoch).
   */
  unary(method: string, path: string, message: Uint8Array, deadline: number, signal?: AbortSignal): Promise<Buffer> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#closed) return Promise.reject(new CriError(method, GrpcStatus.CANCELLED, 'client closed'));
    if (message.length > this.#maxBytes) {
      return Promise.reject(new CriError(method, GrpcStatus.RESOURCE_EXHAUSTED, `a request of ${message.length} bytes, over the ${this.#maxBytes}-byte limit`));
    }
    const remainingMs = deadline - Date.now();
    if (remainingMs <= 0) return Promise.reject(new CriError(method, GrpcStatus.DEADLINE_EXCEEDED, 'Deadline exceeded'));
    return new Promise<Buffer>((resolve, reject) => {
      const connection = this.#connection();
      let stream: H2Stream;
      try {
        stream = connection.session.request(
          {
            ':method': 'POST',
            ':path': path,
            'content-type': 'application/grpc',
            te: 'trailers',
            'grpc-timeout': grpcTimeout(remainingMs),
            'grpc-accept-encoding': 'identity',
            'user-agent': 'podctl',
          },
          { endStream: false },
        );
      } catch (error) {
        reject(new CriError(method, GrpcStatus.UNAVAILABLE, (error as Error).message, { cause: error }));
        return;
      }
      let settled = false;
      const end = (outcome: Outcome | { aborted: true }): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if ((connection.calls -= 1) === 0 && !connection.session.destroyed) connection.session.unref();
        if (!stream.closed && !('message' in outcome)) stream.close(ErrorCode.CANCEL);
        if ('aborted' in outcome) reject(signal?.reason);
        else if ('message' in outcome) resolve(outcome.message);
        else if (this.#closed) reject(new CriError(method, GrpcStatus.CANCELLED, 'client closed'));
        else reject(new CriError(method, outcome.code, outcome.details, outcome.cause === undefined ? undefined : { cause: outcome.cause }));
      };
      const onAbort = (): void => end({ aborted: true });
      const timer = setTimeout(() => end({ code: GrpcStatus.DEADLINE_EXCEEDED, details: 'Deadline exceeded' }), clampTimerMs(remainingMs));
      signal?.addEventListener('abort', onAbort, { once: true });
      if ((connection.calls += 1) === 1) connection.session.ref();
      readResponse(stream, this.#maxBytes, connection, end);
      stream.end(frame(message));
    });
  }

  /**
   * Resolves once the runtime has answered a connection as an HTTP/2 server (its SETTINGS frame);
   * a connection that fails first is opened again (after 100 ms, doubling to 1 s) until `timeoutMs`
   * has passed, then rejects with CriError('Connect', DeadlineExceeded). Rejects with `signal.reason`
   * on abort.
   */
  async waitForReady(timeoutMs: number, formatted: string, signal?: AbortSignal): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (let attempt = 0; ; attempt += 1) {
      if (signal?.aborted) throw signal.reason;
      if (this.#closed) throw new CriError('Connect', GrpcStatus.CANCELLED, 'client closed');
      const connection = this.#connection();
      const outcome = await this.#readiness(connection, until, signal);
      if (outcome === 'ready') return;
      const pauseMs = RECONNECT_MS[Math.min(attempt, RECONNECT_MS.length - 1)]!;
      if (outcome === 'timeout' || Date.now() + pauseMs >= until) {
        throw new CriError('Connect', GrpcStatus.DEADLINE_EXCEEDED, `no HTTP/2 answer within ${formatted}`, connection.error ? { cause: connection.error } : undefined);
      }
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }

  /** Waits until `connection` is ready ('ready'), fails ('failed') or `until` passes ('timeout'). */
  #readiness(connection: Connection, until: number, signal?: AbortSignal): Promise<'ready' | 'failed' | 'timeout'> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        if (signal?.aborted) done(() => reject(signal.reason));
        else if (connection.ready) done(() => resolve('ready'));
        else if (connection.retired) done(() => resolve('failed'));
        else return false;
        return true;
      };
      const done = (settle: () => void): void => {
        clearTimeout(timer);
        connection.watchers.delete(watcher);
        signal?.removeEventListener('abort', watcher);
        settle();
      };
      const watcher = (): void => void check();
      const timer = setTimeout(() => done(() => resolve('timeout')), clampTimerMs(Math.max(0, until - Date.now())));
      if (check()) return;
      connection.watchers.add(watcher);
      signal?.addEventListener('abort', watcher, { once: true });
    });
  }

  /** Closes the connection; calls in flight end with Cancelled. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#takeHanded()?.destroy();
    const current = this.#current;
    this.#current = undefined;
    current?.session.destroy();
  }
}
