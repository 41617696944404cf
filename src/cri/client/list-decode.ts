/**
 * The two responses of every relist, ListPodSandbox and ListContainers, decoded in one pass over
 * their bytes: a listing is a few hundred small messages (sandboxes, containers, their metadata and
 * image, and one map entry message per label and annotation), and the generated decoder pays per
 * message (a reader check, a recursion counter set and restored in a try/finally, an entry object
 * per label) and per field (a method call per varint and string). In a fresh process all of that
 * runs cold, on each `podctl status` and `kill`.
 *
 * Invariant: each function returns exactly what the generated decoder makes of the same bytes with
 * the client's reader (reader.ts): the same objects with the same fields in the same order, the
 * strings cut by the same UTF-8 decoder, a field that comes twice the last one read, a label the
 * last entry of its key, every field the listing does not know (and a known one sent with another
 * wire type) skipped (test/cri/client/list-decode.test.ts). The one pass takes only what it reads
 * whole as it expects: every read inside the message that holds it, varints of at most four bytes
 * (lengths and tags below 2^28), timestamps of at most nine (non-negative int64), no groups. Any
 * other input (malformed or not) is decoded again from the start by the generated decoder, whose
 * result or error is then the answer: errors are worded as before.
 */
import { BinaryReader } from '@bufbuild/protobuf/wire';
import type { Container, ContainerMetadata, ImageSpec, ListContainersResponse, ListPodSandboxResponse, PodSandbox, PodSandboxMetadata } from './generated/runtime_v1.js';
import { ListContainersResponse as GeneratedContainers, ListPodSandboxResponse as GeneratedSandboxes } from './generated/runtime_v1.js';
import { BufferReader } from './reader.js';

/** Thrown inside the pass when the input is not what it reads whole; caught below, never escapes. */
const OTHER = new Error('not read in one pass');

/** int64 fields are bigint unless the library was told otherwise (BUF_BIGINT_DISABLE): then the pass stands aside. */
const BIGINT = typeof new BinaryReader(new Uint8Array(1)).int64() === 'bigint';

// the pass's position; set by `decodeWith`, one response at a time (the pass is synchronous)
let bytes: Buffer = Buffer.alloc(0);
let pos = 0;

/** A varint of at most four bytes (below 2^28: the same number as the library's uint32 and int32). */
function varint(end: number): number {
  if (pos >= end) throw OTHER;
  let byte = bytes[pos++]!;
  if (byte < 0x80) return byte;
  let value = byte & 0x7f;
  if (pos >= end) throw OTHER;
  byte = bytes[pos++]!;
  value |= (byte & 0x7f) << 7;
  if (byte < 0x80) return value;
  if (pos >= end) throw OTHER;
  byte = bytes[pos++]!;
  value |= (byte & 0x7f) << 14;
  if (byte < 0x80) return value;
  if (pos >= end) throw OTHER;
  byte = bytes[pos++]!;
  if (byte >= 0x80) throw OTHER;
  return value | (byte << 21);
}

/** A non-negative int64 of at most nine bytes, as the library's int64 (a bigint). */
function int64(end: number): bigint {
  let low = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (pos >= end) throw OTHER;
    const byte = bytes[pos++]!;
    low |= (byte & 0x7f) << shift;
    if (byte < 0x80) return BigInt(low);
  }
  // 35 more bits at most: exact in a double
  let high = 0;
  for (let scale = 1; scale < 2 ** 35; scale *= 128) {
    if (pos >= end) throw OTHER;
    const byte = bytes[pos++]!;
    high += (byte & 0x7f) * scale;
    if (byte < 0x80) return BigInt(low) + (BigInt(high) << 28n);
  }
  throw OTHER;
}

/** The end of a length-delimited field that starts here, inside `end`. */
function lengthEnd(end: number): number {
  const stop = varint(end);
  const at = pos + stop;
  if (at > end) throw OTHER;
  return at;
}

function string(end: number): string {
  const stop = lengthEnd(end);
  const start = pos;
  pos = stop;
  return bytes.toString('utf8', start, stop);
}

/** Skips a field the listing does not read (the library's `skip`, inside the message); no groups. */
function skip(tag: number, end: number): void {
  // tag 0 ends the message being read in the generated decoder, wherever that is
  if (tag === 0) throw OTHER;
  switch (tag & 7) {
    case 0:
      for (;;) {
        if (pos >= end) throw OTHER;
        if (bytes[pos++]! < 0x80) return;
      }
    case 1:
      pos += 8;
      break;
    case 2:
      pos = lengthEnd(end);
      return;
    case 5:
      pos += 4;
      break;
    default:
      // a group, or no wire type
      throw OTHER;
  }
  if (pos > end) throw OTHER;
}

/** One map<string, string> entry into `map` (as the generated decoder: a missing key or value is ''). */
function entry(map: Record<string, string>, end: number): void {
  const stop = lengthEnd(end);
  let key = '';
  let value = '';
  while (pos < stop) {
    const tag = varint(stop);
    if (tag === 10) key = string(stop);
    else if (tag === 18) value = string(stop);
    else skip(tag, stop);
  }
  map[key] = value;
}

function sandboxMetadata(end: number): PodSandboxMetadata {
  const message: PodSandboxMetadata = { name: '', uid: '', namespace: '', attempt: 0 };
  while (pos < end) {
    const tag = varint(end);
    if (tag === 10) message.name = string(end);
    else if (tag === 18) message.uid = string(end);
    else if (tag === 26) message.namespace = string(end);
    else if (tag === 32) message.attempt = varint(end);
    else skip(tag, end);
  }
  return message;
}

function sandbox(end: number): PodSandbox {
  const message: PodSandbox = { id: '', metadata: undefined, state: 0, createdAt: 0n, labels: {}, annotations: {}, runtimeHandler: '' };
  while (pos < end) {
    const tag = varint(end);
    switch (tag) {
      case 10:
        message.id = string(end);
        break;
      case 18:
        message.metadata = sandboxMetadata(lengthEnd(end));
        break;
      case 24:
        message.state = varint(end);
        break;
      case 32:
        message.createdAt = int64(end);
        break;
      case 42:
        entry(message.labels, end);
        break;
      case 50:
        entry(message.annotations, end);
        break;
      case 58:
        message.runtimeHandler = string(end);
        break;
      default:
        skip(tag, end);
    }
  }
  return message;
}

function containerMetadata(end: number): ContainerMetadata {
  const message: ContainerMetadata = { name: '', attempt: 0 };
  while (pos < end) {
    const tag = varint(end);
    if (tag === 10) message.name = string(end);
    else if (tag === 16) message.attempt = varint(end);
    else skip(tag, end);
  }
  return message;
}

function imageSpec(end: number): ImageSpec {
  const message: ImageSpec = { image: '', annotations: {}, userSpecifiedImage: '', runtimeHandler: '' };
  while (pos < end) {
    const tag = varint(end);
    if (tag === 10) message.image = string(end);
    else if (tag === 18) entry(message.annotations, end);
    else if (tag === 146) message.userSpecifiedImage = string(end);
    else if (tag === 154) message.runtimeHandler = string(end);
    else skip(tag, end);
  }
  return message;
}

function container(end: number): Container {
  const message: Container = { id: '', podSandboxId: '', metadata: undefined, image: undefined, imageRef: '', state: 0, createdAt: 0n, labels: {}, annotations: {}, imageId: '' };
  while (pos < end) {
    const tag = varint(end);
    switch (tag) {
      case 10:
        message.id = string(end);
        break;
      case 18:
        message.podSandboxId = string(end);
        break;
      case 26:
        message.metadata = containerMetadata(lengthEnd(end));
        break;
      case 34:
        message.image = imageSpec(lengthEnd(end));
        break;
      case 42:
        message.imageRef = string(end);
        break;
      case 48:
        message.state = varint(end);
        break;
      case 56:
        message.createdAt = int64(end);
        break;
      case 66:
        entry(message.labels, end);
        break;
      case 74:
        entry(message.annotations, end);
        break;
      case 82:
        message.imageId = string(end);
        break;
      default:
        skip(tag, end);
    }
  }
  return message;
}

/** Runs one pass over `input`; undefined when the pass stands aside. */
function decodeWith<T>(input: Buffer, pass: (end: number) => T): T | undefined {
  if (!BIGINT) return undefined;
  bytes = input;
  pos = 0;
  try {
    return pass(input.length);
  } catch (error) {
    if (error !== OTHER) throw error;
    return undefined;
  } finally {
    bytes = Buffer.alloc(0);
  }
}

function sandboxes(end: number): ListPodSandboxResponse {
  const message: ListPodSandboxResponse = { items: [] };
  while (pos < end) {
    const tag = varint(end);
    if (tag === 10) message.items.push(sandbox(lengthEnd(end)));
    else skip(tag, end);
  }
  return message;
}

function containers(end: number): ListContainersResponse {
  const message: ListContainersResponse = { containers: [] };
  while (pos < end) {
    const tag = varint(end);
    if (tag === 10) message.containers.push(container(lengthEnd(end)));
    else skip(tag, end);
  }
  return message;
}

/** ListPodSandboxResponse, as `ListPodSandboxResponse.decode(new BufferReader(input))`. */
export function decodeListPodSandboxResponse(input: Buffer): ListPodSandboxResponse {
  return decodeWith(input, sandboxes) ?? GeneratedSandboxes.decode(new BufferReader(input));
}

/** ListContainersResponse, as `ListContainersResponse.decode(new BufferReader(input))`. */
export function decodeListContainersResponse(input: Buffer): ListContainersResponse {
  return decodeWith(input, containers) ?? GeneratedContainers.decode(new BufferReader(input));
}
