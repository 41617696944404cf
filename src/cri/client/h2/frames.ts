/**
 * HTTP/2 frames (RFC 9113 §4, §6): the constants, writing the frames a client sends, and cutting the
 * bytes a connection receives into frames.
 *
 * Invariants: `FrameReader` hands on each frame once, whole, in order, however the bytes were split;
 * a frame longer than `maxFrameBytes` (the largest we accept: SETTINGS_MAX_FRAME_SIZE, 16 KiB, which we
 * never raise) throws, a FRAME_SIZE_ERROR for the connection. Writers never split: callers give
 * payloads within the peer's limit.
 */

export const FrameType = {
  DATA: 0,
  HEADERS: 1,
  PRIORITY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PUSH_PROMISE: 5,
  PING: 6,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
  CONTINUATION: 9,
} as const;

export const Flag = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;

export const Setting = {
  HEADER_TABLE_SIZE: 1,
  ENABLE_PUSH: 2,
  MAX_CONCURRENT_STREAMS: 3,
  INITIAL_WINDOW_SIZE: 4,
  MAX_FRAME_SIZE: 5,
  MAX_HEADER_LIST_SIZE: 6,
} as const;

/** Error codes (RFC 9113 §7); the names node:http2 gives them as constants (NGHTTP2_*). */
export const ErrorCode = {
  NO_ERROR: 0,
  PROTOCOL_ERROR: 1,
  INTERNAL_ERROR: 2,
  FLOW_CONTROL_ERROR: 3,
  SETTINGS_TIMEOUT: 4,
  STREAM_CLOSED: 5,
  FRAME_SIZE_ERROR: 6,
  REFUSED_STREAM: 7,
  CANCEL: 8,
  COMPRESSION_ERROR: 9,
  CONNECT_ERROR: 10,
  ENHANCE_YOUR_CALM: 11,
  INADEQUATE_SECURITY: 12,
  HTTP_1_1_REQUIRED: 13,
} as const;

/** The client's connection preface (§3.4), sent before its SETTINGS. */
export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const HEADER_BYTES = 9;
/** SETTINGS_MAX_FRAME_SIZE's initial value: the largest frame either side may send until told more. */
export const DEFAULT_MAX_FRAME_BYTES = 16_384;
/** Largest flow-control window (§6.9.1). */
export const MAX_WINDOW = 0x7fffffff;
/** Flow-control windows before SETTINGS or WINDOW_UPDATE say otherwise (§6.9.2). */
export const DEFAULT_WINDOW = 65_535;

/** A connection error (RFC 9113 §5.4.1): its code goes to the peer in GOAWAY, its message to the calls. */
export class H2Error extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'H2Error';
  }
}

export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/** One frame: its 9-byte header and `payload`. */
export function frameBytes(type: number, flags: number, streamId: number, payload: Uint8Array = Buffer.alloc(0)): Buffer {
  const out = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
  // by hand, as `push` reads them: Buffer's writers are compiled on first use
  const length = payload.length;
  out[0] = length >>> 16;
  out[1] = length >>> 8;
  out[2] = length;
  out[3] = type;
  out[4] = flags;
  out[5] = (streamId >>> 24) & 0x7f;
  out[6] = streamId >>> 16;
  out[7] = streamId >>> 8;
  out[8] = streamId;
  out.set(payload, HEADER_BYTES);
  return out;
}

/** A SETTINGS frame with `settings` (id, value pairs). */
export function settingsFrame(settings: ReadonlyArray<readonly [number, number]>): Buffer {
  const payload = Buffer.allocUnsafe(6 * settings.length);
  settings.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, 6 * i);
    payload.writeUInt32BE(value, 6 * i + 2);
  });
  return frameBytes(FrameType.SETTINGS, 0, 0, payload);
}

/** A frame whose payload is one 32-bit number (WINDOW_UPDATE, RST_STREAM). */
export function u32Frame(type: number, streamId: number, value: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(value >>> 0, 0);
  return frameBytes(type, 0, streamId, payload);
}

/** A GOAWAY frame: the last stream id we processed (0: we process none of the peer's) and the code. */
export function goawayFrame(code: number): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32BE(code, 4);
  return frameBytes(FrameType.GOAWAY, 0, 0, payload);
}

/** Cuts received bytes into frames. */
export class FrameReader {
  #pending: Buffer | undefined;

  constructor(readonly maxFrameBytes = DEFAULT_MAX_FRAME_BYTES) {}

  /** Calls `onFrame` for each whole frame `chunk` completes; keeps the rest. Throws on an oversized frame. */
  push(chunk: Buffer, onFrame: (frame: Frame) => void): void {
    const bytes = this.#pending === undefined ? chunk : Buffer.concat([this.#pending, chunk]);
    this.#pending = undefined;
    let at = 0;
    while (bytes.length - at >= HEADER_BYTES) {
      // the 24-bit length and 31-bit stream id read by hand: Buffer's readers are compiled on first use
      const length = (bytes[at]! << 16) | (bytes[at + 1]! << 8) | bytes[at + 2]!;
      if (length > this.maxFrameBytes) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, `a frame of ${length} bytes, over ${this.maxFrameBytes}`);
      if (bytes.length - at - HEADER_BYTES < length) break;
      const start = at + HEADER_BYTES;
      const frame: Frame = {
        type: bytes[at + 3]!,
        flags: bytes[at + 4]!,
        streamId: ((bytes[at + 5]! & 0x7f) << 24) | (bytes[at + 6]! << 16) | (bytes[at + 7]! << 8) | bytes[at + 8]!,
        payload: bytes.subarray(start, start + length),
      };
      at = start + length;
      onFrame(frame);
    }
    if (at < bytes.length) this.#pending = at === 0 ? bytes : Buffer.from(bytes.subarray(at));
  }
}
