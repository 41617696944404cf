import { describe, expect, it } from 'vitest';
import * as proto from '../../../src/cri/client/generated/runtime_v1.js';
import { BufferReader } from '../../../src/cri/client/reader.js';
import { simulatorListings, useSimulator, useTempDir } from '../support.js';

/** A ListPodSandboxResponse whose one sandbox carries `value` (raw bytes) as a label value and as its name. */
function sandboxWithValue(value: Uint8Array): Buffer {
  // encode with a marker string, then splice the raw bytes in place of the marker's (same length prefix)
  const marker = 'M'.repeat(value.length);
  const bytes = Buffer.from(
    proto.ListPodSandboxResponse.encode({
      items: [
        {
          id: 'a'.repeat(64),
          metadata: { name: marker, uid: 'uid-1', namespace: 'ns', attempt: 0 },
          state: 0,
          createdAt: 1n,
          labels: { k: marker },
          annotations: {},
          runtimeHandler: '',
        },
      ],
    }).finish(),
  );
  let at = bytes.indexOf(marker);
  while (at !== -1) {
    bytes.set(value, at);
    at = bytes.indexOf(marker, at + value.length);
  }
  return bytes;
}

describe('the CRI responses reader', () => {
  const dir = useTempDir();
  const simulator = useSimulator();

  it('decodes a 50-pod listing of the simulator exactly as the generated decoder does', async () => {
    const { sandboxes, containers } = await simulatorListings(dir());
    const fast = proto.ListPodSandboxResponse.decode(new BufferReader(sandboxes));
    expect(fast.items).toHaveLength(50);
    expect(fast).toStrictEqual(proto.ListPodSandboxResponse.decode(sandboxes));
    const listed = proto.ListContainersResponse.decode(new BufferReader(containers));
    expect(listed.containers.length).toBeGreaterThanOrEqual(50);
    expect(listed).toStrictEqual(proto.ListContainersResponse.decode(containers));
  });

  it.each([
    ['ASCII of 32 bytes and more', Buffer.from('x'.repeat(40))],
    ['two- to four-byte characters', Buffer.from('ns-ü/名前-😀')],
    ['a lone continuation byte', Buffer.from([0x61, 0x80, 0x62])],
    ['a truncated sequence', Buffer.from([0x61, 0xe2, 0x82])],
    ['an overlong encoding', Buffer.from([0xc0, 0xaf, 0x41])],
    ['a surrogate', Buffer.from([0xed, 0xa0, 0x80])],
    ['a byte-order mark first', Buffer.from([0xef, 0xbb, 0xbf, 0x41, 0x42])],
    ['a byte-order mark inside', Buffer.from([0x41, 0xef, 0xbb, 0xbf])],
  ])('decodes %s as the generated decoder does', (_name, value) => {
    const bytes = sandboxWithValue(value);
    const fast = proto.ListPodSandboxResponse.decode(new BufferReader(bytes));
    expect(fast).toStrictEqual(proto.ListPodSandboxResponse.decode(bytes));
    expect(fast.items[0]!.metadata!.name).toBe(new TextDecoder('utf-8', { ignoreBOM: true }).decode(value));
  });

  it('fails on a string longer than the message as the generated decoder does', () => {
    const bytes = sandboxWithValue(Buffer.from('abcdef'));
    const cut = bytes.subarray(0, bytes.indexOf('abcdef') + 3);
    expect(() => proto.ListPodSandboxResponse.decode(cut)).toThrow(/premature EOF/);
    expect(() => proto.ListPodSandboxResponse.decode(new BufferReader(cut))).toThrow(/premature EOF/);
  });

  it('gives the client non-ASCII labels as the runtime stored them', async () => {
    const { client } = await simulator();
    const labels = { 'io.kubernetes.pod.uid': 'uid-u', team: 'équipe-名前', emoji: '😀'.repeat(12) };
    const id = await client.runPodSandbox({ metadata: { name: 'ü', namespace: 'ns', uid: 'uid-u', attempt: 0 }, labels });
    const [listed] = await client.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': 'uid-u' } });
    expect(listed).toMatchObject({ id, metadata: { name: 'ü' }, labels });
  });
});
