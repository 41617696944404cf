/**
 * The container-event reader against messages the generated CRI encoder writes (as a runtime would):
 * it reads the container, the kind, the pod's UID, the sandbox's id and state and the event's own
 * container's status, and passes over everything else.
 */
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { describe, expect, it } from 'vitest';
import { decodeContainerEventSummary } from '../../../src/cri/client/container-event.js';
import { ContainerEventResponse, ContainerStatus, type DeepPartial } from '../../../src/cri/client/generated/runtime_v1.js';

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
    expect(summary).toEqual({
      containerId: 'c1',
      containerEventType: 2,
      podUid: UID,
      sandboxId: 's1',
      sandboxState: 0,
      status: { state: 2, startedAt: 0n, finishedAt: 0n, exitCode: 143, reason: '' },
    });
  });

  it("reads the event's own container's status among the pod's, wherever it comes on the wire", () => {
    const event = fullEvent({ 'io.kubernetes.pod.uid': UID }, UID);
    const mine = { id: 'c1', state: 2, startedAt: 1764126000000000000n, finishedAt: 1764126005000000000n, exitCode: 137, reason: 'OOMKilled', labels: { a: 'b' } };
    event.containersStatuses = [{ id: 'c0', state: 1, exitCode: 0, reason: 'other' }, mine, { id: 'c11', state: 2, exitCode: 1, reason: 'Error' }];
    const expected = { state: 2, startedAt: mine.startedAt, finishedAt: mine.finishedAt, exitCode: 137, reason: 'OOMKilled' };
    expect(decodeContainerEventSummary(encoded(event)).status).toEqual(expected);
    // the statuses before the container's id (the wire allows any order)
    const reordered = new BinaryWriter();
    for (const status of event.containersStatuses) reordered.uint32((5 << 3) | 2).bytes(ContainerStatus.encode(ContainerStatus.fromPartial(status)).finish());
    reordered.uint32((1 << 3) | 2).string('c1');
    reordered.uint32((2 << 3) | 0).int32(2);
    expect(decodeContainerEventSummary(reordered.finish())).toEqual({ containerId: 'c1', containerEventType: 2, podUid: undefined, status: expected });
  });

  it("has no status when none is the event's container's (a sandbox's own event), and the sandbox's state", () => {
    const event = fullEvent({ 'io.kubernetes.pod.uid': UID }, UID);
    event.containerId = 's1';
    event.podSandboxStatus!.state = 1;
    const summary = decodeContainerEventSummary(encoded(event));
    expect(summary.status).toBeUndefined();
    expect(summary).toMatchObject({ containerId: 's1', sandboxId: 's1', sandboxState: 1, podUid: UID });
  });

  it("falls back to the sandbox metadata's uid without the label, and to none without a sandbox", () => {
    expect(decodeContainerEventSummary(encoded(fullEvent({ app: 'web' }, UID))).podUid).toBe(UID);
    expect(decodeContainerEventSummary(encoded(fullEvent({}, '')))).toMatchObject({ containerId: 'c1', containerEventType: 2, podUid: undefined });
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
      const summary = decodeContainerEventSummary(bytes);
      expect(summary.podUid).toBe(expected);
      const status = whole.containersStatuses.find((c) => c.id === whole.containerId)!;
      expect(summary.status).toEqual({ state: status.state, startedAt: status.startedAt, finishedAt: status.finishedAt, exitCode: status.exitCode, reason: status.reason });
      expect(summary.sandboxId).toBe(whole.podSandboxStatus?.id);
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
    expect(decodeContainerEventSummary(event.finish())).toEqual({ containerId: 'c3', containerEventType: 1, podUid: UID, sandboxState: 0 });
  });

  it('reads negative codes and 64-bit times, multi-byte names, and passes over fixed-width and group fields', () => {
    const status = new BinaryWriter();
    status.uint32((1 << 3) | 2).string('c-ü');
    status.uint32((7 << 3) | 0).int32(-1); // a negative int32 is a 10-byte varint
    status.uint32((5 << 3) | 0).int64(-5n);
    status.uint32((6 << 3) | 0).int64(9_007_199_254_740_993n); // past 2^53: the high bits count
    status.uint32((96 << 3) | 3); // a group, with a nested group and a field of each width inside
    status
      .uint32((95 << 3) | 3)
      .uint32((1 << 3) | 0)
      .uint64(1n)
      .uint32((95 << 3) | 4);
    status
      .uint32((2 << 3) | 5)
      .fixed32(7)
      .uint32((3 << 3) | 1)
      .fixed64(8n)
      .uint32((4 << 3) | 2)
      .string('x');
    status.uint32((96 << 3) | 4);
    status.uint32((10 << 3) | 2).string('Error: ✗');
    const event = new BinaryWriter();
    event.uint32((98 << 3) | 5).fixed32(1);
    event.uint32((97 << 3) | 1).fixed64(2n);
    event.uint32((5 << 3) | 2).bytes(status.finish());
    event.uint32((1 << 3) | 2).string('c-ü');
    event.uint32((2 << 3) | 0).int32(2);
    expect(decodeContainerEventSummary(event.finish())).toEqual({
      containerId: 'c-ü',
      containerEventType: 2,
      podUid: undefined,
      status: { state: 0, startedAt: -5n, finishedAt: 9_007_199_254_740_993n, exitCode: -1, reason: 'Error: ✗' },
    });
  });

  it('throws on a field that runs past the message it is in, a group that ends as another, and an unknown wire type', () => {
    // the sandbox status says 4 bytes, its id 6: the id would take bytes of the next field
    const overrun = new BinaryWriter();
    overrun
      .uint32((4 << 3) | 2)
      .uint32(4)
      .uint32((1 << 3) | 2)
      .uint32(6)
      .raw(new TextEncoder().encode('s1'));
    overrun.uint32((1 << 3) | 2).string('c1');
    expect(() => decodeContainerEventSummary(overrun.finish())).toThrow(RangeError);
    const mismatched = new BinaryWriter();
    mismatched.uint32((9 << 3) | 3).uint32((8 << 3) | 4);
    expect(() => decodeContainerEventSummary(mismatched.finish())).toThrow(/group/);
    const unknownType = new BinaryWriter();
    unknownType.uint32((9 << 3) | 6).uint32(0);
    expect(() => decodeContainerEventSummary(unknownType.finish())).toThrow(/wire type 6/);
    // a varint that never ends
    expect(() => decodeContainerEventSummary(new Uint8Array([0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))).toThrow(/varint/);
  });

  it('throws on a truncated message', () => {
    const bytes = encoded(fullEvent({ 'io.kubernetes.pod.uid': UID }, UID));
    expect(() => decodeContainerEventSummary(bytes.subarray(0, bytes.length - 5))).toThrow();
    // cut inside a container status, whose bytes are only read after the rest
    const statusOnly = encoded({ containerId: 'c1', containersStatuses: [{ id: 'c1', state: 2, reason: 'Completed' }] });
    expect(() => decodeContainerEventSummary(statusOnly.subarray(0, statusOnly.length - 3))).toThrow();
  });
});
