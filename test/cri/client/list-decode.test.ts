import { describe, expect, it, vi } from 'vitest';
import { BinaryReader, BinaryWriter } from '@bufbuild/protobuf/wire';
import * as proto from '../../../src/cri/client/generated/runtime_v1.js';
import { decodeListContainersResponse, decodeListPodSandboxResponse } from '../../../src/cri/client/list-decode.js';
import { BufferReader } from '../../../src/cri/client/reader.js';
import { simulatorListings, useSimulator, useTempDir } from '../support.js';

/** What the client decoded the listings with before: the generated decoder on the responses' reader. */
const generated = {
  sandboxes: (bytes: Buffer) => proto.ListPodSandboxResponse.decode(new BufferReader(bytes)),
  containers: (bytes: Buffer) => proto.ListContainersResponse.decode(new BufferReader(bytes)),
};

/** The same answer from both: the same object (field order included), or an error with the same message. */
function expectSame(bytes: Buffer): void {
  for (const [fast, old] of [
    [decodeListPodSandboxResponse, generated.sandboxes],
    [decodeListContainersResponse, generated.containers],
  ] as const) {
    let expected: unknown;
    let expectedError: string | undefined;
    try {
      expected = old(bytes);
    } catch (error) {
      expectedError = (error as Error).message;
    }
    if (expectedError !== undefined) {
      expect(() => fast(bytes)).toThrow(expectedError);
      continue;
    }
    const got = fast(bytes);
    expect(got).toStrictEqual(expected);
    expect(JSON.stringify(got, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))).toBe(JSON.stringify(expected, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)));
  }
}

const sandbox: proto.PodSandbox = {
  id: 'a'.repeat(64),
  metadata: { name: 'web-0', uid: 'uid-1', namespace: 'ns', attempt: 2 },
  state: 1,
  createdAt: 1795921874672000000n,
  labels: { 'io.kubernetes.pod.uid': 'uid-1', app: 'web' },
  annotations: { 'kubernetes.io/config.source': 'api' },
  runtimeHandler: 'runc',
};

const container: proto.Container = {
  id: 'c'.repeat(64),
  podSandboxId: 'a'.repeat(64),
  metadata: { name: 'app', attempt: 3 },
  image: { image: 'img:1', annotations: { k: 'v' }, userSpecifiedImage: 'img', runtimeHandler: 'runc' },
  imageRef: 'sha256:0',
  state: 2,
  createdAt: 1795921874673000000n,
  labels: { 'io.kubernetes.container.name': 'app' },
  annotations: { 'io.kubernetes.container.hash': 'f90e7bd1', 'io.kubernetes.pod.terminationGracePeriod': '30' },
  imageId: 'sha256:1',
};

const sandboxBytes = (items: proto.PodSandbox[]) => Buffer.from(proto.ListPodSandboxResponse.encode({ items }).finish());
const containerBytes = (containers: proto.Container[]) => Buffer.from(proto.ListContainersResponse.encode({ containers }).finish());

/** `encoded` with one more field (raw tag and payload) inside the first item's message. */
function withField(encoded: Buffer, extra: Uint8Array): Buffer {
  // the first item: tag 10, its length (one or two varint bytes), its bytes
  const reader = new BinaryReader(encoded);
  reader.uint32();
  const length = reader.uint32();
  const start = reader.pos;
  const item = Buffer.concat([encoded.subarray(start, start + length), extra]);
  const writer = new BinaryWriter();
  writer.uint32(10).bytes(item);
  return Buffer.concat([Buffer.from(writer.finish()), encoded.subarray(start + length)]);
}

const field = (build: (w: BinaryWriter) => void): Uint8Array => {
  const writer = new BinaryWriter();
  build(writer);
  return writer.finish();
};

describe('the listings decoded in one pass', () => {
  const dir = useTempDir();
  const simulator = useSimulator();

  it('decodes a 50-pod listing of the simulator exactly as the generated decoder does', async () => {
    const { sandboxes, containers } = await simulatorListings(dir());
    // read in the one pass, not handed to the generated decoder
    const sandboxesDecode = vi.spyOn(proto.ListPodSandboxResponse, 'decode');
    const containersDecode = vi.spyOn(proto.ListContainersResponse, 'decode');
    const fast = [decodeListPodSandboxResponse(sandboxes), decodeListContainersResponse(containers)];
    expect(sandboxesDecode).not.toHaveBeenCalled();
    expect(containersDecode).not.toHaveBeenCalled();
    vi.restoreAllMocks();
    expect(fast[0]).toStrictEqual(generated.sandboxes(sandboxes));
    expect(fast[1]).toStrictEqual(generated.containers(containers));
    expect(decodeListPodSandboxResponse(sandboxes).items).toHaveLength(50);
    expect(decodeListPodSandboxResponse(sandboxes)).toStrictEqual(generated.sandboxes(sandboxes));
    expect(decodeListContainersResponse(containers).containers.length).toBeGreaterThanOrEqual(50);
    expect(decodeListContainersResponse(containers)).toStrictEqual(generated.containers(containers));
  });

  it.each([
    ['every field set', sandboxBytes([sandbox, { ...sandbox, id: 'b', labels: {}, metadata: undefined }])],
    ['empty', Buffer.alloc(0)],
    ['an empty sandbox', sandboxBytes([proto.PodSandbox.fromPartial({})])],
    ['containers with every field set', containerBytes([container, { ...container, image: undefined, metadata: undefined }])],
    ['an empty container', containerBytes([proto.Container.fromPartial({})])],
    ['long strings', sandboxBytes([{ ...sandbox, id: 'x'.repeat(70_000), labels: { ['k'.repeat(300)]: 'v'.repeat(20_000) } }])],
    ['two- to four-byte characters', sandboxBytes([{ ...sandbox, metadata: { ...sandbox.metadata!, name: 'ns-ü/名前-😀' }, labels: { équipe: '名前', emoji: '😀'.repeat(12) } }])],
    ['a label named __proto__', sandboxBytes([{ ...sandbox, labels: JSON.parse('{"__proto__":"x","a":"b"}') as Record<string, string> }])],
    [
      'created_at 0 and 2^63-1',
      containerBytes([
        { ...container, createdAt: 0n },
        { ...container, createdAt: 2n ** 63n - 1n },
      ]),
    ],
    ['a negative created_at (ten bytes: the generated decoder)', sandboxBytes([{ ...sandbox, createdAt: -5n }])],
    ['a large state and attempt', containerBytes([{ ...container, state: 2 ** 31 - 1, metadata: { name: 'a', attempt: 2 ** 32 - 1 } }])],
    ['a negative state', sandboxBytes([{ ...sandbox, state: -1 }])],
  ])('decodes %s as the generated decoder does', (_name, bytes) => {
    expectSame(bytes);
  });

  it.each([
    ['invalid UTF-8', Buffer.from([0x61, 0x80, 0xe2, 0x82, 0xc0, 0xaf, 0xed, 0xa0, 0x80])],
    ['a byte-order mark first', Buffer.from([0xef, 0xbb, 0xbf, 0x41])],
  ])('keeps %s as the generated decoder does', (_name, raw) => {
    const marker = 'M'.repeat(raw.length);
    const bytes = sandboxBytes([{ ...sandbox, metadata: { ...sandbox.metadata!, name: marker }, labels: { k: marker } }]);
    for (let at = bytes.indexOf(marker); at !== -1; at = bytes.indexOf(marker, at)) bytes.set(raw, at);
    expectSame(bytes);
  });

  it.each([
    ['an unknown varint field', field((w) => w.uint32((40 << 3) | 0).uint64(2n ** 60n))],
    ['an unknown fixed64 field', field((w) => w.uint32((40 << 3) | 1).fixed64(7n))],
    ['an unknown length-delimited field', field((w) => w.uint32((40 << 3) | 2).string('new'))],
    ['an unknown fixed32 field', field((w) => w.uint32((40 << 3) | 5).fixed32(7))],
    ['a known field with another wire type', field((w) => w.uint32((1 << 3) | 0).uint32(5))],
    ['the id twice', field((w) => w.uint32(10).string('second'))],
    ['metadata twice (replaced, not merged)', field((w) => w.uint32(18).bytes(field((m) => m.uint32(10).string('only-name'))))],
    [
      'a label entry without its value, and one with an unknown field',
      field((w) =>
        w
          .uint32(42)
          .bytes(field((e) => e.uint32(10).string('nokey')))
          .uint32(42)
          .bytes(field((e) => e.uint32(10).string('a').uint32(24).uint32(1).uint32(18).string('b'))),
      ),
    ],
    ['a group', field((w) => w.uint32((40 << 3) | 3).uint32((40 << 3) | 4))],
    ['tag 0', field((w) => w.uint32(0).uint32(10).string('after'))],
    ['a five-byte tag', Buffer.from([0x8a, 0x80, 0x80, 0x80, 0x00, 0x01, 0x61])],
  ])('decodes a sandbox with %s as the generated decoder does', (_name, extra) => {
    expectSame(withField(sandboxBytes([sandbox, sandbox]), extra));
    expectSame(withField(containerBytes([container]), extra));
  });

  it('answers every cut and every changed byte of a listing as the generated decoder does (result or error)', () => {
    for (const bytes of [sandboxBytes([sandbox, { ...sandbox, labels: { a: 'ü' } }]), containerBytes([container])]) {
      for (let end = 0; end < bytes.length; end++) expectSame(bytes.subarray(0, end));
      for (let at = 0; at < bytes.length; at++) {
        for (const value of [0x00, 0x02, 0x07, 0x7f, 0x80, 0xff]) {
          const changed = Buffer.from(bytes);
          changed[at] = value;
          expectSame(changed);
        }
      }
    }
  });

  it('answers 3,000 listings with one to three random bytes changed as the generated decoder does', () => {
    let seed = 48;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const listings = [sandboxBytes([sandbox, { ...sandbox, createdAt: 5n, labels: { a: 'ü' } }]), containerBytes([container, container])];
    for (let i = 0; i < 3_000; i++) {
      const changed = Buffer.from(listings[i % 2]!);
      for (let n = 1 + random(3); n > 0; n--) changed[random(changed.length)] = random(256);
      expectSame(changed);
    }
  });

  it('gives the client the listings of the simulator as before, non-ASCII labels included', async () => {
    const { client } = await simulator();
    const labels = { 'io.kubernetes.pod.uid': 'uid-u', team: 'équipe-名前' };
    const id = await client.runPodSandbox({ metadata: { name: 'ü', namespace: 'ns', uid: 'uid-u', attempt: 0 }, labels });
    const [listed] = await client.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': 'uid-u' } });
    expect(listed).toMatchObject({ id, metadata: { name: 'ü' }, labels });
    const containers = await client.listContainers();
    expect(Array.isArray(containers)).toBe(true);
  });
});
