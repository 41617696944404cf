/**
 * What a follower of the node reads of a CRI container event (GetContainerEvents'
 * ContainerEventResponse): the container, the kind of event and the pod it belongs to — nothing
 * else. The runtime sends the pod's whole sandbox status and every container's status with each
 * event; a drain of hundreds of pods makes thousands of events, and a reader that only needs to know
 * which pod to read again should not build all of that for each one.
 *
 * Invariants:
 * - Reads the protobuf wire format directly and skips every field it does not name (so a runtime
 *   that sends fields this version does not know is read the same way).
 * - The pod's UID is the sandbox's `io.kubernetes.pod.uid` label, else its metadata's uid (as the
 *   kubelet names it); undefined when the event names no sandbox.
 * - A malformed message throws (grpc-js then ends the stream with an error, as for any message it
 *   cannot decode).
 */
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import { LABEL_POD_UID } from './kubelet-labels.js';

/** A container event, as far as a follower of the node reads it. */
export interface ContainerEventSummary {
  containerId: string;
  /** CRI ContainerEventType: 0 created, 1 started, 2 stopped, 3 deleted. */
  containerEventType: number;
  /** The pod the container belongs to, or undefined when the event names no sandbox. */
  podUid: string | undefined;
}

// field numbers of the CRI v1 messages read here (api.proto)
const EVENT_CONTAINER_ID = 1;
const EVENT_TYPE = 2;
const EVENT_SANDBOX_STATUS = 4;
const SANDBOX_METADATA = 2;
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
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === EVENT_CONTAINER_ID && wireType === WireType.LengthDelimited) event.containerId = reader.string();
    else if (field === EVENT_TYPE && wireType === WireType.Varint) event.containerEventType = reader.int32();
    else if (field === EVENT_SANDBOX_STATUS && wireType === WireType.LengthDelimited) event.podUid = podUidOfSandbox(reader, reader.pos + reader.uint32());
    else reader.skip(wireType, field);
  }
  return event;
}

/** The pod UID of the PodSandboxStatus that ends at `end`. */
function podUidOfSandbox(reader: BinaryReader, end: number): string | undefined {
  let fromLabel: string | undefined;
  let fromMetadata: string | undefined;
  while (reader.pos < end) {
    const [field, wireType] = reader.tag();
    if (field === SANDBOX_METADATA && wireType === WireType.LengthDelimited) fromMetadata = stringField(reader, reader.pos + reader.uint32(), METADATA_UID) ?? fromMetadata;
    else if (field === SANDBOX_LABELS && wireType === WireType.LengthDelimited) fromLabel = labelValue(reader, reader.pos + reader.uint32(), POD_UID_KEY) ?? fromLabel;
    else reader.skip(wireType, field);
  }
  return fromLabel ?? (fromMetadata || undefined);
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
