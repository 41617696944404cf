/**
 * The container-event reader against messages the generated CRI encoder writes (as a runtime would):
 * it reads the container, the kind and the pod's UID, and passes over everything else.
 */
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { describe, expect, it } from 'vitest';
import { decodeContainerEventSummary } from '../../src/cri/container-event.js';
import { ContainerEventResponse, type DeepPartial } from '../../src/cri/generated/runtime_v1.js';

const UID = '0f9d1f0e-1111-2222-3333-444455556666';

function encoded(partial: DeepPartial<ContainerEventResponse>): Uint8Array {
  return ContainerEventResponse.encode(ContainerEventResponse.fromPartial(partial)).finish();
}

/** A whole event as containerd sends it: the sandbox's status and the container's, labels and all. */
function fullEvent(labels: Record<string, string>, metadataUid: string): DeepPartial<ContainerEventResponse> {
  return {
    containerId: 'c1',
    containerEventType: 2,
    createdAt: 1764126000000000000n,
    podSandboxStatus: {
      id: 's1',
      metadata: { name: 'web', uid: metadataUid, namespace: 'default', attempt: 1 },
      state: 0,
      network: { ip: '10.0.0.5' },
      labels,
      annotations: { 'kubernetes.io/config.source': 'api' },
      runtimeHandler: 'runc',
    },
    containersStatuses: [
      {
        id: 'c1',
        metadata: { name: 'main' },
        state: 2,
        exitCode: 143,
        labels: { 'io.kubernetes.pod.uid': 'not-this-one' },
        annotations: { a: 'b' },
        logPath: '/var/log/pods/x/main/0.log',
        imageRef: 'sha256:abc',
      },
    ],
  };
}

describe('decodeContainerEventSummary', () => {
  it("reads the container, the kind and the pod's UID label of a whole event", () => {
    const summary = decodeContainerEventSummary(encoded(fullEvent({ app: 'web', 'io.kubernetes.pod.uid': UID, 'io.kubernetes.pod.name': 'web' }, 'metadata-uid')));
    expect(summary).toEqual({ containerId: 'c1', containerEventType: 2, podUid: UID });
  });

  it("falls back to the sandbox metadata's uid without the label, and to none without a sandbox", () => {
    expect(decodeContainerEventSummary(encoded(fullEvent({ app: 'web' }, UID))).podUid).toBe(UID);
    expect(decodeContainerEventSummary(encoded(fullEvent({}, '')))).toEqual({ containerId: 'c1', containerEventType: 2, podUid: undefined });
    expect(decodeContainerEventSummary(encoded({ containerId: 'c2', containerEventType: 3 }))).toEqual({ containerId: 'c2', containerEventType: 3, podUid: undefined });
  });

  it('agrees with the generated decoder on every event the kubelet names a pod in', () => {
    for (const [labels, metadataUid] of [
      [{ 'io.kubernetes.pod.uid': UID }, 'other'],
      [{ 'io.kubernetes.pod.uid': '' }, UID],
      [{ x: '1' }, UID],
    ] as const) {
      const bytes = encoded(fullEvent(labels, metadataUid));
      const whole = ContainerEventResponse.decode(bytes);
      const expected = whole.podSandboxStatus?.labels?.['io.kubernetes.pod.uid'] ?? whole.podSandboxStatus?.metadata?.uid;
      expect(decodeContainerEventSummary(bytes).podUid).toBe(expected);
    }
  });

  it('reads a map entry whose value comes before its key (the wire allows either order), and fields it does not know', () => {
    const sandbox = new BinaryWriter();
    sandbox.uint32((7 << 3) | 2).fork();
    sandbox.uint32((2 << 3) | 2).string(UID); // value first
    sandbox.uint32((1 << 3) | 2).string('io.kubernetes.pod.uid');
    sandbox.join();
    sandbox.uint32((99 << 3) | 0).uint64(7n); // a field from a later CRI version
    const sandboxBytes = sandbox.finish();
    const event = new BinaryWriter();
    event.uint32((1 << 3) | 2).string('c3');
    event.uint32((42 << 3) | 2).string('unknown');
    event.uint32((4 << 3) | 2).bytes(sandboxBytes);
    event.uint32((2 << 3) | 0).int32(1);
    expect(decodeContainerEventSummary(event.finish())).toEqual({ containerId: 'c3', containerEventType: 1, podUid: UID });
  });

  it('throws on a truncated message', () => {
    const bytes = encoded(fullEvent({ 'io.kubernetes.pod.uid': UID }, UID));
    expect(() => decodeContainerEventSummary(bytes.subarray(0, bytes.length - 5))).toThrow();
  });
});
