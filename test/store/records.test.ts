/**
 * The store's record schemas (src/store/records.ts): valid records pass unchanged, each bound the
 * store relies on is enforced, and every rejection names the offending field. The checkpoint's
 * status, timeline entry and last error types are the engine's and the domain's exactly (checked
 * by the type checker).
 */
import { describe, expect, expectTypeOf, it, vi } from 'vitest';
import type { InferOutput } from 'valibot';
import type { PodSyncStatusView } from '../../src/engine/types.js';
import type { RuntimeErrorInfo, TransitionRecord } from '../../src/domain/session-api.js';
import { MAX_GRACE_SECONDS } from '../../src/engine/grace.js';
import { HISTORY_LIMIT, checkRecord, checkpointHeaderSchema, checkpointSchema, inboxRequestSchema, leaseRecordSchema, podSyncStatusSchema, type PodCheckpoint } from '../../src/store/records.js';
import { checkpointFor, podFor } from './support/fixtures.js';

const json = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
const checkpoint = (): PodCheckpoint => json(checkpointFor('0b6f3a52-1111-4c1e-9d4f-aaaaaaaaaaaa', { graceDeadline: 1_700_000_030_000 }));
const lease = () => ({ uid: 'p', generation: 3, pid: 42, startTicks: 123, startedAt: 1_700_000_000_000, pidNs: '4026531836', token: 'abc', acquiredAt: 1_700_000_000_001, released: false });
const request = () => ({ id: '1-2-3', uid: 'p', at: 1_700_000_000_000, fromPid: 7, kind: 'kill', gracePeriodSeconds: 5, evict: true, reason: 'Evicted', message: 'm', pod: podFor('p') });
const header = () => ({ format: 'podctl/pod-checkpoint', version: 1, length: 10, sha256: 'a'.repeat(64) });

/** `record` with the member at `path` set to `value` (removed when `value` is undefined). */
function withField(record: unknown, path: string, value: unknown): unknown {
  const copy = structuredClone(record) as Record<string, unknown>;
  const keys = path.split('.');
  let at = copy;
  for (const key of keys.slice(0, -1)) at = at[key] as Record<string, unknown>;
  if (value === undefined) delete at[keys.at(-1)!];
  else at[keys.at(-1)!] = value;
  return copy;
}

function issueOf(schema: Parameters<typeof checkRecord>[0], input: unknown): string {
  const check = checkRecord(schema, input);
  return check.ok ? 'accepted' : check.issue;
}

describe('record schemas', () => {
  it('the types a lower layer owns are the ones the schema infers (engine status view, domain timeline entry and error)', () => {
    expectTypeOf<InferOutput<typeof podSyncStatusSchema>>().toEqualTypeOf<PodSyncStatusView>();
    expectTypeOf<PodCheckpoint['status']>().toEqualTypeOf<PodSyncStatusView>();
    expectTypeOf<PodCheckpoint['history'][number]>().toEqualTypeOf<TransitionRecord>();
    expectTypeOf<NonNullable<PodCheckpoint['lastError']>>().toEqualTypeOf<RuntimeErrorInfo>();
  });

  it('valid records pass unchanged; members no schema knows are dropped', () => {
    for (const [schema, sample] of [
      [checkpointSchema, checkpoint()],
      [leaseRecordSchema, lease()],
      [inboxRequestSchema, request()],
      [checkpointHeaderSchema, header()],
    ] as const) {
      expect(checkRecord(schema, sample)).toEqual({ ok: true, value: sample });
      expect(checkRecord(schema, { ...sample, extra: 1 })).toEqual({ ok: true, value: sample });
    }
    const minimal = json(checkpointFor('u-min', { lastError: undefined, history: [] }));
    delete (minimal.status as Partial<PodSyncStatusView>).pendingUpdate;
    delete (minimal.status as Partial<PodSyncStatusView>).activeUpdate;
    expect(checkRecord(checkpointSchema, minimal)).toEqual({ ok: true, value: minimal });
    // optional members may be present as undefined (objects built in memory)
    expect(checkRecord(inboxRequestSchema, { ...request(), reason: undefined }).ok).toBe(true);
  });

  it('a grace period is at most a year (MAX_GRACE_SECONDS) wherever one is stored', () => {
    expect(MAX_GRACE_SECONDS).toBe(31_536_000);
    const message = `grace period negative or past the maximum of ${MAX_GRACE_SECONDS} s`;
    for (const path of ['status.gracePeriod', 'status.activeUpdate.killPodOptions.gracePeriodSecondsOverride']) {
      expect(issueOf(checkpointSchema, withField(checkpoint(), path, MAX_GRACE_SECONDS)), path).toBe('accepted');
      expect(issueOf(checkpointSchema, withField(checkpoint(), path, MAX_GRACE_SECONDS + 1))).toBe(`${path}: ${message}`);
      expect(issueOf(checkpointSchema, withField(checkpoint(), path, -1))).toBe(`${path}: ${message}`);
    }
    expect(issueOf(inboxRequestSchema, { ...request(), gracePeriodSeconds: MAX_GRACE_SECONDS })).toBe('accepted');
    expect(issueOf(inboxRequestSchema, { ...request(), gracePeriodSeconds: MAX_GRACE_SECONDS + 1 })).toBe(`gracePeriodSeconds: ${message}`);
  });

  it('the history holds at most HISTORY_LIMIT records', () => {
    const history = (n: number) => Array.from({ length: n }, (_, i) => ({ at: i, type: 't', detail: 'd', pid: 1 }));
    expect(issueOf(checkpointSchema, { ...checkpoint(), history: history(HISTORY_LIMIT) })).toBe('accepted');
    expect(issueOf(checkpointSchema, { ...checkpoint(), history: history(HISTORY_LIMIT + 1) })).toMatch(/^history: /);
  });

  it.each([
    // [what, schema, sample, field, value]
    ['times are epoch ms a Date can hold', checkpointSchema, checkpoint, 'writtenAt', 8.64e15 + 1],
    ['times are not negative', checkpointSchema, checkpoint, 'status.terminatingAt', -1],
    ['a timeline entry names its time', checkpointSchema, checkpoint, 'history.1.at', 'soon'],
    ['a retry time is an epoch', checkpointSchema, checkpoint, 'lastError.retryAt', 8.64e15 + 1],
    ['PIDs are safe integers', checkpointSchema, checkpoint, 'writerPid', 1.5],
    ['PIDs in the timeline too', checkpointSchema, checkpoint, 'history.0.pid', 2 ** 60],
    ['a checkpoint names its pod', checkpointSchema, checkpoint, 'uid', ''],
    ['the status names its pod', checkpointSchema, checkpoint, 'status.uid', ''],
    ['flags are booleans', checkpointSchema, checkpoint, 'status.finished', 'yes'],
    ['flags are required', checkpointSchema, checkpoint, 'status.deleted', undefined],
    ['update types are the four', checkpointSchema, checkpoint, 'status.activeUpdate.updateType', 'reboot'],
    ['kill options are an object, not a list', checkpointSchema, checkpoint, 'status.activeUpdate.killPodOptions', []],
    ['a pod is an object, not a list', checkpointSchema, checkpoint, 'status.activeUpdate.pod', []],
    ['container states are the runtime states', checkpointSchema, checkpoint, 'status.pendingUpdate.runningPod.containers.0.state', 'paused'],
    ['sandbox states are ready or notready', checkpointSchema, checkpoint, 'status.pendingUpdate.runningPod.sandboxes.0.state', 'gone'],
    ['a grace deadline is an epoch', checkpointSchema, checkpoint, 'graceDeadline', null],
    ['a lease generation is positive', leaseRecordSchema, lease, 'generation', 0],
    ['a lease generation is an integer', leaseRecordSchema, lease, 'generation', 2.5],
    ['start ticks are not negative', leaseRecordSchema, lease, 'startTicks', -1],
    ['a PID namespace is digits', leaseRecordSchema, lease, 'pidNs', 'pid:[4026531836]'],
    ['a lease says whether it is released', leaseRecordSchema, lease, 'released', undefined],
    ['a request has an id', inboxRequestSchema, request, 'id', ''],
    ['a request is a kill', inboxRequestSchema, request, 'kind', 'reboot'],
    ['a request PID is an integer', inboxRequestSchema, request, 'fromPid', 7.5],
    ['a request pod is an object', inboxRequestSchema, request, 'pod', 'p'],
    ['the payload length is not negative', checkpointHeaderSchema, header, 'length', -1],
    ['the checksum is lowercase hex sha256', checkpointHeaderSchema, header, 'sha256', 'A'.repeat(64)],
  ] as const)('%s: a rejection names the field', (_what, schema, sample, field, value) => {
    expect(issueOf(schema, withField(sample(), field, value))).toMatch(new RegExp(`^${field.replaceAll('.', '\\.')}: \\S`));
  });

  it('a record that is not an object is rejected at its root; a list in place of a member object names the member', () => {
    expect(issueOf(leaseRecordSchema, [])).toMatch(/^uid: /);
    for (const input of [null, 'x', 3]) expect(issueOf(leaseRecordSchema, input)).toMatch(/^\(root\): /);
    for (const field of ['status', 'lastError', 'status.pendingUpdate.runningPod', 'history.0']) {
      expect(issueOf(checkpointSchema, withField(checkpoint(), field, [])), field).toMatch(new RegExp(`^${field.replaceAll('.', '\\.')}(\\.\\w+)?: `));
    }
  });

  it('builds each schema at its first use and once: loading the module builds none (a command that reads no record pays none)', async () => {
    vi.resetModules();
    let built = 0;
    vi.doMock('valibot', async (importOriginal) => {
      const actual = await importOriginal<typeof import('valibot')>();
      return { ...actual, object: (...args: Parameters<typeof actual.object>) => ((built += 1), actual.object(...args)) };
    });
    try {
      const records = await import('../../src/store/records.js');
      expect(built).toBe(0);
      expect(records.checkRecord(records.checkpointSchema, checkpoint())).toEqual({ ok: true, value: checkpoint() });
      const once = built;
      expect(once).toBeGreaterThan(0);
      expect(records.checkRecord(records.checkpointSchema, withField(checkpoint(), 'writerPid', 1.5))).toMatchObject({ ok: false, issue: expect.stringMatching(/^writerPid: /) as unknown });
      expect(records.checkRecord(records.podSyncStatusSchema, checkpoint().status).ok).toBe(true);
      expect(built).toBe(once);
      expect(records.checkRecord(records.leaseRecordSchema, lease()).ok).toBe(true);
      expect(built).toBe(once + 1);
    } finally {
      vi.doUnmock('valibot');
      vi.resetModules();
    }
  });
});
