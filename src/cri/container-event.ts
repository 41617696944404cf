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
 * - The pod's UID is the sandbox's `io.kubernetes.pod.uid` label, else its metadata's uid (as the
 *   kubelet names it); undefined when the event names no sandbox.
 * - `status` is the one container status whose id is the event's container id (containerd sends
 *   every container of the pod; a sandbox's own event has none of its id), never another's.
 * - A malformed message throws (grpc-js then ends the stream with an error, as for any message it
 *   cannot decode).
 */
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
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

/** The label key read, as bytes: each event's labels are compared to it without decoding every key. */
const POD_UID_KEY = new TextEncoder().encode(LABEL_POD_UID);

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}

export function decodeContainerEventSummary(bytes: Uint8Array): ContainerEventSummary {
  const reader = new BinaryReader(bytes);
  const event: ContainerEventSummary = { containerId: '', containerEventType: 0, podUid: undefined };
  // the statuses may come before the container's id on the wire: their places are kept, read last
  let statuses: Array<[number, number]> | undefined;
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === EVENT_CONTAINER_ID && wireType === WireType.LengthDelimited) event.containerId = reader.string();
    else if (field === EVENT_TYPE && wireType === WireType.Varint) event.containerEventType = reader.int32();
    else if (field === EVENT_SANDBOX_STATUS && wireType === WireType.LengthDelimited) readSandbox(reader, reader.pos + reader.uint32(), event);
    else if (field === EVENT_CONTAINER_STATUSES && wireType === WireType.LengthDelimited) {
      const length = reader.uint32();
      if (reader.pos + length > reader.len) throw new RangeError('premature end of a container event');
      (statuses ??= []).push([reader.pos, reader.pos + length]);
      reader.pos += length;
    } else reader.skip(wireType, field);
  }
  if (statuses !== undefined && event.containerId !== '') {
    const id = new TextEncoder().encode(event.containerId);
    for (const [start, end] of statuses) {
      reader.pos = start;
      const status = containerStatusOf(reader, end, id);
      if (status !== undefined) event.status = status;
    }
  }
  return event;
}

/** Reads the PodSandboxStatus that ends at `end` into the event: its id, state and pod UID. */
function readSandbox(reader: BinaryReader, end: number, event: ContainerEventSummary): void {
  let fromLabel: string | undefined;
  let fromMetadata: string | undefined;
  let id = '';
  let state = 0;
  while (reader.pos < end) {
    const [field, wireType] = reader.tag();
    if (field === SANDBOX_ID && wireType === WireType.LengthDelimited) id = reader.string();
    else if (field === SANDBOX_STATE && wireType === WireType.Varint) state = reader.int32();
    else if (field === SANDBOX_METADATA && wireType === WireType.LengthDelimited) fromMetadata = stringField(reader, reader.pos + reader.uint32(), METADATA_UID) ?? fromMetadata;
    else if (field === SANDBOX_LABELS && wireType === WireType.LengthDelimited) fromLabel = labelValue(reader, reader.pos + reader.uint32(), POD_UID_KEY) ?? fromLabel;
    else reader.skip(wireType, field);
  }
  event.podUid = fromLabel ?? (fromMetadata || undefined);
  if (id !== '') event.sandboxId = id;
  event.sandboxState = state;
}

/** The ContainerStatus that ends at `end` when its id is `id` (UTF-8), else undefined. */
function containerStatusOf(reader: BinaryReader, end: number, id: Uint8Array): EventContainerStatus | undefined {
  const status: EventContainerStatus = { state: 0, startedAt: 0n, finishedAt: 0n, exitCode: 0, reason: '' };
  let matches = false;
  while (reader.pos < end) {
    const [field, wireType] = reader.tag();
    if (field === STATUS_ID && wireType === WireType.LengthDelimited) matches = sameBytes(reader.bytes(), id);
    else if (field === STATUS_STATE && wireType === WireType.Varint) status.state = reader.int32();
    else if (field === STATUS_STARTED_AT && wireType === WireType.Varint) status.startedAt = BigInt(reader.int64());
    else if (field === STATUS_FINISHED_AT && wireType === WireType.Varint) status.finishedAt = BigInt(reader.int64());
    else if (field === STATUS_EXIT_CODE && wireType === WireType.Varint) status.exitCode = reader.int32();
    else if (field === STATUS_REASON && wireType === WireType.LengthDelimited) status.reason = reader.string();
    else reader.skip(wireType, field);
  }
  return matches ? status : undefined;
}

/** The string field `wanted` of the message that ends at `end` (the last one, as protobuf merges). */
function stringField(reader: BinaryReader, end: number, wanted: number): string | undefined {
  let value: string | undefined;
  while (reader.pos < end) {
    const [field, wireType] = reader.tag();
    if (field === wanted && wireType === WireType.LengthDelimited) value = reader.string();
    else reader.skip(wireType, field);
  }
  return value;
}

/** The value of one map<string, string> entry that ends at `end`, when its key is `key` (UTF-8). */
function labelValue(reader: BinaryReader, end: number, key: Uint8Array): string | undefined {
  // undefined: no key read yet (the wire allows the value first)
  let keyMatches: boolean | undefined;
  let value = '';
  while (reader.pos < end) {
    const [field, wireType] = reader.tag();
    if (field === MAP_KEY && wireType === WireType.LengthDelimited) keyMatches = sameBytes(reader.bytes(), key);
    else if (field === MAP_VALUE && wireType === WireType.LengthDelimited) {
      // a value is only worth decoding for the key wanted (or before any key)
      if (keyMatches !== false) value = reader.string();
      else reader.skip(wireType, field);
    } else reader.skip(wireType, field);
  }
  return keyMatches === true ? value : undefined;
}
