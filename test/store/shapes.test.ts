/**
 * The fast guards of shapes.ts must accept exactly what the zod schemas of schemas.ts accept: on
 * valid records, and on every single-field mutation of them (wrong type, missing, out of range).
 */
import { describe, expect, it } from 'vitest';
import { isCheckpointShape, isInboxRequestShape, isLeaseRecordShape } from '../../src/store/shapes.js';
import { HISTORY_LIMIT, storeSchemas } from '../../src/store/schemas.js';
import { checkpointFor, statusFor } from './support/fixtures.js';

const REPLACEMENTS: unknown[] = [undefined, null, 'x', '', -1, 0, 1.5, 2 ** 60, true, [], {}, [{}]];

type Json = Record<string, unknown> | unknown[];

/** Every path into `value`, not descending into opaque pod objects. */
function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [];
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      out.push([...prefix, i]);
      out.push(...paths(item, [...prefix, i]));
    });
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      out.push([...prefix, key]);
      if (key !== 'pod' && key !== 'mirrorPod') out.push(...paths(item, [...prefix, key]));
    }
  }
  return out;
}

function mutate(value: unknown, path: (string | number)[], replacement: unknown): unknown {
  const copy = structuredClone(value) as Json;
  let at: Json = copy;
  for (const key of path.slice(0, -1)) at = (at as Record<string | number, unknown>)[key] as Json;
  const last = path.at(-1)!;
  if (replacement === undefined && !Array.isArray(at)) delete (at)[last as string];
  else (at as Record<string | number, unknown>)[last] = replacement;
  return copy;
}

function agreeOnMutations(name: string, sample: unknown, fast: (v: unknown) => boolean, reference: (v: unknown) => boolean): number {
  expect(fast(sample), `${name}: valid sample`).toBe(true);
  expect(reference(sample), `${name}: valid sample (zod)`).toBe(true);
  let checked = 0;
  for (const path of paths(sample)) {
    for (const replacement of REPLACEMENTS) {
      const mutated = mutate(sample, path, replacement);
      const expected = reference(mutated);
      expect(fast(mutated), `${name} ${path.join('.')} = ${JSON.stringify(replacement)} (zod says ${expected})`).toBe(expected);
      checked += 1;
    }
  }
  return checked;
}

describe('fast guards agree with the zod schemas', () => {
  const schemas = storeSchemas();

  it('checkpoints: full, minimal, and every single-field mutation', () => {
    const zodOk = (v: unknown): boolean => schemas.checkpointSchema.safeParse(v).success;
    const full = JSON.parse(JSON.stringify(checkpointFor('0b6f3a52-1111-4c1e-9d4f-aaaaaaaaaaaa', { graceDeadline: 1_700_000_030_000 })));
    const minimal = JSON.parse(
      JSON.stringify(
        checkpointFor('u-min', {
          status: statusFor('u-min', { pendingUpdate: undefined, activeUpdate: undefined, syncedAt: undefined, terminatingAt: undefined }),
          lastError: undefined,
          history: [],
        }),
      ),
    );
    const checked = agreeOnMutations('checkpoint', full, isCheckpointShape, zodOk) + agreeOnMutations('minimal checkpoint', minimal, isCheckpointShape, zodOk);
    expect(checked).toBeGreaterThan(800);
    const tooLong = { ...full, history: Array.from({ length: HISTORY_LIMIT + 1 }, (_, i) => ({ at: i, type: 't', detail: 'd', pid: 1 })) };
    expect(isCheckpointShape(tooLong)).toBe(false);
    expect(zodOk(tooLong)).toBe(false);
  });

  it('lease records', () => {
    const sample = { uid: 'p', generation: 3, pid: 42, startTicks: 123, startedAt: 1_700_000_000_000, token: 'abc', acquiredAt: 1_700_000_000_001, released: false };
    agreeOnMutations('lease', sample, isLeaseRecordShape, (v) => schemas.leaseRecordSchema.safeParse(v).success);
  });

  it('inbox requests', () => {
    const sample = { id: '1-2-3', uid: 'p', at: 1_700_000_000_000, fromPid: 7, kind: 'kill', gracePeriodSeconds: 5, evict: true, reason: 'Evicted', message: 'm', pod: { metadata: { uid: 'p' } } };
    agreeOnMutations('request', sample, isInboxRequestShape, (v) => schemas.requestSchema.safeParse(v).success);
  });
});
