/**
 * The store reads records through compiled checkers (lib/schema-compiler.ts), not valibot: this
 * holds them to valibot's verdict and output on real records and on systematic mutations of them.
 * Records are produced by the store itself (a checkpoint file's header and payload, a lease
 * generation, an inbox request, read back from a temporary state dir), then every member of each
 * is deleted, retyped, pushed out of range, replaced by a list or by another member's value, and
 * given extra members; a seeded mix of two mutations at a time covers their interplay. For each
 * input: the compiled checker accepts exactly when `v.safeParse` does, gives the same output (the
 * same members, `undefined` ones included, in the same order), and `checkRecord` answers as
 * valibot words it.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import * as v from 'valibot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_GRACE_SECONDS } from '../../src/engine/grace.js';
import { INVALID, checkerOf, compileSchema } from '../../src/lib/schema-compiler.js';
import { encodeCheckpoint } from '../../src/store/format.js';
import { openStore } from '../../src/store/index.js';
import * as records from '../../src/store/records.js';
import { HISTORY_LIMIT, checkRecord, checkpointHeaderSchema, checkpointSchema, inboxRequestSchema, leaseRecordSchema } from '../../src/store/records.js';
import { checkpointFor, podFor, tempDir } from './support/fixtures.js';

type Json = unknown;
type Path = (string | number)[];

/** Every exported schema of records.ts, by name. */
const exportedSchemas = (Object.entries(records) as [string, unknown][]).filter(
  (entry): entry is [string, v.GenericSchema] => typeof entry[1] === 'object' && entry[1] !== null && (entry[1] as { kind?: unknown }).kind === 'schema',
);

/** Every key of `value`, nested, in order (own keys, `undefined` members included). */
function keysDeep(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return typeof value;
  if (Array.isArray(value)) return value.map(keysDeep);
  return Object.keys(value).map((key) => [key, keysDeep((value as Record<string, unknown>)[key])]);
}

/**
 * The paths of every member of `value` and of the first two elements of every list (the rest are
 * alike: a timeline of 64 entries), outermost first (the root is []).
 */
function pathsOf(value: Json, at: Path = []): Path[] {
  const out: Path[] = [at];
  if (Array.isArray(value)) value.slice(0, 2).forEach((item, i) => out.push(...pathsOf(item, [...at, i])));
  else if (typeof value === 'object' && value !== null) for (const [key, item] of Object.entries(value)) out.push(...pathsOf(item, [...at, key]));
  return out;
}

function getAt(value: Json, path: Path): Json {
  let at = value;
  for (const key of path) at = (at as Record<string | number, Json>)[key];
  return at;
}

const DELETE = Symbol('delete');

/** A copy of `value` with the member at `path` replaced (or deleted); the root is replaced whole. */
function setAt(value: Json, path: Path, replacement: unknown /* or DELETE */): Json {
  if (path.length === 0) return replacement === DELETE ? undefined : replacement;
  const copy = structuredClone(value);
  const parent = getAt(copy, path.slice(0, -1)) as Record<string | number, Json>;
  const key = path.at(-1)!;
  if (replacement === DELETE) {
    if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete parent[key];
  } else parent[key] = replacement;
  return copy;
}

/** Values of every type and edge a record member can be given. */
const EDGES: Json[] = [
  undefined,
  null,
  true,
  false,
  0,
  -0,
  1,
  -1,
  1.5,
  Number.NaN,
  Infinity,
  -Infinity,
  2 ** 53,
  2 ** 53 - 1,
  -(2 ** 53),
  8.64e15,
  8.64e15 + 1,
  MAX_GRACE_SECONDS,
  MAX_GRACE_SECONDS + 1,
  '',
  'x',
  '0',
  '123',
  '12a',
  ' 12',
  '12\n',
  'kill',
  'sync',
  'running',
  'paused',
  'ready',
  'gone',
  'podctl/pod-checkpoint',
  'a'.repeat(64),
  'A'.repeat(64),
  'a'.repeat(63),
  'a'.repeat(65),
  `${'a'.repeat(64)}\n`,
  [],
  [1],
  {},
  { extra: 1 },
];

/** Replacements of one member: delete it, each edge value, neighbours of a number, a list in place of it, extra members. */
function replacementsAt(current: Json, isRoot: boolean, pool: Json[]): unknown /* or DELETE */[] {
  const out: unknown /* or DELETE */[] = isRoot ? [] : [DELETE];
  out.push(...EDGES, ...pool);
  if (typeof current === 'number') out.push(current - 1, current + 1, current * 2 ** 40, -current);
  if (typeof current === 'string') out.push(`${current}!`, current.slice(1));
  if (Array.isArray(current)) {
    const cycle = (length: number) => Array.from({ length }, (_, i): Json => current[i % Math.max(1, current.length)]);
    out.push([...current, ...current], cycle(HISTORY_LIMIT + 1), cycle(HISTORY_LIMIT), { ...current });
  } else if (typeof current === 'object' && current !== null) {
    out.push(
      Object.values(current),
      [current],
      { ...current, extra: 'member', __proto__: { inherited: 1 } },
      { extra: 1, ...current },
      // every member inherited, none its own (valibot asks `key in input`)
      Object.create(current) as Json,
      // the same members in reverse order: the output follows the schema's order, not the input's
      Object.fromEntries(Object.entries(current).reverse()),
      // every member present as undefined
      Object.fromEntries(Object.keys(current).map((key) => [key, undefined])),
    );
  }
  return out;
}

/** Other members' values (distinct leaves, at most 24, spread over the record) to stand in for each member. */
function poolOf(sample: Json, paths: Path[]): Json[] {
  const leaves = [...new Set(paths.map((path) => getAt(sample, path)).filter((value) => typeof value !== 'object' || value === null))];
  const step = Math.max(1, Math.ceil(leaves.length / 24));
  return leaves.filter((_, i) => i % step === 0);
}

/** A small seeded generator (mulberry32), so a failure reproduces. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Tally {
  accepted: number;
  rejected: number;
  disagreements: string[];
}

/** Runs `input` through the compiled checker, valibot and checkRecord; records any disagreement. */
function compare(schema: v.GenericSchema, input: Json, label: string, tally: Tally): void {
  const expected = v.safeParse(schema, input, { abortEarly: true });
  const compiled = checkerOf(schema)(input);
  const say = (what: string) => tally.disagreements.push(`${label}: ${what} — input ${JSON.stringify(input)?.slice(0, 300)}`);
  if ((compiled !== INVALID) !== expected.success) return void say(`compiled ${compiled === INVALID ? 'rejects' : 'accepts'}, valibot ${expected.success ? 'accepts' : 'rejects'}`);
  const check = checkRecord(schema, input);
  // the in-place checker (checkRecord with `owned`), on a copy of its own: the same verdict and an equal output
  // (a copy has no prototype of its own: valibot is asked about the copy)
  const own = structuredClone(input);
  const expectedOwn = v.safeParse(schema, own, { abortEarly: true });
  const inPlace = checkerOf(schema, true)(own);
  if ((inPlace !== INVALID) !== expectedOwn.success) return void say(`in place ${inPlace === INVALID ? 'rejects' : 'accepts'}, valibot ${expectedOwn.success ? 'accepts' : 'rejects'}`);
  if (expectedOwn.success && !isDeepStrictEqual(inPlace, expectedOwn.output)) say('the in-place output differs');
  if (expected.success) {
    tally.accepted += 1;
    if (!isDeepStrictEqual(compiled, expected.output)) say('outputs differ');
    else if (!isDeepStrictEqual(keysDeep(compiled), keysDeep(expected.output))) say('output members in another order');
    else if (!check.ok || !isDeepStrictEqual(check.value, expected.output)) say('checkRecord differs');
  } else {
    tally.rejected += 1;
    const issue = expected.issues[0];
    if (check.ok || check.issue !== `${v.getDotPath(issue) ?? '(root)'}: ${issue.message}`) say(`checkRecord words it otherwise: ${JSON.stringify(check)}`);
  }
}

/** Real records, read back from a store in a temporary state dir. */
interface Samples {
  checkpoints: Json[];
  headers: Json[];
  leases: Json[];
  requests: Json[];
}

let dir: Awaited<ReturnType<typeof tempDir>>;
let samples: Samples;

beforeAll(async () => {
  dir = await tempDir('podctl-record-checker-');
  const store = await openStore({ stateDir: dir.path });
  const full = checkpointFor('0b6f3a52-1111-4c1e-9d4f-aaaaaaaaaaaa', { graceDeadline: 1_700_000_030_000 });
  const minimal = checkpointFor('0b6f3a52-2222-4c1e-9d4f-bbbbbbbbbbbb', { lastError: { message: 'm', at: 1 }, history: [] });
  delete (minimal.status as Partial<typeof minimal.status>).pendingUpdate;
  delete (minimal.status as Partial<typeof minimal.status>).activeUpdate;
  const finished = checkpointFor('0b6f3a52-3333-4c1e-9d4f-cccccccccccc', {
    status: { ...full.status, working: false, finished: true, terminatedAt: 1_700_000_003_000, pendingUpdate: undefined, activeUpdate: { updateType: 'sync', mirrorPod: podFor('m') } },
    history: Array.from({ length: HISTORY_LIMIT }, (_, i) => ({ at: 1_700_000_000_000 + i, type: 'state-changed', detail: `step ${i}`, pid: 40 + i })),
    lastError: undefined,
  });
  for (const checkpoint of [full, minimal, finished]) await store.checkpoints.write(checkpoint);
  await store.leases.tryAcquire('0b6f3a52-1111-4c1e-9d4f-aaaaaaaaaaaa');
  await store.leases.tryAcquire('0b6f3a52-2222-4c1e-9d4f-bbbbbbbbbbbb');
  await store.leases.release('0b6f3a52-2222-4c1e-9d4f-bbbbbbbbbbbb');
  await store.inbox.post({ uid: '0b6f3a52-1111-4c1e-9d4f-aaaaaaaaaaaa', kind: 'kill', gracePeriodSeconds: 5, evict: true, reason: 'Evicted', message: 'm', pod: podFor('p') });
  await store.inbox.post({ uid: '0b6f3a52-2222-4c1e-9d4f-bbbbbbbbbbbb', kind: 'kill' });
  const read = async (folder: string): Promise<string[]> =>
    Promise.all(
      (await readdir(folder))
        .filter((name) => !name.startsWith('.'))
        .sort()
        .map((name) => readFile(join(folder, name), 'utf8')),
    );
  const files = await read(store.layout.pods);
  samples = {
    headers: files.map((file) => JSON.parse(file.slice(0, file.indexOf('\n')))),
    checkpoints: files.map((file) => JSON.parse(file.slice(file.indexOf('\n') + 1))),
    leases: (await read(store.layout.leases)).map((file) => JSON.parse(file)),
    requests: (await read(store.layout.inbox)).map((file) => JSON.parse(file)),
  };
  // in memory, an optional member may be present as undefined
  samples.checkpoints.push(JSON.parse(encodeCheckpoint(full).toString('utf8').split('\n')[1]!), { ...structuredClone(samples.checkpoints[0] as object), graceDeadline: undefined });
  samples.requests.push({ ...(samples.requests[0] as object), reason: undefined, pod: undefined });
});

afterAll(async () => dir?.cleanup());

describe('compiled record checkers agree with valibot', () => {
  it('every schema records.ts exports compiles', () => {
    expect(exportedSchemas.map(([name]) => name).sort()).toEqual(['agentMarkSchema', 'checkpointHeaderSchema', 'checkpointSchema', 'inboxRequestSchema', 'leaseRecordSchema', 'podSyncStatusSchema']);
    for (const [name, schema] of exportedSchemas) expect(() => compileSchema(schema), name).not.toThrow();
  });

  it('the rules a repair asks (isStoredEpochMs, isStoredGrace) compile and say what the schema says', () => {
    for (const value of EDGES) {
      const isEpoch = typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= 8.64e15;
      expect(records.isStoredEpochMs(value), String(value)).toBe(isEpoch);
      expect(records.isStoredGrace(value), String(value)).toBe(typeof value === 'number' && value >= 0 && value <= MAX_GRACE_SECONDS);
      const withTime = structuredClone(samples.checkpoints[0]) as { since: unknown };
      withTime.since = value;
      expect(checkRecord(checkpointSchema, withTime).ok).toBe(isEpoch);
    }
  });

  it('the store wrote real records of every kind, and they pass', () => {
    expect(samples.checkpoints.length).toBeGreaterThanOrEqual(3);
    expect(samples.headers).toHaveLength(3);
    expect(samples.leases.length).toBeGreaterThanOrEqual(2);
    expect(samples.requests).toHaveLength(3);
    for (const [schema, list] of [
      [checkpointSchema, samples.checkpoints],
      [checkpointHeaderSchema, samples.headers],
      [leaseRecordSchema, samples.leases],
      [inboxRequestSchema, samples.requests],
    ] as const) {
      for (const sample of list) {
        expect(checkRecord(schema, sample)).toEqual({ ok: true, value: sample });
        // as read from a file: the parsed record is the record, not a copy of it
        const parsed = JSON.parse(JSON.stringify(sample)) as Json;
        const owned = checkRecord(schema, parsed, { owned: true });
        expect(owned.ok && owned.value).toBe(parsed);
      }
    }
  });

  it.each([
    ['checkpoint', () => checkpointSchema, () => samples.checkpoints],
    ['checkpoint status', () => records.podSyncStatusSchema, () => samples.checkpoints.map((c) => (c as { status: Json }).status)],
    ['checkpoint header', () => checkpointHeaderSchema, () => samples.headers],
    ['lease', () => leaseRecordSchema, () => samples.leases],
    ['inbox request', () => inboxRequestSchema, () => samples.requests],
  ] as const)('%s: every member deleted, retyped, out of range, a list, another member, with extras', (_what, schemaOf, samplesOf) => {
    const schema = schemaOf();
    const tally: Tally = { accepted: 0, rejected: 0, disagreements: [] };
    for (const [s, sample] of samplesOf().entries()) {
      const paths = pathsOf(sample);
      const pool = poolOf(sample, paths);
      for (const path of paths) {
        for (const [m, replacement] of replacementsAt(getAt(sample, path), path.length === 0, pool).entries()) {
          compare(schema, setAt(sample, path, replacement), `sample ${s}, ${path.join('.') || '(root)'} #${m}`, tally);
        }
      }
      for (const input of [null, undefined, 'x', 3, [], [sample], Object.values(sample as object), { ...(sample as object), extra: 1 }]) compare(schema, input, `sample ${s} as a whole`, tally);
    }
    expect(tally.disagreements.slice(0, 10)).toEqual([]);
    // the mutations reach both verdicts, many times over
    expect(tally.accepted).toBeGreaterThan(50);
    expect(tally.rejected).toBeGreaterThan(500);
  });

  it.each([
    ['checkpoint', () => checkpointSchema, () => samples.checkpoints],
    ['lease', () => leaseRecordSchema, () => samples.leases],
    ['inbox request', () => inboxRequestSchema, () => samples.requests],
  ] as const)('%s: two mutations at a time (seeded)', (_what, schemaOf, samplesOf) => {
    const schema = schemaOf();
    const random = seeded(18);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
    const tally: Tally = { accepted: 0, rejected: 0, disagreements: [] };
    for (let round = 0; round < 2000; round += 1) {
      let input = pick(samplesOf());
      const applied: string[] = [];
      for (let step = 0; step < 2; step += 1) {
        const paths = pathsOf(input);
        const path = pick(paths);
        input = setAt(input, path, pick(replacementsAt(getAt(input, path), path.length === 0, poolOf(input, paths))));
        applied.push(path.join('.') || '(root)');
      }
      compare(schema, input, `round ${round} (${applied.join(', ')})`, tally);
    }
    expect(tally.disagreements.slice(0, 10)).toEqual([]);
    expect(tally.accepted).toBeGreaterThan(100);
    expect(tally.rejected).toBeGreaterThan(100);
  });
});
