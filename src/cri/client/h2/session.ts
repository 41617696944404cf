/**
 * A minimal HTTP/2 client connection (RFC 9113) over a unix socket, prior knowledge, no TLS: what
 * gRPC to a CRI runtime needs, with the small part of node:http2's client API that channel.ts and
 * event-stream.ts use — loading node:http2 (with tls, crypto and http) cost a one-shot command more
 * than its own work (figures: docs/bench/startup.md).
 *
 * Owns: the connection preface and SETTINGS exchange, PING answers, GOAWAY, RST_STREAM, HEADERS +
 * CONTINUATION (HPACK: hpack.ts), DATA with padding, flow control both ways, frame size limits.
 * Push is refused (ENABLE_PUSH 0); the peer's MAX_CONCURRENT_STREAMS is not enforced here: a stream
 * over it is refused by the peer (REFUSED_STREAM), which the caller retries.
 *
 * Invariants:
 * - Every stream closes exactly once ('close', after its 'end' when the peer ended it), with `rstCode`
 *   set: NO_ERROR when both sides ended it, the code of a reset either side sent, REFUSED_STREAM for
 *   one above a GOAWAY's last stream id, CANCEL when the connection closed under it.
 * - A connection error (a malformed frame, an HPACK error, a flow-control violation, the socket's
 *   error or close) sends GOAWAY when it can, then closes every stream; `destroyed` is set before
 *   any stream's 'close', 'error' (with the cause) comes before them and 'close' after them.
 * - After a GOAWAY (either way) or `destroy()` no stream is opened: `request()` throws.
 * - Received DATA is consumed as it is handed on: the connection's and each stream's window are
 *   given back (WINDOW_UPDATE) once half of them is used. Sent DATA never exceeds the peer's
 *   connection or stream window, nor its SETTINGS_MAX_FRAME_SIZE; the rest waits for WINDOW_UPDATE.
 * - Every header block the peer sends is decoded in order, also for streams already closed, so the
 *   HPACK dynamic table stays the peer's.
 */
import { EventEmitter } from 'node:events';
import net from 'node:net';
import {
  DEFAULT_MAX_FRAME_BYTES,
  DEFAULT_WINDOW,
  ErrorCode,
  Flag,
  FrameReader,
  FrameType,
  H2Error,
  MAX_WINDOW,
  PREFACE,
  Setting,
  frameBytes,
  goawayFrame,
  settingsFrame,
  u32Frame,
  type Frame,
} from './frames.js';
import { HpackDecoder, encodeHeaders, type Field } from './hpack.js';
import { H2Stream, type StreamState } from './stream.js';

export { ErrorCode, Flag } from './frames.js';
export type { H2Stream } from './stream.js';

/** A header block as handed on: each name once, repeated names' values joined with ", ". */
export type IncomingHeaders = Record<string, string | undefined>;

export interface SessionOptions {
  /** Our SETTINGS_INITIAL_WINDOW_SIZE: each stream's receive window. Default 65,535. */
  initialWindowSize?: number;
  /** Our SETTINGS_HEADER_TABLE_SIZE: the largest HPACK dynamic table the peer may use. Default 4,096. */
  headerTableSize?: number;
}

/** Largest header block accepted (HEADERS + CONTINUATION): a runtime's are a few hundred bytes. */
const MAX_HEADER_BLOCK_BYTES = 1024 * 1024;

/** A header block still waiting for its CONTINUATION frames. */
interface PendingBlock {
  streamId: number;
  flags: number;
  chunks: Buffer[];
  bytes: number;
}

/** A request's fields: the pseudo-headers first, `:scheme` http and `:authority` localhost unless given (as node:http2's `connect('http://localhost')`). */
function requestFields(headers: Readonly<Record<string, string>>): Field[] {
  const entries = Object.entries(headers);
  const pseudo: Field[] = [
    [':scheme', headers[':scheme'] ?? 'http'],
    [':authority', headers[':authority'] ?? 'localhost'],
  ];
  for (const [name, value] of entries) if (name.startsWith(':') && name !== ':scheme' && name !== ':authority') pseudo.push([name, value]);
  return [...pseudo, ...entries.filter(([name]) => !name.startsWith(':'))];
}

export class H2Session extends EventEmitter {
  /** Set once the connection is closed or closing: no stream runs on it any more. */
  destroyed = false;
  /** Set once it takes no new stream (GOAWAY either way, destroyed). */
  closed = false;
  readonly #socket: net.Socket;
  readonly #reader = new FrameReader();
  readonly #decoder: HpackDecoder;
  readonly #streams = new Map<number, StreamState>();
  readonly #localWindow: number;
  #nextId = 1;
  #block: PendingBlock | undefined;
  /** The peer's SETTINGS that matter to what we send. */
  #peerMaxFrame = DEFAULT_MAX_FRAME_BYTES;
  #peerInitialWindow = DEFAULT_WINDOW;
  /** Our HPACK blocks must start with a table size update (the peer changed SETTINGS_HEADER_TABLE_SIZE). */
  #tableSizeUpdate = false;
  /** Connection send window (the peer's), receive window (ours): size, left, used since the last update. */
  #sendWindow = DEFAULT_WINDOW;
  #recvWindow = DEFAULT_WINDOW;
  #recvLeft = DEFAULT_WINDOW;
  #recvUsed = 0;
  readonly #out: Buffer[] = [];
  #writeScheduled = false;

  constructor(socket: net.Socket, options: SessionOptions = {}) {
    super();
    this.#socket = socket;
    this.#localWindow = options.initialWindowSize ?? DEFAULT_WINDOW;
    this.#decoder = new HpackDecoder(options.headerTableSize);
    const settings: Array<[number, number]> = [[Setting.ENABLE_PUSH, 0]];
    if (options.headerTableSize !== undefined) settings.push([Setting.HEADER_TABLE_SIZE, options.headerTableSize]);
    if (this.#localWindow !== DEFAULT_WINDOW) settings.push([Setting.INITIAL_WINDOW_SIZE, this.#localWindow]);
    this.#write(Buffer.concat([PREFACE, settingsFrame(settings)]));
    // a socket handed over already connected (endpoint.ts's probe) says so on the next tick
    if (socket.connecting) socket.once('connect', () => this.emit('connect', this, socket));
    else process.nextTick(() => this.emit('connect', this, socket));
    socket.on('data', (chunk: Buffer) => this.#receive(chunk));
    socket.on('error', (error: Error) => this.destroy(error));
    socket.on('close', () => this.destroy());
  }

  /** Opens a stream with `headers` (names lower-case). Throws when the connection takes no new stream. */
  request(headers: Readonly<Record<string, string>>, options: { endStream?: boolean } = {}): H2Stream {
    if (this.closed) throw new Error(this.destroyed ? 'the HTTP/2 connection is closed' : 'the runtime sent GOAWAY: no new call on this connection');
    const id = this.#nextId;
    this.#nextId += 2;
    const endStream = options.endStream ?? false;
    const state: StreamState = {
      id,
      stream: undefined as unknown as H2Stream,
      sendWindow: this.#peerInitialWindow,
      recvLeft: this.#localWindow,
      recvUsed: 0,
      out: [],
      outEnd: endStream,
      endSent: endStream,
      remoteEnded: false,
      responded: false,
      closed: false,
    };
    state.stream = new H2Stream(id, {
      end: (data) => this.#end(state, data),
      close: (code) => this.#reset(state, code),
    });
    this.#streams.set(id, state);
    this.#sendHeaders(id, requestFields(headers), endStream);
    return state.stream;
  }

  /** Holds the process open while the connection is (node:http2's meaning). */
  ref(): void {
    if (!this.destroyed) this.#socket.ref();
  }

  unref(): void {
    if (!this.destroyed) this.#socket.unref();
  }

  /** Raises the connection's receive window to `size` bytes (never lowers it). */
  setLocalWindowSize(size: number): void {
    const delta = Math.min(size, MAX_WINDOW) - this.#recvWindow;
    if (delta <= 0 || this.destroyed) return;
    this.#recvWindow += delta;
    this.#recvLeft += delta;
    this.#write(u32Frame(FrameType.WINDOW_UPDATE, 0, delta));
  }

  /**
   * Closes the connection now (GOAWAY NO_ERROR sent when the socket takes it); every open stream
   * closes with CANCEL; `error`, if given, is emitted first. Idempotent.
   */
  destroy(error?: Error, code: number = ErrorCode.NO_ERROR): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.closed = true;
    const open = [...this.#streams.values()];
    this.#streams.clear();
    for (const state of open) {
      state.closed = true;
      state.stream.closed = true;
      state.stream.rstCode = ErrorCode.CANCEL;
    }
    this.#shutSocket(code);
    process.nextTick(() => {
      if (error !== undefined && this.listenerCount('error') > 0) this.emit('error', error);
      for (const state of open) state.stream.emit('close');
      this.emit('close');
    });
  }

  /** Flushes what is queued, sends GOAWAY and ends the socket; it is destroyed once that is written. */
  #shutSocket(code: number): void {
    const socket = this.#socket;
    socket.unref();
    if (socket.destroyed || !socket.writable) {
      socket.destroy();
      return;
    }
    const queued = this.#out.splice(0);
    socket.end(Buffer.concat([...queued, goawayFrame(code)]), () => socket.destroy());
  }

  /** Queues bytes for the socket: what one tick queues goes in one write. */
  #write(bytes: Buffer): void {
    if (this.destroyed) return;
    this.#out.push(bytes);
    if (this.#writeScheduled) return;
    this.#writeScheduled = true;
    process.nextTick(() => {
      this.#writeScheduled = false;
      if (this.destroyed || this.#out.length === 0) return;
      const bytes = this.#out.length === 1 ? this.#out[0]! : Buffer.concat(this.#out);
      this.#out.length = 0;
      this.#socket.write(bytes);
    });
  }

  /** A header block as HEADERS and, past the peer's frame size, CONTINUATION frames. */
  #sendHeaders(id: number, fields: Field[], endStream: boolean): void {
    let block = encodeHeaders(fields);
    // we never index: a table size of 0 is always within what the peer allows
    if (this.#tableSizeUpdate) block = Buffer.concat([Buffer.of(0x20), block]);
    this.#tableSizeUpdate = false;
    const max = this.#peerMaxFrame;
    for (let at = 0; at === 0 || at < block.length; at += max) {
      const last = at + max >= block.length;
      const flags = (last ? Flag.END_HEADERS : 0) | (at === 0 && endStream ? Flag.END_STREAM : 0);
      this.#write(frameBytes(at === 0 ? FrameType.HEADERS : FrameType.CONTINUATION, flags, id, block.subarray(at, at + max)));
    }
  }

  /** The stream's `end(data)`: queues the last bytes it sends, and END_STREAM. */
  #end(state: StreamState, data: Buffer | undefined): void {
    if (state.closed || state.outEnd) return;
    if (data !== undefined && data.length > 0) state.out.push(data);
    state.outEnd = true;
    this.#flush(state);
  }

  /** Sends what `state` has queued, within the windows and the peer's frame size. */
  #flush(state: StreamState): void {
    while (!state.closed && state.out.length > 0) {
      const next = state.out[0]!;
      const n = Math.min(next.length, state.sendWindow, this.#sendWindow, this.#peerMaxFrame);
      if (n <= 0) return;
      const last = n === next.length && state.out.length === 1;
      if (n === next.length) state.out.shift();
      else state.out[0] = next.subarray(n);
      state.sendWindow -= n;
      this.#sendWindow -= n;
      const endStream = last && state.outEnd;
      this.#write(frameBytes(FrameType.DATA, endStream ? Flag.END_STREAM : 0, state.id, next.subarray(0, n)));
      if (endStream) state.endSent = true;
    }
    if (state.closed || !state.outEnd || state.endSent) return;
    state.endSent = true;
    this.#write(frameBytes(FrameType.DATA, Flag.END_STREAM, state.id));
    if (state.remoteEnded) this.#close(state, ErrorCode.NO_ERROR);
  }

  /** Resets the stream (RST_STREAM `code`) and closes it. */
  #reset(state: StreamState, code: number): void {
    if (state.closed) return;
    this.#write(u32Frame(FrameType.RST_STREAM, state.id, code));
    this.#close(state, code);
  }

  /** Closes the stream with `rstCode` `code`; the connection too once it takes no new stream and none is left. */
  #close(state: StreamState, code: number, error?: Error): void {
    if (state.closed) return;
    state.closed = true;
    this.#streams.delete(state.id);
    state.stream.closed = true;
    state.stream.rstCode = code;
    process.nextTick(() => {
      if (error !== undefined && state.stream.listenerCount('error') > 0) state.stream.emit('error', error);
      state.stream.emit('close');
    });
    if (this.closed && this.#streams.size === 0) this.destroy();
  }

  /** Cuts the socket's bytes into frames; a connection error ends the connection. */
  #receive(chunk: Buffer): void {
    if (this.destroyed) return;
    try {
      this.#reader.push(chunk, (frame) => {
        if (!this.destroyed) this.#onFrame(frame);
      });
    } catch (error) {
      const code = error instanceof H2Error ? error.code : ErrorCode.INTERNAL_ERROR;
      this.destroy(error instanceof Error ? error : new Error(String(error)), code);
    }
  }

  #onFrame(frame: Frame): void {
    if (this.#block !== undefined && (frame.type !== FrameType.CONTINUATION || frame.streamId !== this.#block.streamId)) {
      throw new H2Error(ErrorCode.PROTOCOL_ERROR, 'a header block interrupted before its END_HEADERS');
    }
    switch (frame.type) {
      case FrameType.DATA:
        return this.#onData(frame);
      case FrameType.HEADERS:
        return this.#onHeaders(frame);
      case FrameType.CONTINUATION:
        return this.#onContinuation(frame);
      case FrameType.RST_STREAM:
        return this.#onReset(frame);
      case FrameType.SETTINGS:
        return this.#onSettings(frame);
      case FrameType.PING:
        return this.#onPing(frame);
      case FrameType.GOAWAY:
        return this.#onGoaway(frame);
      case FrameType.WINDOW_UPDATE:
        return this.#onWindowUpdate(frame);
      case FrameType.PUSH_PROMISE:
        throw new H2Error(ErrorCode.PROTOCOL_ERROR, 'a PUSH_PROMISE, though push was disabled');
      case FrameType.PRIORITY:
        if (frame.payload.length !== 5) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, 'a PRIORITY frame that is not 5 bytes');
        return;
      default:
      // unknown frame types are ignored (§4.1)
    }
  }

  /** A frame's payload without its padding (PADDED flag), and without `skip` bytes after the pad length. */
  static #unpadded(frame: Frame, skip = 0): Buffer {
    if ((frame.flags & Flag.PADDED) === 0) {
      if (frame.payload.length < skip) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, 'a frame shorter than its fields');
      return frame.payload.subarray(skip);
    }
    const pad = frame.payload[0];
    if (pad === undefined || 1 + skip + pad > frame.payload.length) throw new H2Error(ErrorCode.PROTOCOL_ERROR, 'padding longer than its frame');
    return frame.payload.subarray(1 + skip, frame.payload.length - pad);
  }

  #onData(frame: Frame): void {
    if (frame.streamId === 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, 'DATA on stream 0');
    const size = frame.payload.length;
    if (size > this.#recvLeft) throw new H2Error(ErrorCode.FLOW_CONTROL_ERROR, 'DATA over the connection window');
    this.#recvLeft -= size;
    // consumed at once: handed on below, or dropped for a stream that is gone
    this.#recvUsed += size;
    if (this.#recvUsed >= this.#recvWindow / 2) {
      this.#write(u32Frame(FrameType.WINDOW_UPDATE, 0, this.#recvUsed));
      this.#recvLeft += this.#recvUsed;
      this.#recvUsed = 0;
    }
    const state = this.#streams.get(frame.streamId);
    const data = H2Session.#unpadded(frame);
    if (state === undefined || state.remoteEnded) return;
    if (size > state.recvLeft) return this.#reset(state, ErrorCode.FLOW_CONTROL_ERROR);
    if (!state.responded) return this.#reset(state, ErrorCode.PROTOCOL_ERROR);
    state.recvLeft -= size;
    state.recvUsed += size;
    const endStream = (frame.flags & Flag.END_STREAM) !== 0;
    if (data.length > 0) state.stream.emit('data', data);
    if (state.closed) return;
    if (endStream) return this.#remoteEnd(state);
    if (state.recvUsed >= this.#localWindow / 2) {
      this.#write(u32Frame(FrameType.WINDOW_UPDATE, state.id, state.recvUsed));
      state.recvLeft += state.recvUsed;
      state.recvUsed = 0;
    }
  }

  /** The peer ended its side: 'end', then the stream closes once ours is ended too (or is reset: we have nothing more to say). */
  #remoteEnd(state: StreamState): void {
    state.remoteEnded = true;
    state.stream.emit('end');
    if (state.closed) return;
    if (state.endSent) this.#close(state, ErrorCode.NO_ERROR);
    else this.#reset(state, ErrorCode.NO_ERROR);
  }

  #onHeaders(frame: Frame): void {
    if (frame.streamId === 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, 'HEADERS on stream 0');
    const fragment = H2Session.#unpadded(frame, (frame.flags & Flag.PRIORITY) !== 0 ? 5 : 0);
    this.#block = { streamId: frame.streamId, flags: frame.flags, chunks: [fragment], bytes: fragment.length };
    if ((frame.flags & Flag.END_HEADERS) !== 0) this.#onBlock();
  }

  #onContinuation(frame: Frame): void {
    const block = this.#block;
    if (block === undefined) throw new H2Error(ErrorCode.PROTOCOL_ERROR, 'a CONTINUATION without HEADERS');
    block.chunks.push(frame.payload);
    block.bytes += frame.payload.length;
    if (block.bytes > MAX_HEADER_BLOCK_BYTES) throw new H2Error(ErrorCode.ENHANCE_YOUR_CALM, `a header block over ${MAX_HEADER_BLOCK_BYTES} bytes`);
    if ((frame.flags & Flag.END_HEADERS) !== 0) this.#onBlock();
  }

  /** A whole header block: decoded (always), then the stream's response headers or trailers. */
  #onBlock(): void {
    const block = this.#block!;
    this.#block = undefined;
    let fields: Field[];
    try {
      fields = this.#decoder.decode(block.chunks.length === 1 ? block.chunks[0]! : Buffer.concat(block.chunks));
    } catch (error) {
      throw new H2Error(ErrorCode.COMPRESSION_ERROR, `a header block that cannot be decoded: ${(error as Error).message}`);
    }
    const state = this.#streams.get(block.streamId);
    if (state === undefined || state.remoteEnded) return;
    const headers: IncomingHeaders = {};
    for (const [name, value] of fields) {
      const seen = headers[name];
      headers[name] = seen === undefined ? value : `${seen}, ${value}`;
    }
    const endStream = (block.flags & Flag.END_STREAM) !== 0;
    if (!state.responded) {
      // an informational response (1xx) is not the response
      if (/^1\d\d$/.test(headers[':status'] ?? '') && !endStream) return;
      state.responded = true;
      state.stream.emit('response', headers, block.flags);
    } else if (!endStream) {
      return this.#reset(state, ErrorCode.PROTOCOL_ERROR);
    } else state.stream.emit('trailers', headers, block.flags);
    if (endStream && !state.closed) this.#remoteEnd(state);
  }

  #onReset(frame: Frame): void {
    if (frame.streamId === 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, 'RST_STREAM on stream 0');
    if (frame.payload.length !== 4) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, 'a RST_STREAM that is not 4 bytes');
    const state = this.#streams.get(frame.streamId);
    if (state !== undefined) this.#close(state, frame.payload.readUInt32BE(0));
  }

  #onSettings(frame: Frame): void {
    if (frame.streamId !== 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, 'SETTINGS on a stream');
    if ((frame.flags & Flag.ACK) !== 0) {
      if (frame.payload.length !== 0) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, 'a SETTINGS ACK with a payload');
      return;
    }
    if (frame.payload.length % 6 !== 0) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, 'a SETTINGS frame not made of 6-byte settings');
    const settings: Record<number, number> = {};
    for (let at = 0; at < frame.payload.length; at += 6) {
      const id = frame.payload.readUInt16BE(at);
      const value = frame.payload.readUInt32BE(at + 2);
      this.#applySetting(id, value);
      settings[id] = value;
    }
    this.#write(frameBytes(FrameType.SETTINGS, Flag.ACK, 0));
    this.emit('remoteSettings', settings);
    for (const state of [...this.#streams.values()]) this.#flush(state);
  }

  #applySetting(id: number, value: number): void {
    if (id === Setting.INITIAL_WINDOW_SIZE) {
      if (value > MAX_WINDOW) throw new H2Error(ErrorCode.FLOW_CONTROL_ERROR, `SETTINGS_INITIAL_WINDOW_SIZE ${value}`);
      // a change applies to every open stream's window (§6.9.2)
      const delta = value - this.#peerInitialWindow;
      this.#peerInitialWindow = value;
      for (const state of this.#streams.values()) {
        state.sendWindow += delta;
        if (state.sendWindow > MAX_WINDOW) throw new H2Error(ErrorCode.FLOW_CONTROL_ERROR, 'a stream window over 2^31-1');
      }
    } else if (id === Setting.MAX_FRAME_SIZE) {
      if (value < DEFAULT_MAX_FRAME_BYTES || value > 0xffffff) throw new H2Error(ErrorCode.PROTOCOL_ERROR, `SETTINGS_MAX_FRAME_SIZE ${value}`);
      this.#peerMaxFrame = value;
    } else if (id === Setting.HEADER_TABLE_SIZE) {
      this.#tableSizeUpdate = true;
    }
  }

  #onPing(frame: Frame): void {
    if (frame.streamId !== 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, 'PING on a stream');
    if (frame.payload.length !== 8) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, 'a PING that is not 8 bytes');
    if ((frame.flags & Flag.ACK) === 0) this.#write(frameBytes(FrameType.PING, Flag.ACK, 0, frame.payload));
  }

  /** GOAWAY: no new stream; those above its last stream id are refused; an error code ends the connection now. */
  #onGoaway(frame: Frame): void {
    if (frame.streamId !== 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, 'GOAWAY on a stream');
    if (frame.payload.length < 8) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, 'a GOAWAY shorter than 8 bytes');
    const lastStreamId = frame.payload.readUInt32BE(0) & MAX_WINDOW;
    const code = frame.payload.readUInt32BE(4);
    const debug = frame.payload.subarray(8);
    this.closed = true;
    this.emit('goaway', code, lastStreamId, debug);
    for (const state of [...this.#streams.values()]) {
      if (state.id > lastStreamId) this.#close(state, ErrorCode.REFUSED_STREAM);
    }
    if (code !== ErrorCode.NO_ERROR) {
      const detail = debug.length > 0 ? `: ${debug.toString('latin1')}` : '';
      this.destroy(new Error(`the runtime closed the connection (HTTP/2 GOAWAY code ${code}${detail})`));
    } else if (this.#streams.size === 0) this.destroy();
  }

  #onWindowUpdate(frame: Frame): void {
    if (frame.payload.length !== 4) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, 'a WINDOW_UPDATE that is not 4 bytes');
    const increment = frame.payload.readUInt32BE(0) & MAX_WINDOW;
    if (frame.streamId === 0) {
      if (increment === 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, 'a WINDOW_UPDATE of 0');
      this.#sendWindow += increment;
      if (this.#sendWindow > MAX_WINDOW) throw new H2Error(ErrorCode.FLOW_CONTROL_ERROR, 'a connection window over 2^31-1');
      for (const state of [...this.#streams.values()]) this.#flush(state);
      return;
    }
    const state = this.#streams.get(frame.streamId);
    if (state === undefined) return;
    state.sendWindow += increment;
    if (increment === 0 || state.sendWindow > MAX_WINDOW) return this.#reset(state, increment === 0 ? ErrorCode.PROTOCOL_ERROR : ErrorCode.FLOW_CONTROL_ERROR);
    this.#flush(state);
  }
}

/** Opens a connection to the unix socket `socketPath` (prior knowledge: HTTP/2 from the first byte). */
/**
 * A connection to `socketPath`; over `socket` instead when one is given that is connected or
 * connecting and not yet read from (the caller hands it over).
 */
export function connect(socketPath: string, options: SessionOptions = {}, socket?: net.Socket): H2Session {
  return new H2Session(socket ?? net.connect(socketPath), options);
}
