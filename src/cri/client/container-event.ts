/**
 * What a follower of the node reads of a CRI container event (GetContainerEvents'
 * ContainerEventResponse): the container, the kind of event, the pod it belongs to, its sandbox's id
 * and state, and the event's own container's status (state, times, exit code, reason) — nothing
 * else. The runtime sends the pod's whole sandbox status and every container's status with each
 * event; a drain of hundreds of pods makes thousands of events, and a reader that needs to know
 * which pod changed and how should not build all of that for each one.
 *
 * Invariants:
 * - Reads the protobuf wire format directly and skips every field it does not name (so a runtime
 *   that sends fields this version does not know is read the same way).
 * - Allocates nothing per field: only the summary and the strings it keeps (WireCursor).
 * - The pod's UID is the sandbox's `io.kubernetes.pod.uid` label, else its metadata's uid (as the
 *   kubelet names it); undefined when the event names no sandbox.
 * - `status` is the one container status whose id is the event's container id (containerd sends
 *   every container of the pod; a sandbox's own event has none of its id), never another's.
 * - A malformed message throws (grpc-js then ends the stream with an error, as for any message it
 *   cannot decode).
 */
import { LABEL_POD_UID } from './kubelet-labels.js';

/** The status of an event's own container, as the event reports it (CRI ContainerStatus). */
export interface EventContainerStatus {
  /** CRI ContainerState: 0 created, 1 running, 2 exited, 3 unknown. */
  state: number;
  /** Nanoseconds since the epoch; 0 when not reported. */
  startedAt: bigint;
  finishedAt: bigint;
  exitCode: number;
  reason: string;
}

/** A container event, as far as a follower of the node reads it. */
export interface ContainerEventSummary {
  /** The container's id; for a sandbox's own event (containerd, CRI-O), the sandbox's id. */
  containerId: string;
  /** CRI ContainerEventType: 0 created, 1 started, 2 stopped, 3 deleted. */
  containerEventType: number;
  /** The pod the container belongs to, or undefined when the event names no sandbox. */
  podUid: string | undefined;
  /** The id of the sandbox whose status the event carries (absent when it carries none). */
  sandboxId?: string;
  /** That sandbox's CRI PodSandboxState: 0 ready, 1 not ready (absent with no sandbox status). */
  sandboxState?: number;
  /** The event's own container's status among the event's container statuses, when it is there. */
  status?: EventContainerStatus;
}

// field numbers of the CRI v1 messages read here (api.proto)
const EVENT_CONTAINER_ID = 1;
const EVENT_TYPE = 2;
const EVENT_SANDBOX_STATUS = 4;
const EVENT_CONTAINER_STATUSES = 5;
const SANDBOX_ID = 1;
const SANDBOX_METADATA = 2;
const SANDBOX_STATE = 3;
const STATUS_ID = 1;
const STATUS_STATE = 3;
const STATUS_STARTED_AT = 5;
const STATUS_FINISHED_AT = 6;
const STATUS_EXIT_CODE = 7;
const STATUS_REASON = 10;
const SANDBOX_LABELS = 7;
const METADATA_UID = 2;
const MAP_KEY = 1;
const MAP_VALUE = 2;

// protobuf wire types
const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const START_GROUP = 3;
const END_GROUP = 4;
const FIXED32 = 5;
/** Nesting of groups skipped before a message is judged malformed (as protobuf runtimes do). */
const MAX_GROUP_DEPTH = 100;

/** The label key read, as bytes: each event's labels are compared to it without decoding every key. */
const POD_UID_KEY = new TextEncoder().encode(LABEL_POD_UID);

/**
 * A position in one message's bytes and the few reads the summary needs. Nothing is allocated
 * but the strings kept: a tag is one number, a skipped field only moves the position, and bytes
 * are compared where they lie (a generic reader builds an array per tag and a view per skip:
 * ~10 KB of garbage per event of a drain, most of a follower's allocation while it follows one).
 * Every read is checked against the end of the message it is in; a malformed message throws.
 */
class WireCursor {
  pos = 0;
  /** The last varint's low and high 32 bits (unsigned), set by `varint`. */
  lo = 0;
  hi = 0;
  readonly bytes: Uint8Array;
  readonly #text: Buffer;

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
    this.#text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  #next(): number {
    if (this.pos >= this.bytes.length) throw new RangeError('premature end of a container event');
    return this.bytes[this.pos++]!;
  }

  /** Reads a varint (at most 10 bytes) into `lo` and `hi`. */
  varint(): void {
    let lo = 0;
    let byte = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      byte = this.#next();
      lo |= (byte & 0x7f) << shift;
      if (byte < 0x80) {
        this.lo = lo >>> 0;
        this.hi = 0;
        return;
      }
    }
    byte = this.#next();
    lo |= (byte & 0x0f) << 28;
    let hi = (byte & 0x7f) >> 4;
    for (let shift = 3; byte >= 0x80; shift += 7) {
      if (shift > 31) throw new RangeError('invalid varint in a container event');
      byte = this.#next();
      hi |= (byte & 0x7f) << shift;
    }
    this.lo = lo >>> 0;
    this.hi = hi >>> 0;
  }

  uint32(): number {
    this.varint();
    return this.lo;
  }

  int32(): number {
    this.varint();
    return this.lo | 0;
  }

  int64(): bigint {
    this.varint();
    return BigInt.asIntN(64, (BigInt(this.hi) << 32n) | BigInt(this.lo));
  }

  /** Reads a length; returns where the field it prefixes ends (never past `end`). */
  delimited(end: number): number {
    const length = this.uint32();
    const fieldEnd = this.pos + length;
    if (fieldEnd > end) throw new RangeError('premature end of a container event');
    return fieldEnd;
  }

  /** Moves past the value of a field this reader does not keep. */
  skip(wireType: number, field: number, end: number, depth = 0): void {
    switch (wireType) {
      case VARINT:
        this.varint();
        return;
      case FIXED64:
        this.pos += 8;
        break;
      case FIXED32:
        this.pos += 4;
        break;
      case LENGTH_DELIMITED:
        this.pos = this.delimited(end);
        return;
      case START_GROUP: {
        if (depth >= MAX_GROUP_DEPTH) throw new RangeError('groups nested too deep in a container event');
        for (;;) {
          const tag = this.uint32();
          if ((tag & 7) === END_GROUP) {
            if (tag >>> 3 !== field) throw new RangeError('mismatched group in a container event');
            break;
          }
          this.skip(tag & 7, tag >>> 3, end, depth + 1);
        }
        break;
      }
      default:
        throw new RangeError(`wire type ${wireType} in a container event`);
    }
    if (this.pos > end) throw new RangeError('premature end of a container event');
  }

  /**
   * Moves past a length-delimited value, which is read later or only compared where it lies;
   * returns where it starts (it ends where the cursor is after).
   */
  take(end: number): number {
    const valueEnd = this.delimited(end);
    const start = this.pos;
    this.pos = valueEnd;
    return start;
  }

  /** Checks that the fields read from a message ended where the message does. */
  ended(end: number): void {
    if (this.pos !== end) throw new RangeError('premature end of a container event');
  }

  string(start: number, end: number): string {
    return this.#text.toString('utf8', start, end);
  }

  /** Whether the bytes from `start` to `end` are `other`'s. */
  equals(start: number, end: number, other: Uint8Array, otherStart = 0, otherEnd = other.length): boolean {
    if (end - start !== otherEnd - otherStart) return false;
    for (let i = 0; i < end - start; i += 1) if (this.bytes[start + i] !== other[otherStart + i]) return false;
    return true;
  }
}

export function decodeContainerEventSummary(bytes: Uint8Array): ContainerEventSummary {
  const wire = new WireCursor(bytes);
  const end = bytes.length;
  const event: ContainerEventSummary = { containerId: '', containerEventType: 0, podUid: undefined };
  // the container's id is kept as a place (compared to the statuses' ids where it lies), and the
  // statuses, which may come before it on the wire, are read last
  let idStart = 0;
  let idEnd = 0;
  let statuses: number[] | undefined;
  while (wire.pos < end) {
    const tag = wire.uint32();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === EVENT_CONTAINER_ID && wireType === LENGTH_DELIMITED) {
      idStart = wire.take(end);
      idEnd = wire.pos;
    } else if (field === EVENT_TYPE && wireType === VARINT) event.containerEventType = wire.int32();
    else if (field === EVENT_SANDBOX_STATUS && wireType === LENGTH_DELIMITED) readSandbox(wire, wire.delimited(end), event);
    else if (field === EVENT_CONTAINER_STATUSES && wireType === LENGTH_DELIMITED) {
      (statuses ??= []).push(wire.take(end), wire.pos);
    } else wire.skip(wireType, field, end);
  }
  wire.ended(end);
  if (idEnd > idStart) {
    event.containerId = wire.string(idStart, idEnd);
    for (let i = 0; statuses !== undefined && i < statuses.length; i += 2) {
      wire.pos = statuses[i]!;
      const status = containerStatusOf(wire, statuses[i + 1]!, idStart, idEnd);
      if (status !== undefined) event.status = status;
    }
  }
  return event;
}

/** Reads the PodSandboxStatus that ends at `end` into the event: its id, state and pod UID. */
function readSandbox(wire: WireCursor, end: number, event: ContainerEventSummary): void {
  let fromLabel: string | undefined;
  let fromMetadata: string | undefined;
  let id = '';
  let state = 0;
  while (wire.pos < end) {
    const tag = wire.uint32();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === SANDBOX_ID && wireType === LENGTH_DELIMITED) id = wire.string(wire.take(end), wire.pos);
    else if (field === SANDBOX_STATE && wireType === VARINT) state = wire.int32();
    else if (field === SANDBOX_METADATA && wireType === LENGTH_DELIMITED) fromMetadata = stringField(wire, wire.delimited(end), METADATA_UID) ?? fromMetadata;
    else if (field === SANDBOX_LABELS && wireType === LENGTH_DELIMITED) fromLabel = labelValue(wire, wire.delimited(end), POD_UID_KEY) ?? fromLabel;
    else wire.skip(wireType, field, end);
  }
  wire.ended(end);
  event.podUid = fromLabel ?? (fromMetadata || undefined);
  if (id !== '') event.sandboxId = id;
  event.sandboxState = state;
}

/**
 * The ContainerStatus that ends at `end` when its id is the bytes from `idStart` to `idEnd` of the
 * same message, else undefined.
 */
function containerStatusOf(wire: WireCursor, end: number, idStart: number, idEnd: number): EventContainerStatus | undefined {
  let matches = false;
  let state = 0;
  let startedAt = 0n;
  let finishedAt = 0n;
  let exitCode = 0;
  let reasonStart = 0;
  let reasonEnd = 0;
  while (wire.pos < end) {
    const tag = wire.uint32();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === STATUS_ID && wireType === LENGTH_DELIMITED) matches = wire.equals(wire.take(end), wire.pos, wire.bytes, idStart, idEnd);
    else if (field === STATUS_STATE && wireType === VARINT) state = wire.int32();
    else if (field === STATUS_STARTED_AT && wireType === VARINT) startedAt = wire.int64();
    else if (field === STATUS_FINISHED_AT && wireType === VARINT) finishedAt = wire.int64();
    else if (field === STATUS_EXIT_CODE && wireType === VARINT) exitCode = wire.int32();
    else if (field === STATUS_REASON && wireType === LENGTH_DELIMITED) {
      reasonStart = wire.take(end);
      reasonEnd = wire.pos;
    } else wire.skip(wireType, field, end);
  }
  wire.ended(end);
  if (!matches) return undefined;
  return { state, startedAt, finishedAt, exitCode, reason: wire.string(reasonStart, reasonEnd) };
}

/** The string field `wanted` of the message that ends at `end` (the last one, as protobuf merges). */
function stringField(wire: WireCursor, end: number, wanted: number): string | undefined {
  let start = -1;
  let valueEnd = -1;
  while (wire.pos < end) {
    const tag = wire.uint32();
    if (tag >>> 3 === wanted && (tag & 7) === LENGTH_DELIMITED) {
      start = wire.take(end);
      valueEnd = wire.pos;
    } else wire.skip(tag & 7, tag >>> 3, end);
  }
  wire.ended(end);
  return start < 0 ? undefined : wire.string(start, valueEnd);
}

/** The value of one map<string, string> entry that ends at `end`, when its key is `key` (UTF-8). */
function labelValue(wire: WireCursor, end: number, key: Uint8Array): string | undefined {
  // undefined: no key read yet (the wire allows the value first)
  let keyMatches: boolean | undefined;
  let valueStart = 0;
  let valueEnd = 0;
  while (wire.pos < end) {
    const tag = wire.uint32();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === MAP_KEY && wireType === LENGTH_DELIMITED) keyMatches = wire.equals(wire.take(end), wire.pos, key);
    else if (field === MAP_VALUE && wireType === LENGTH_DELIMITED) {
      valueStart = wire.take(end);
      valueEnd = wire.pos;
    } else wire.skip(wireType, field, end);
  }
  wire.ended(end);
  return keyMatches === true ? wire.string(valueStart, valueEnd) : undefined;
}
