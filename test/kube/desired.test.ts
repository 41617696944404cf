/** The kubelet's config source in pure functions: mirror pods, deletions, the desired set. */
import { describe, expect, it } from 'vitest';
import { desiredInApi, planDesired } from '../../src/kube/desired.js';
import { fullNameOfPod } from '../../src/engine/pod-kinds.js';

const apiPod = (name: string, uid: string, extra: { annotations?: Record<string, string>; deletion?: number; grace?: number; phase?: string } = {}) => ({
  metadata: {
    name,
    namespace: 'kube-system',
    uid,
    ...(extra.annotations ? { annotations: extra.annotations } : {}),
    ...(extra.deletion !== undefined ? { deletionTimestamp: new Date(), deletionGracePeriodSeconds: extra.deletion } : {}),
  },
  spec: { containers: [], terminationGracePeriodSeconds: extra.grace ?? 30 },
  status: { phase: extra.phase ?? 'Running' },
});

describe('planDesired', () => {
  it('a mirror pod stands for the runtime static pod of the same full name, never itself', () => {
    const mirror = apiPod('etcd-node1', 'api-uid', { annotations: { 'kubernetes.io/config.mirror': 'hash1' } });
    const staticSpec = { metadata: { name: 'etcd-node1', namespace: 'kube-system', uid: 'hash1' } };
    const plan = planDesired(
      [mirror],
      [
        { uid: 'hash1', name: 'etcd-node1', namespace: 'kube-system', static: true, pod: staticSpec },
        { uid: 'x', name: 'other', namespace: 'kube-system', static: true },
      ],
    );
    expect(plan.desired).toEqual([staticSpec]);
    expect(plan.mirrors).toEqual([{ mirror: { namespace: 'kube-system', name: 'etcd-node1', uid: 'api-uid' }, staticUid: 'hash1' }]);
    expect(plan.deletions).toEqual([]);
    // a runtime pod of the same name that is not static is not matched
    expect(planDesired([mirror], [{ uid: 'hash1', name: 'etcd-node1', namespace: 'kube-system', static: false }]).desired).toEqual([]);
    expect(fullNameOfPod(mirror)).toBe('etcd-node1_kube-system');
  });

  it('a pod deleted in the API stays desired and becomes a kill with deletionGracePeriodSeconds (else its spec grace)', () => {
    const deleted = apiPod('web', 'u1', { deletion: 3 });
    const plain = apiPod('db', 'u2');
    const finished = apiPod('job', 'u3', { deletion: 5, phase: 'Succeeded' });
    const plan = planDesired([deleted, plain, finished], []);
    expect(plan.desired.map((p) => p.metadata?.uid)).toEqual(['u1', 'u2', 'u3']);
    expect(plan.deletions.map((d) => [d.uid, d.gracePeriodSeconds])).toEqual([['u1', 3]]);
    const noGrace = { ...apiPod('x', 'u4', { grace: 12 }), metadata: { ...apiPod('x', 'u4').metadata, deletionTimestamp: new Date() } };
    expect(planDesired([noGrace], []).deletions[0]?.gracePeriodSeconds).toBe(12);
  });

  it('desiredInApi: bound, not being deleted, not terminal, not a mirror', () => {
    const pods = [apiPod('a', 'u1'), apiPod('b', 'u2', { deletion: 3 }), apiPod('c', 'u3', { phase: 'Failed' }), apiPod('d', 'u4', { annotations: { 'kubernetes.io/config.mirror': 'h' } })];
    expect(['u1', 'u2', 'u3', 'u4', 'u5'].map((u) => desiredInApi(pods, u) !== undefined)).toEqual([true, false, false, false, false]);
  });
});
