/**
 * One container event applied to a pod the cache holds: forward-only container states with the exit
 * details the event carries, removals, a sandbox's stop and removal, and undefined (relist) for what
 * an event cannot settle alone.
 */
import { describe, expect, it } from 'vitest';
import { ContainerEventCode, ContainerStateCode, SandboxStateCode } from '../../../src/cri/client/codes.js';
import type { ContainerEventSummary } from '../../../src/cri/client/container-event.js';
import { patchPod } from '../../../src/cri/cache/event-patch.js';
import type { RuntimeContainer, RuntimePod } from '../../../src/cri/cache/pods.js';

function container(id: string, state: RuntimeContainer['state'], sandboxId = 's1'): RuntimeContainer {
  return { id, sandboxId, name: id, attempt: 0, state, image: 'img', createdAt: 1, restartCount: 0, labels: {}, annotations: {} };
}

function pod(containers: RuntimeContainer[], sandboxes: RuntimePod['sandboxes'] = [{ id: 's1', state: 'ready', attempt: 0, createdAt: 1, labels: {}, annotations: {} }]): RuntimePod {
  return { uid: 'u1', name: 'web', namespace: 'default', sandboxes, containers, static: false, restartPolicy: 'Always', labels: {}, annotations: {} };
}

const NS = 1_000_000n;

function event(containerId: string, type: number, extra: Partial<ContainerEventSummary> = {}): ContainerEventSummary {
  return { containerId, containerEventType: type, podUid: 'u1', ...extra };
}

function exited(exitCode: number, reason = ''): ContainerEventSummary['status'] {
  return { state: ContainerStateCode.EXITED, startedAt: 5_000n * NS, finishedAt: 9_000n * NS, exitCode, reason };
}

describe('patchPod', () => {
  it("moves a container forward with the exit code, times and reason the event carries, leaving the pod's other containers", () => {
    const before = pod([container('c1', 'running'), container('c2', 'running')]);
    const after = patchPod(before, event('c1', ContainerEventCode.STOPPED, { status: exited(137, 'OOMKilled') }));
    expect(after).not.toBe(before);
    const patched = after as RuntimePod;
    expect(patched.containers[0]).toMatchObject({ id: 'c1', state: 'exited', exitCode: 137, reason: 'OOMKilled', startedAt: 5_000, finishedAt: 9_000 });
    expect(patched.containers[1]).toBe(before.containers[1]);
    // the pod it was given is not changed
    expect(before.containers[0]!.state).toBe('running');
  });

  it('never moves a container back: an older event returns the pod as it is', () => {
    const before = pod([container('c1', 'exited')]);
    const running = { state: ContainerStateCode.RUNNING, startedAt: 5_000n * NS, finishedAt: 0n, exitCode: 0, reason: '' };
    expect(patchPod(before, event('c1', ContainerEventCode.STARTED, { status: running }))).toBe(before);
    expect(patchPod(before, event('c1', ContainerEventCode.STOPPED, { status: exited(1) }))).toBe(before);
  });

  it('leaves to a listing what the event cannot say: no status, an unknown state, an id the pod does not hold', () => {
    const before = pod([container('c1', 'running')]);
    expect(patchPod(before, event('c1', ContainerEventCode.STOPPED))).toBeUndefined();
    const unknown = { state: ContainerStateCode.UNKNOWN, startedAt: 0n, finishedAt: 0n, exitCode: 0, reason: '' };
    expect(patchPod(before, event('c1', ContainerEventCode.STOPPED, { status: unknown }))).toBeUndefined();
    expect(patchPod(before, event('c9', ContainerEventCode.CREATED, { status: exited(0) }))).toBeUndefined();
  });

  it('removes a deleted container, and keeps the pod while its sandbox is there', () => {
    const before = pod([container('c1', 'exited'), container('c2', 'exited')]);
    const after = patchPod(before, event('c1', ContainerEventCode.DELETED)) as RuntimePod;
    expect(after.containers.map((c) => c.id)).toEqual(['c2']);
    expect(after.sandboxes).toHaveLength(1);
  });

  it('marks a stopped sandbox not ready, only from its own status, and never ready again', () => {
    const before = pod([container('c1', 'exited')]);
    const stopped = patchPod(before, event('s1', ContainerEventCode.STOPPED, { sandboxId: 's1', sandboxState: SandboxStateCode.NOTREADY })) as RuntimePod;
    expect(stopped.sandboxes[0]!.state).toBe('notready');
    expect(patchPod(stopped, event('s1', ContainerEventCode.STARTED, { sandboxId: 's1', sandboxState: SandboxStateCode.READY }))).toBe(stopped);
    expect(patchPod(before, event('s1', ContainerEventCode.STOPPED))).toBeUndefined();
  });

  it('a pod whose only sandbox is deleted with no container left is gone; otherwise a listing decides', () => {
    expect(patchPod(pod([]), event('s1', ContainerEventCode.DELETED))).toBe('gone');
    expect(patchPod(pod([container('c1', 'exited')]), event('s1', ContainerEventCode.DELETED))).toBeUndefined();
    const twoSandboxes = pod(
      [],
      [
        { id: 's2', state: 'ready', attempt: 1, createdAt: 2, labels: {}, annotations: {} },
        { id: 's1', state: 'notready', attempt: 0, createdAt: 1, labels: {}, annotations: {} },
      ],
    );
    expect(patchPod(twoSandboxes, event('s1', ContainerEventCode.DELETED))).toBeUndefined();
  });
});
