import { describe, expect, it } from 'vitest';
import type { PodSandbox, Container } from '../../src/cri/client/client.js';
import { EndpointError } from '../../src/cri/client/endpoint.js';
import { CriError } from '../../src/cri/client/errors.js';
import { groupRuntimePods, toPodStatus, toV1Pod } from '../../src/cri/cache/pods.js';
import { KubeError } from '../../src/kube/errors.js';
import { ERROR_NAMES, PodNotFoundError, RuntimeFailure, UsageError, errorName, errorRecord, exitCodeOf } from '../../src/lib/errors.js';
import { isoOrNull, isoTime, withNulls } from '../../src/lib/json-vocabulary.js';
import { PodNotFound } from '../../src/session/inbox.js';
import { createdAtOf, formatAge, readyCell, readyOf, sandboxCell } from '../../src/services/diagnose/pod-ready.js';
import { StoreError } from '../../src/store/errors.js';

describe('error records: one name vocabulary', () => {
  it('every thrown value is named from ERROR_NAMES, by what failed, with its exit code', () => {
    const cases: [unknown, string, number][] = [
      [new UsageError('bad flag'), 'UsageError', 2],
      [Object.assign(new Error('Nonexistent flag: --nope'), { oclif: { exit: 2 } }), 'UsageError', 2],
      [new PodNotFoundError(['web/a']), 'PodNotFoundError', 4],
      [new PodNotFound('uid-1'), 'PodNotFoundError', 4],
      [new CriError('StopContainer', 14, 'connection refused'), 'RuntimeError', 1],
      [new EndpointError('runtime endpoint /x (--runtime-endpoint): no such socket', 'missing', '/x'), 'RuntimeError', 1],
      [new StoreError('EIO', '/var/lib/podctl/x', 'cannot write'), 'StoreError', 1],
      [new KubeError('list pods', 'forbidden', 403), 'ApiServerError', 1],
      // a wrapper is named by what it wraps, or by the part it names
      [new RuntimeFailure('runtime version: Unavailable', undefined, { cause: new CriError('Version', 14, '') }), 'RuntimeError', 1],
      [new RuntimeFailure('sync-known failed', undefined, { cause: new StoreError('EIO', '/s', 'x') }), 'StoreError', 1],
      [new RuntimeFailure('bad kubeconfig', 'fix --kubeconfig', { kind: 'ApiServerError' }), 'ApiServerError', 1],
      [new RuntimeFailure('socket already served'), 'Failure', 1],
      [new DOMException('interrupted by SIGINT', 'AbortError'), 'InterruptedError', 130],
      [new TypeError('x is undefined'), 'InternalError', 1],
      ['a string', 'InternalError', 1],
    ];
    for (const [error, name, code] of cases) {
      expect(errorName(error), String(error)).toBe(name);
      expect(ERROR_NAMES).toContain(errorName(error));
      expect(errorRecord(error)).toEqual({ name, message: expect.any(String), exitCode: code });
      expect(exitCodeOf(error)).toBe(code);
    }
  });
});

describe('the JSON vocabulary', () => {
  it('times are ISO 8601 in UTC with milliseconds; an unknown time is null', () => {
    expect(isoTime(Date.parse('2026-01-02T03:04:05.006Z'))).toBe('2026-01-02T03:04:05.006Z');
    expect(isoOrNull(undefined)).toBeNull();
    expect(isoOrNull(null)).toBeNull();
    expect(isoOrNull(Number.NaN)).toBeNull();
    expect(isoOrNull(0)).toBe('1970-01-01T00:00:00.000Z');
  });

  it('withNulls makes missing documented fields null and leaves the others as they are', () => {
    const value: { a: number; b?: string; c?: number | null; d?: boolean } = { a: 1, d: false };
    expect(withNulls(value, ['b', 'c', 'd'])).toEqual({ a: 1, b: null, c: null, d: false });
    expect(JSON.stringify(withNulls(value, ['b']))).toBe('{"a":1,"d":false,"b":null}');
  });
});

const MS = 1_000_000n;
const sandbox = (id: string, createdMs: bigint, state = 0): PodSandbox => ({
  id,
  metadata: { name: 'web-1', uid: 'uid-1', namespace: 'shop', attempt: 0 },
  state,
  createdAt: createdMs * MS,
  labels: { 'io.kubernetes.pod.name': 'web-1', 'io.kubernetes.pod.namespace': 'shop', 'io.kubernetes.pod.uid': 'uid-1' },
  annotations: {},
  runtimeHandler: '',
});
const container = (id: string, name: string, state: number, createdMs: bigint, sandboxId: string): Container => ({
  id,
  podSandboxId: sandboxId,
  metadata: { name, attempt: 0 },
  image: { image: 'nginx:1', annotations: {}, userSpecifiedImage: '', runtimeHandler: '' },
  imageRef: 'sha256:abc',
  state,
  createdAt: createdMs * MS,
  labels: { 'io.kubernetes.pod.name': 'web-1', 'io.kubernetes.pod.namespace': 'shop', 'io.kubernetes.pod.uid': 'uid-1', 'io.kubernetes.container.name': name },
  annotations: {},
  imageId: '',
});

describe('READY and AGE (status, watch records)', () => {
  it("READY counts the newest attempt of each container; the sandbox is the newest one; the age is the oldest sandbox's", () => {
    // a restarted pod: an old sandbox (not ready) and a new one (ready); app exited once and runs again; side exited
    const pod = groupRuntimePods(
      [sandbox('sb-old', 1_000n, 1), sandbox('sb-new', 5_000n, 0)],
      [container('app-0', 'app', 2, 1_100n, 'sb-old'), container('app-1', 'app', 1, 5_100n, 'sb-new'), container('side-0', 'side', 2, 5_200n, 'sb-new')],
    ).get('uid-1')!;
    const info = { runtime: toPodStatus(pod), pod: toV1Pod(pod) };
    expect(readyOf(info)).toEqual({ sandbox: true, containers: 1, total: 2 });
    expect(readyCell(readyOf(info))).toBe('1/2');
    expect(sandboxCell(readyOf(info))).toBe('ready');
    expect(createdAtOf(info)).toBe(1_000);
  });

  it('a pod the runtime does not report has no READY (-); no sandbox listed is sandbox null', () => {
    expect(readyOf({})).toBeNull();
    expect(readyCell(null)).toBe('-');
    expect(sandboxCell(null)).toBe('-');
    const bare = readyOf({ runtime: { id: 'u', name: 'a', namespace: 'b', containerStatuses: [], sandboxStatuses: [] } });
    expect(bare).toEqual({ sandbox: null, containers: 0, total: 0 });
    expect(sandboxCell(bare)).toBe('-');
  });

  it('the creation time comes from the spec as a Date or a string (a checkpoint), else it is unknown', () => {
    expect(createdAtOf({ pod: { metadata: { creationTimestamp: new Date(42_000) } } })).toBe(42_000);
    expect(createdAtOf({ pod: { metadata: { creationTimestamp: '2026-01-01T00:00:00Z' as unknown as Date } } })).toBe(Date.parse('2026-01-01T00:00:00Z'));
    expect(createdAtOf({ pod: { metadata: {} } })).toBeUndefined();
    expect(createdAtOf({})).toBeUndefined();
  });

  it("AGE reads as kubectl's", () => {
    expect([0, 59, 119, 120, 185, 600, 10_799, 10_800, 14_460, 28_800, 172_799, 172_800, 200_000, 691_200, 63_072_000, 64_000_000, 300_000_000].map(formatAge)).toEqual([
      '0s',
      '59s',
      '119s',
      '2m',
      '3m5s',
      '10m',
      '179m',
      '3h',
      '4h1m',
      '8h',
      '47h',
      '2d',
      '2d7h',
      '8d',
      '2y',
      '2y10d',
      '9y',
    ]);
  });
});
