/**
 * lib/schema-compiler.ts on schemas beyond the store's records: each node type it knows agrees
 * with `v.safeParse` (verdict and output, member order included) on its edge inputs, and every
 * schema it does not know is refused when compiled, naming where.
 */
import { isDeepStrictEqual } from 'node:util';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { INVALID, UnsupportedSchemaError, checkerOf, compileSchema, compileSchemaInPlace } from '../../src/lib/schema-compiler.js';

const INPUTS: unknown[] = [
  undefined,
  null,
  true,
  false,
  0,
  -0,
  1,
  -1,
  0.5,
  Number.NaN,
  Infinity,
  -Infinity,
  2 ** 53,
  '',
  'a',
  'ab',
  'abc',
  'A1',
  '12',
  [],
  ['a'],
  ['a', 'b', 'c'],
  [1, Number.NaN],
  // a hole (read as undefined)
  new Array<string>(2).fill('a', 1),
  {},
  { a: 'x' },
  { a: undefined },
  { a: 'x', b: 2, extra: true },
  { b: 2, a: 'x' },
  { a: 'x', b: 2, c: true },
  { a: 'x', b: 2, c: true, d: 'y' },
  { d: 'y', c: true, b: 2, a: 'x', e: 0 },
  { a: 'x', b: 2, c: undefined, d: 'y' },
  { a: 'x', b: 2, d: 'y' },
  { a: 'x', b: Number.NaN, c: true, d: 'y' },
  { a: 1 },
  Object.create({ a: 'inherited' }) as unknown,
  new Date(0),
];

/** A fresh copy of an input (structuredClone drops nothing here: undefined members stay). */
function structuredCloneKeepingUndefined(input: unknown): unknown {
  return input === undefined ? undefined : structuredClone(input);
}

/** The verdict and output of both, as one comparable value (the output's member order included). */
function outcome(result: unknown): unknown {
  if (result === INVALID) return 'rejected';
  const order = (value: unknown): unknown => (typeof value === 'object' && value !== null ? Object.entries(value).map(([key, item]) => [key, order(item)]) : value);
  return { value: result, order: order(result) };
}

const schemas: [string, v.GenericSchema][] = [
  ['string', v.string()],
  ['number (no NaN, Infinity allowed)', v.number()],
  ['boolean', v.boolean()],
  ['picklist', v.picklist(['a', 'ab', 0])],
  ['literal', v.literal('a')],
  ['literal NaN (SameValueZero)', v.literal(Number.NaN)],
  ['literal 0 matches -0', v.literal(0)],
  ['custom', v.custom((x) => typeof x === 'string' && x.length === 2)],
  ['finite', v.pipe(v.number(), v.finite())],
  ['safe integer, at least 1', v.pipe(v.number(), v.safeInteger(), v.minValue(1))],
  ['finite, at least 0', v.pipe(v.number(), v.finite(), v.minValue(0))],
  [
    'number check',
    v.pipe(
      v.number(),
      v.check((n) => n !== 1),
    ),
  ],
  ['string length 1…2', v.pipe(v.string(), v.minLength(1), v.maxLength(2))],
  ['array length ≤ 2', v.pipe(v.array(v.string()), v.maxLength(2))],
  ['regex', v.pipe(v.string(), v.regex(/^\d+$/))],
  ['metadata is skipped', v.pipe(v.string(), v.description('d'), v.minLength(1))],
  ['object, one required member', v.object({ a: v.string() })],
  ['object, two required members', v.object({ a: v.string(), b: v.number() })],
  ['object, three required members', v.object({ a: v.string(), b: v.number(), c: v.boolean() })],
  ['object, four members, one optional', v.object({ a: v.string(), b: v.number(), c: v.optional(v.boolean()), d: v.picklist(['y']) })],
  ['object, four required tests', v.object({ a: v.string(), b: v.number(), c: v.custom(() => true), d: v.picklist(['y']) })],
  [
    'object, members checked inline (string, boolean, number with a check that passes NaN)',
    v.object({
      a: v.optional(v.string()),
      b: v.pipe(
        v.number(),
        v.check(() => true),
      ),
      c: v.optional(v.boolean()),
    }),
  ],
  ['object, all optional (an array passes)', v.object({ a: v.optional(v.string()) })],
  ['object, member order from the schema', v.object({ b: v.optional(v.number()), a: v.optional(v.string()) })],
  ['object, default when absent or undefined', v.object({ a: v.optional(v.string(), 'dflt'), b: v.optional(v.number()) })],
  [
    'object inside a pipe after a custom',
    v.pipe(
      v.custom<object>((x) => typeof x === 'object' && x !== null && !Array.isArray(x)),
      v.object({ a: v.optional(v.string()) }),
    ),
  ],
  ['optional pipe as a member', v.object({ a: v.optional(v.pipe(v.string(), v.minLength(2))) })],
  [
    'piped optional as a member',
    v.object({
      a: v.pipe(
        v.optional(v.string()),
        v.check((x) => x !== 'x'),
      ),
    }),
  ],
  ['array of objects', v.array(v.object({ a: v.string() }))],
  ['array of numbers', v.array(v.number())],
  ['nested optional object', v.object({ o: v.optional(v.object({ a: v.string() })) })],
  ['pipe of a pipe', v.pipe(v.pipe(v.number(), v.finite()), v.minValue(0))],
  ['top-level optional', v.optional(v.string())],
  ['top-level optional with a default', v.optional(v.number(), 7)],
];

describe('schema compiler', () => {
  it.each(schemas)('%s: the same verdict and output as v.safeParse', (_what, schema) => {
    const check = compileSchema(schema);
    for (const input of INPUTS) {
      const expected = v.safeParse(schema, input, { abortEarly: true });
      expect(outcome(check(input)), String(JSON.stringify(input))).toEqual(outcome(expected.success ? expected.output : INVALID));
      if (expected.success) expect(isDeepStrictEqual(check(input), expected.output)).toBe(true);
    }
  });

  it.each(schemas)('%s, in place: the same verdict, an output equal to v.safeParse’s, and the input itself where nothing is dropped', (_what, schema) => {
    const check = compileSchemaInPlace(schema);
    for (const input of INPUTS) {
      // each input afresh, as JSON.parse would give it (a member left as undefined stays so)
      const own =
        typeof input === 'object' && input !== null && !(input instanceof Date) && Object.getPrototypeOf(input) !== Object.prototype && !Array.isArray(input)
          ? input
          : structuredCloneKeepingUndefined(input);
      const expected = v.safeParse(schema, own, { abortEarly: true });
      const got = check(own);
      expect(got === INVALID, String(JSON.stringify(input))).toBe(!expected.success);
      if (!expected.success) continue;
      expect(isDeepStrictEqual(got, expected.output), String(JSON.stringify(input))).toBe(true);
      // the input itself exactly when valibot's output holds the same members (in any order)
      const sameMembers =
        typeof own === 'object' && own !== null && !Array.isArray(own)
          ? isDeepStrictEqual({ ...own }, expected.output) && Object.getPrototypeOf(own) === Object.prototype
          : Array.isArray(own) && isDeepStrictEqual(own, expected.output);
      if (typeof own === 'object' && own !== null) expect(got === own, `${JSON.stringify(input)} returned ${got === own ? 'itself' : 'a copy'}`).toBe(sameMembers);
    }
  });

  it('in place: a record with nothing to drop is returned itself, nested records too; one member to drop copies only the path to it', () => {
    const schema = v.object({
      a: v.string(),
      inner: v.object({ b: v.number(), c: v.optional(v.string()) }),
      list: v.array(v.object({ d: v.boolean(), e: v.string() })),
      tail: v.optional(v.number(), 5),
    });
    const check = compileSchemaInPlace(schema);
    const whole = JSON.parse('{"inner":{"b":1},"a":"x","list":[{"d":true,"e":"1"},{"e":"2","d":false}],"tail":1}') as Record<string, unknown>;
    expect(check(whole)).toBe(whole);
    const extra = JSON.parse('{"a":"x","inner":{"b":1},"list":[{"d":true,"e":"1"},{"d":false,"e":"2","drop":1}],"tail":1}') as { inner: object; list: object[] };
    const out = check(extra) as { inner: object; list: object[] };
    expect(out).not.toBe(extra);
    expect(out.inner).toBe(extra.inner);
    expect(out.list).not.toBe(extra.list);
    expect(out.list[0]).toBe(extra.list[0]);
    expect(out.list[1]).toStrictEqual({ d: false, e: '2' });
    expect(out).toStrictEqual({
      a: 'x',
      inner: { b: 1 },
      list: [
        { d: true, e: '1' },
        { d: false, e: '2' },
      ],
      tail: 1,
    });
    // a default to fill is a copy, in the schema's order
    const defaulted = JSON.parse('{"a":"x","inner":{"b":1},"list":[]}') as object;
    const filled = check(defaulted);
    expect(filled).not.toBe(defaulted);
    expect(Object.keys(filled as object)).toEqual(['a', 'inner', 'list', 'tail']);
    expect((filled as { tail: number }).tail).toBe(5);
    expect(check(JSON.parse('{"a":"x","inner":{"b":"1"},"list":[]}'))).toBe(INVALID);
  });

  it('checkerOf keeps the copying and the in-place checker of a schema apart', () => {
    const schema = v.object({ a: v.string() });
    const input = { a: 'x' };
    expect(checkerOf(schema, true)).toBe(checkerOf(schema, true));
    expect(checkerOf(schema, true)(input)).toBe(input);
    expect(checkerOf(schema)(input)).not.toBe(input);
  });

  it('an object output is a new object holding only the schema’s members; a member present as undefined stays', () => {
    const schema = v.object({ a: v.optional(v.string()), b: v.number() });
    const input = { b: 1, a: undefined, c: 3 };
    const output = compileSchema(schema)(input);
    expect(output).not.toBe(input);
    expect(Object.keys(output as object)).toEqual(['a', 'b']);
    expect(output).toStrictEqual({ a: undefined, b: 1 });
  });

  it('checkerOf compiles a schema once', () => {
    const schema = v.object({ a: v.string() });
    expect(checkerOf(schema)).toBe(checkerOf(schema));
  });

  it.each([
    ['nullable', () => v.nullable(v.string()), '(root)'],
    ['union', () => v.union([v.string(), v.number()]), '(root)'],
    [
      'a transformation in a pipe',
      () =>
        v.pipe(
          v.string(),
          v.transform((s) => s.length),
        ),
      '(root)',
    ],
    ['a validation it does not know', () => v.object({ a: v.pipe(v.number(), v.maxValue(3)) }), 'a'],
    ['a fallback', () => v.object({ a: v.fallback(v.string(), 'x') }), 'a'],
    ['a config wrapper', () => v.object({ a: v.config(v.string(), { abortEarly: false }) }), 'a'],
    ['a nullish member', () => v.object({ a: v.nullish(v.string()) }), 'a'],
    ['an exact optional member', () => v.object({ a: v.exactOptional(v.string()) }), 'a'],
    ['a function default', () => v.object({ a: v.optional(v.string(), () => 'x') }), 'a'],
    ['a global regex', () => v.object({ a: v.pipe(v.string(), v.regex(/a/g)) }), 'a'],
    ['an async schema', () => v.objectAsync({ a: v.string() }), '(root)'],
    ['a record', () => v.object({ r: v.array(v.record(v.string(), v.string())) }), 'r.item'],
    ['a look-alike of a valibot schema', () => ({ ...v.string(), '~run': () => ({ typed: true, value: 1 }) }), '(root)'],
  ] as const)('refuses %s at compile time, naming where', (_what, make, where) => {
    const schema = make() as unknown as v.GenericSchema;
    expect(() => compileSchema(schema)).toThrow(UnsupportedSchemaError);
    expect(() => compileSchema(schema)).toThrow(`cannot compile the schema at ${where}: `);
  });
});
