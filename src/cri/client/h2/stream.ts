/**
 * One HTTP/2 stream of a client connection (session.ts), as node:http2's ClientHttp2Stream shows
 * itself to its users: events 'response' (headers, flags), 'data' (Buffer), 'trailers' (headers,
 * flags), 'end', 'error' (Error), 'close'; `rstCode` and `closed`; `end(data)` sends the last bytes and
 * END_STREAM, `close(code)` resets the stream. The session owns its state (`StreamState`).
 */
import { EventEmitter } from 'node:events';
import { ErrorCode } from './frames.js';

/** What the session keeps of a stream. */
export interface StreamState {
  readonly id: number;
  stream: H2Stream;
  /** The peer's window for what we send on it. */
  sendWindow: number;
  /** Our window: bytes the peer may still send, and bytes consumed since the last WINDOW_UPDATE. */
  recvLeft: number;
  recvUsed: number;
  /** Bytes to send, waiting for window; `outEnd` once `end()` was called; `endSent` once END_STREAM went. */
  out: Buffer[];
  outEnd: boolean;
  endSent: boolean;
  /** The peer sent END_STREAM. */
  remoteEnded: boolean;
  /** The response's headers came (later header blocks are trailers). */
  responded: boolean;
  closed: boolean;
}

interface StreamActions {
  end(data: Buffer | undefined): void;
  close(code: number): void;
}

export class H2Stream extends EventEmitter {
  /** Set when the stream closed (see the session's invariants). */
  closed = false;
  /** The code it closed with: NO_ERROR after both sides ended it; undefined while it is open. */
  rstCode: number | undefined;
  readonly #actions: StreamActions;

  constructor(
    readonly id: number,
    actions: StreamActions,
  ) {
    super();
    this.#actions = actions;
  }

  /** Sends `data` (if any) as the last bytes of the request, with END_STREAM. */
  end(data?: Buffer): void {
    this.#actions.end(data);
  }

  /** Resets the stream with `code` (RST_STREAM) unless it is closed already. */
  close(code: number = ErrorCode.NO_ERROR): void {
    this.#actions.close(code);
  }
}
