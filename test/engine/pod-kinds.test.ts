/**
 * The one definition of each kind of pod (src/engine/pod-kinds.ts): one answer per edge value, and
 * the same answer from every reader of it — the engine, the runtime reader, the API code, the drain
 * planner and the kill gate.
 */
import { describe, expect, it } from 'vitest';
import type { V1Pod } from '../../src/engine/types.js';
import {
  criticalReasonOf,
  fullNameOfPod,
  isApiSourcedPod,
  isCriticalPod,
  isDaemonSetPod,
  isMirrorPod,
  isStaticPod,
  isTerminalPhase,
  podPriority,
  SYSTEM_CRITICAL_PRIORITY,
} from '../../src/engine/pod-kinds.js';
import { createPodWorkers } from '../../src/engine/index.js';
import { planDesired } from '../../src/kube/desired.js';
import { criticalReason } from '../../src/services/drain/drain-plan.js';
import type { PodInfo } from '../../src/domain/session-api.js';

const SOURCE = 'kubernetes.io/config.source';
const MIRROR = 'kubernetes.io/config.mirror';

const pod = (parts: {
  annotations?: Record<string, string>;
  namespace?: string;
  priority?: number;
  className?: string;
  phase?: string;
  owners?: NonNullable<V1Pod['metadata']>['ownerReferences'];
}): V1Pod => ({
  metadata: {
    name: 'p',
    uid: 'u',
    ...(parts.namespace !== undefined ? { namespace: parts.namespace } : {}),
    ...(parts.annotations ? { annotations: parts.annotations } : {}),
    ...(parts.owners ? { ownerReferences: parts.owners } : {}),
  },
  spec: { containers: [], ...(parts.priority !== undefined ? { priority: parts.priority } : {}), ...(parts.className ? { priorityClassName: parts.className } : {}) },
  ...(parts.phase ? { status: { phase: parts.phase } } : {}),
});

interface Row {
  case: string;
  pod: V1Pod;
  static: boolean;
  apiSourced: boolean;
  mirror: boolean;
  critical: 'static' | 'mirror' | 'priority' | undefined;
  priority: number;
  daemonSet: boolean;
  terminal: boolean;
  fullName: string;
}

const owner = (kind: string, controller?: boolean) => ({ apiVersion: 'apps/v1', kind, name: 'o', uid: 'o1', ...(controller !== undefined ? { controller } : {}) });

const rows: Row[] = [
  {
    case: 'no annotations at all',
    pod: pod({ namespace: 'ns' }),
    static: false,
    apiSourced: false,
    mirror: false,
    critical: undefined,
    priority: 0,
    daemonSet: false,
    terminal: false,
    fullName: 'p_ns',
  },
  {
    case: 'config.source missing, other annotations',
    pod: pod({ namespace: 'ns', annotations: { a: 'b' } }),
    static: false,
    apiSourced: false,
    mirror: false,
    critical: undefined,
    priority: 0,
    daemonSet: false,
    terminal: false,
    fullName: 'p_ns',
  },
  {
    case: 'config.source empty',
    pod: pod({ namespace: 'ns', annotations: { [SOURCE]: '' } }),
    static: true,
    apiSourced: false,
    mirror: false,
    critical: 'static',
    priority: 0,
    daemonSet: false,
    terminal: false,
    fullName: 'p_ns',
  },
  {
    case: 'config.source api',
    pod: pod({ namespace: 'ns', annotations: { [SOURCE]: 'api' } }),
    static: false,
    apiSourced: true,
    mirror: false,
    critical: undefined,
    priority: 0,
    daemonSet: false,
    terminal: false,
    fullName: 'p_ns',
  },
  {
    case: 'config.source file',
    pod: pod({ namespace: 'ns', annotations: { [SOURCE]: 'file' } }),
    static: true,
    apiSourced: false,
    mirror: false,
    critical: 'static',
    priority: 0,
    daemonSet: false,
    terminal: false,
    fullName: 'p_ns',
  },
  {
    case: 'mirror annotation empty',
    pod: pod({ namespace: 'ns', annotations: { [MIRROR]: '' } }),
    static: false,
    apiSourced: false,
    mirror: true,
    critical: 'mirror',
    priority: 0,
    daemonSet: false,
    terminal: false,
    fullName: 'p_ns',
  },
  { case: 'namespace missing', pod: pod({}), static: false, apiSourced: false, mirror: false, critical: undefined, priority: 0, daemonSet: false, terminal: false, fullName: 'p_' },
  {
    case: 'priority exactly 2,000,000,000',
    pod: pod({ namespace: 'ns', priority: 2_000_000_000 }),
    static: false,
    apiSourced: false,
    mirror: false,
    critical: 'priority',
    priority: 2_000_000_000,
    daemonSet: false,
    terminal: false,
    fullName: 'p_ns',
  },
  {
    case: 'priority 1,999,999,999',
    pod: pod({ namespace: 'ns', priority: 1_999_999_999 }),
    static: false,
    apiSourced: false,
    mirror: false,
    critical: undefined,
    priority: 1_999_999_999,
    daemonSet: false,
    terminal: false,
    fullName: 'p_ns',
  },
  {
    case: 'system-node-critical class, no priority',
    pod: pod({ namespace: 'ns', className: 'system-node-critical' }),
    static: false,
    apiSourced: false,
    mirror: false,
    critical: 'priority',
    priority: 2_000_001_000,
    daemonSet: false,
    terminal: false,
    fullName: 'p_ns',
  },
  {
    case: 'system-cluster-critical class, no priority',
    pod: pod({ namespace: 'ns', className: 'system-cluster-critical' }),
    static: false,
    apiSourced: false,
    mirror: false,
    critical: 'priority',
    priority: 2_000_000_000,
    daemonSet: false,
    terminal: false,
    fullName: 'p_ns',
  },
  {
    case: 'critical class name but a lower priority given',
    pod: pod({ namespace: 'ns', className: 'system-cluster-critical', priority: 5 }),
    static: false,
    apiSourced: false,
    mirror: false,
    critical: undefined,
    priority: 5,
    daemonSet: false,
    terminal: false,
    fullName: 'p_ns',
  },
  {
    case: 'another class name, no priority',
    pod: pod({ namespace: 'ns', className: 'high' }),
    static: false,
    apiSourced: false,
    mirror: false,
    critical: undefined,
    priority: 0,
    daemonSet: false,
    terminal: false,
    fullName: 'p_ns',
  },
  {
    case: 'DaemonSet controller',
    pod: pod({ namespace: 'ns', owners: [owner('DaemonSet', true)] }),
    static: false,
    apiSourced: false,
    mirror: false,
    critical: undefined,
    priority: 0,
    daemonSet: true,
    terminal: false,
    fullName: 'p_ns',
  },
  {
    case: 'DaemonSet owner that is not the controller',
    pod: pod({ namespace: 'ns', owners: [owner('DaemonSet'), owner('ReplicaSet', true)] }),
    static: false,
    apiSourced: false,
    mirror: false,
    critical: undefined,
    priority: 0,
    daemonSet: false,
    terminal: false,
    fullName: 'p_ns',
  },
  {
    case: 'phase Failed',
    pod: pod({ namespace: 'ns', phase: 'Failed' }),
    static: false,
    apiSourced: false,
    mirror: false,
    critical: undefined,
    priority: 0,
    daemonSet: false,
    terminal: true,
    fullName: 'p_ns',
  },
  {
    case: 'phase Succeeded',
    pod: pod({ namespace: 'ns', phase: 'Succeeded' }),
    static: false,
    apiSourced: false,
    mirror: false,
    critical: undefined,
    priority: 0,
    daemonSet: false,
    terminal: true,
    fullName: 'p_ns',
  },
  {
    case: 'phase Running',
    pod: pod({ namespace: 'ns', phase: 'Running' }),
    static: false,
    apiSourced: false,
    mirror: false,
    critical: undefined,
    priority: 0,
    daemonSet: false,
    terminal: false,
    fullName: 'p_ns',
  },
];

describe('one definition of each kind of pod', () => {
  it.each(rows)('$case', (row) => {
    expect({
      static: isStaticPod(row.pod),
      apiSourced: isApiSourcedPod(row.pod),
      mirror: isMirrorPod(row.pod),
      critical: criticalReasonOf(row.pod),
      isCritical: isCriticalPod(row.pod),
      priority: podPriority(row.pod),
      daemonSet: isDaemonSetPod(row.pod),
      terminal: isTerminalPhase(row.pod),
      fullName: fullNameOfPod(row.pod),
    }).toEqual({
      static: row.static,
      apiSourced: row.apiSourced,
      mirror: row.mirror,
      critical: row.critical,
      isCritical: row.critical !== undefined,
      priority: row.priority,
      daemonSet: row.daemonSet,
      terminal: row.terminal,
      fullName: row.fullName,
    });
  });

  it('the critical priority is the scheduler system-critical value', () => {
    expect(SYSTEM_CRITICAL_PRIORITY).toBe(2_000_000_000);
  });

  it('a missing pod is of no kind', () => {
    expect([isStaticPod(undefined), isMirrorPod(undefined), isCriticalPod(undefined), isDaemonSetPod(undefined), isTerminalPhase(undefined), fullNameOfPod(undefined)]).toEqual([
      false,
      false,
      false,
      false,
      false,
      '_',
    ]);
  });
});

describe('every reader gives the same answer', () => {
  const info = (p: V1Pod, isStatic = false): PodInfo => ({
    uid: 'u',
    namespace: 'ns',
    name: 'p',
    pod: p,
    static: isStatic,
    state: 'runtime',
    containersRunning: 0,
    containersTotal: 0,
    since: 0,
    history: [],
  });

  it.each(rows)('the drain planner and the kill gate: $case', (row) => {
    expect(criticalReason(info(row.pod))).toBe(row.critical);
  });

  it('the engine treats a pod with an empty config.source as static (one at a time per full name)', async () => {
    const workers = createPodWorkers({
      syncer: { syncPod: () => Promise.resolve(false), syncTerminatingPod: () => Promise.resolve(), syncTerminatingRuntimePod: () => Promise.resolve(), syncTerminatedPod: () => Promise.resolve() },
      cache: { get: () => undefined, getNewerThan: (uid) => Promise.resolve({ id: uid, name: '', namespace: '', containerStatuses: [], sandboxStatuses: [] }) },
      resyncIntervalMs: 3_600_000,
    });
    const named = (uid: string): V1Pod => ({ metadata: { uid, name: 'same', namespace: 'ns', annotations: { [SOURCE]: '' } }, spec: { containers: [] } });
    workers.updatePod({ updateType: 'create', pod: named('a') });
    workers.updatePod({ updateType: 'create', pod: named('b') });
    await workers.whenIdle();
    expect(workers.syncKnownPods([named('a'), named('b')]).get('b')?.static).toBe(true);
    await workers.close();
  });

  it('the API code matches a mirror pod with no namespace to the runtime static pod of the same full name', () => {
    const mirror: V1Pod = { metadata: { name: 'etcd', uid: 'm1', annotations: { [MIRROR]: 'h' } } };
    const plan = planDesired([mirror], [{ uid: 's1', name: 'etcd', namespace: '', static: true }]);
    expect(plan.mirrors).toEqual([{ mirror: { namespace: 'default', name: 'etcd', uid: 'm1' }, staticUid: 's1' }]);
  });
});
