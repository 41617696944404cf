/**
 * Compiles a valibot schema into one specialised checker: a tree of closures, built once per
 * schema, that validates an input and builds the output valibot would give (`v.parse`'s value),
 * without valibot's datasets and issues. It serves the store's record reads (store/records.ts),
 * where a cold process validates hundreds of checkpoints before V8 optimizes anything.
 *
 * Owns: the translation of the valibot node types it knows — schemas `object`, `array`,
 * `optional`, `string`, `number`, `boolean`, `picklist`, `literal`, `custom`, and `pipe`s of them
 * with the validations `finite`, `safe_integer`, `min_length`, `max_length`, `min_value`, `regex`,
 * `check` (metadata actions are skipped, as valibot's pipe skips them) — and the per-schema cache
 * of `checkerOf`. It says nothing about any message: a caller that needs one asks valibot.
 *
 * Invariants:
 * - Same verdict and same output as `v.safeParse(schema, input, { abortEarly: true })` for plain
 *   data (JSON.parse output, objects built in memory): an object's output holds the entries' keys
 *   in the schema's order and drops every other member; a member present as `undefined` stays so
 *   when its entry is optional; an object schema accepts an array, as valibot's does; numbers
 *   exclude NaN. (Getters and Proxies may be read in another order than valibot reads them.)
 *   test/lib/schema-compiler.test.ts and test/store/record-checker.test.ts hold both side by side.
 * - In place (`compileSchemaInPlace`, for JSON.parse's output, which the store owns alone): the same
 *   verdict and an output equal to valibot's, made of the input's own objects and arrays wherever
 *   one would be copied member for member (nothing dropped, nothing defaulted, a plain object), so
 *   a record read from a file is checked without being built a second time.
 * - Anything it does not know fails at compile time with `UnsupportedSchemaError` naming where,
 *   never at run time and never by passing: a node is recognised by `reference` (the valibot
 *   function that built it) and by its `~run` being valibot's own for that function, so a wrapper
 *   that replaces `~run` (`v.fallback`, `v.config`) or an async schema is refused; so are function
 *   defaults and `g`/`y` regexes (whose outcome depends on state).
 * - A checker never throws for an input valibot accepts or rejects without throwing; it calls the
 *   schema's own functions (`check`, `requirement`) as valibot does, with the node as `this`.
 */
import * as v from 'valibot';

/** What a checker returns for an input the schema rejects. */
export const INVALID: unique symbol = Symbol('invalid');

/** Validates `input`; returns the schema's output, or `INVALID`. */
export type Checker<Output> = (input: unknown) => Output | typeof INVALID;

/** A schema (or part of one) the compiler cannot translate exactly. */
export class UnsupportedSchemaError extends Error {
  constructor(where: string, what: string) {
    super(`cannot compile the schema at ${where || '(root)'}: ${what}`);
    this.name = 'UnsupportedSchemaError';
  }
}

/** The members of valibot's schema and action objects the compiler reads. */
interface Node {
  readonly kind: string;
  readonly type: string;
  readonly reference: unknown;
  readonly async: boolean;
  readonly '~run': unknown;
  readonly pipe?: readonly Node[];
  readonly entries?: Readonly<Record<string, Node>>;
  readonly item?: Node;
  readonly wrapped?: Node;
  readonly default?: unknown;
  readonly options?: readonly unknown[];
  readonly literal?: unknown;
  readonly check?: (input: unknown) => unknown;
  readonly requirement?: unknown;
}

type Run = (input: unknown) => unknown;
type Test = (input: unknown) => boolean;

/** The source of valibot's own `~run` for each factory, from a sample built once (lazily). */
let canonical: Map<unknown, string> | undefined;
function canonicalRuns(): Map<unknown, string> {
  if (canonical) return canonical;
  const runOf = (node: unknown): string => String((node as Node)['~run']);
  const str = v.string();
  canonical = new Map<unknown, string>([
    [v.object, runOf(v.object({}))],
    [v.array, runOf(v.array(str))],
    [v.optional, runOf(v.optional(str))],
    [v.string, runOf(str)],
    [v.number, runOf(v.number())],
    [v.boolean, runOf(v.boolean())],
    [v.picklist, runOf(v.picklist(['a']))],
    [v.literal, runOf(v.literal('a'))],
    [v.custom, runOf(v.custom(() => true))],
    [v.finite, runOf(v.finite())],
    [v.safeInteger, runOf(v.safeInteger())],
    [v.minLength, runOf(v.minLength(0))],
    [v.maxLength, runOf(v.maxLength(0))],
    [v.minValue, runOf(v.minValue(0))],
    [v.regex, runOf(v.regex(/a/))],
    [v.check, runOf(v.check(() => true))],
    [v.pipe, runOf(v.pipe(str))],
  ]);
  return canonical;
}

/**
 * Refuses a node whose `~run` is not valibot's own for `factory` (a wrapper, or a look-alike). A
 * pipe carries its first item's members (`reference` too) and valibot's pipe `~run`.
 */
function expectRun(node: Node, factory: unknown, where: string): void {
  const isPipe = factory === v.pipe;
  if (node.async !== false) throw new UnsupportedSchemaError(where, `an async ${node.type}`);
  if ((isPipe ? node.reference !== node.pipe?.[0]?.reference : node.reference !== factory) || String(node['~run']) !== canonicalRuns().get(factory)) {
    throw new UnsupportedSchemaError(where, `a ${isPipe ? 'pipe' : node.type} that is not valibot's own (wrapped, e.g. by fallback or config)`);
  }
}

const at = (where: string, key: string | number): string => (where ? `${where}.${key}` : String(key));

/**
 * A node that returns its input unchanged when valid (a leaf, an optional or a pipe of such, with
 * validations): its test. Otherwise undefined (the node builds its output: compileNode).
 */
function testOf(node: Node, where: string): Test | undefined {
  if (node.pipe) {
    expectRun(node, v.pipe, where);
    const items = pipeItems(node, where);
    const tests: Test[] = [];
    for (const [index, item] of items.entries()) {
      if (item.kind === 'validation') tests.push(validationOf(item, where));
      else if (item.kind === 'schema') {
        const test = testOf(item, where);
        if (!test) return undefined;
        tests.push(test);
      } else throw new UnsupportedSchemaError(where, `the ${item.kind} '${item.type}' in a pipe (item ${index})`);
    }
    // The most common pipe, a number and one requirement (finite, safe_integer, check), in one call.
    const [first, second] = items;
    if (items.length === 2 && first!.type === 'number' && !first!.pipe && second!.kind === 'validation' && isCallValidation(second!)) {
      const owner = second as Node & { requirement(x: unknown): unknown };
      // x === x: not NaN (valibot's number refuses NaN)
      return (x) => typeof x === 'number' && x === x && !!owner.requirement(x);
    }
    return allOf(tests);
  }
  switch (node.type) {
    case 'string':
      expectRun(node, v.string, where);
      return (x) => typeof x === 'string';
    case 'number':
      expectRun(node, v.number, where);
      return (x) => typeof x === 'number' && !Number.isNaN(x);
    case 'boolean':
      expectRun(node, v.boolean, where);
      return (x) => typeof x === 'boolean';
    case 'picklist': {
      expectRun(node, v.picklist, where);
      const options = node.options;
      if (!Array.isArray(options)) throw new UnsupportedSchemaError(where, 'a picklist without options');
      return (x) => options.includes(x);
    }
    case 'literal': {
      expectRun(node, v.literal, where);
      const literal = node.literal;
      // valibot compares with SameValueZero
      return Number.isNaN(literal) ? (x) => Number.isNaN(x) : (x) => x === literal;
    }
    case 'custom': {
      expectRun(node, v.custom, where);
      if (typeof node.check !== 'function') throw new UnsupportedSchemaError(where, 'a custom schema without a check');
      const owner = node as Node & { check(x: unknown): unknown };
      return (x) => !!owner.check(x);
    }
    case 'optional': {
      expectRun(node, v.optional, where);
      if (defaultOf(node, where) !== undefined) return undefined;
      const wrapped = testOf(wrappedOf(node, where), where);
      return wrapped && ((x) => x === undefined || wrapped(x));
    }
    default:
      return undefined;
  }
}

/** A pipe's items without its metadata (which valibot's pipe skips); the first is a schema. */
function pipeItems(node: Node, where: string): readonly Node[] {
  const items = node.pipe!.filter((item) => item.kind !== 'metadata');
  if (items[0]?.kind !== 'schema') throw new UnsupportedSchemaError(where, 'a pipe that does not start with a schema');
  return items;
}

function wrappedOf(node: Node, where: string): Node {
  if (!node.wrapped) throw new UnsupportedSchemaError(where, 'an optional without a wrapped schema');
  return node.wrapped;
}

/** The validations valibot runs as `this.requirement(value)`. */
const isCallValidation = (action: Node): boolean => action.type === 'finite' || action.type === 'safe_integer' || action.type === 'check';

/** A validation action of a pipe, as a test of the (already typed) value. */
function validationOf(action: Node, where: string): Test {
  const requirement = action.requirement;
  switch (action.type) {
    case 'finite':
    case 'safe_integer':
    case 'check': {
      expectRun(action, action.type === 'finite' ? v.finite : action.type === 'safe_integer' ? v.safeInteger : v.check, where);
      if (typeof requirement !== 'function') throw new UnsupportedSchemaError(where, `a ${action.type} without a requirement`);
      const owner = action as Node & { requirement(x: unknown): unknown };
      return (x) => !!owner.requirement(x);
    }
    case 'min_length':
      expectRun(action, v.minLength, where);
      return (x) => !((x as { length: number }).length < (requirement as number));
    case 'max_length':
      expectRun(action, v.maxLength, where);
      return (x) => !((x as { length: number }).length > (requirement as number));
    case 'min_value':
      expectRun(action, v.minValue, where);
      return (x) => (x as number) >= (requirement as number);
    case 'regex': {
      expectRun(action, v.regex, where);
      if (!(requirement instanceof RegExp)) throw new UnsupportedSchemaError(where, 'a regex without a RegExp');
      if (requirement.global || requirement.sticky) throw new UnsupportedSchemaError(where, `a ${requirement.flags} regex (its test depends on lastIndex)`);
      return (x) => requirement.test(x as string);
    }
    default:
      throw new UnsupportedSchemaError(where, `the ${action.kind} '${action.type}'`);
  }
}

/** All tests must pass, in order. */
function allOf(tests: Test[]): Test {
  if (tests.length === 1) return tests[0]!;
  if (tests.length === 2) {
    const [a, b] = tests as [Test, Test];
    return (x) => a(x) && b(x);
  }
  if (tests.length === 3) {
    const [a, b, c] = tests as [Test, Test, Test];
    return (x) => a(x) && b(x) && c(x);
  }
  return (x) => {
    for (const test of tests) if (!test(x)) return false;
    return true;
  };
}

const fromTest =
  (test: Test): Run =>
  (x) =>
    test(x) ? x : INVALID;

function compileNode(node: Node, where: string, inPlace: boolean): Run {
  const test = testOf(node, where);
  if (test) return fromTest(test);
  if (node.pipe) return compilePipe(node, where, inPlace);
  switch (node.type) {
    case 'object':
      expectRun(node, v.object, where);
      return compileObject(node, where, inPlace);
    case 'array': {
      expectRun(node, v.array, where);
      if (!node.item) throw new UnsupportedSchemaError(where, 'an array without an item schema');
      const itemTest = testOf(node.item, at(where, 'item'));
      if (itemTest) {
        return (input) => {
          if (!Array.isArray(input)) return INVALID;
          const items = input as unknown[];
          // in place: every item is its own output (a hole is read as undefined, as valibot reads it)
          const output: unknown[] | undefined = inPlace ? undefined : [];
          for (let i = 0; i < items.length; i += 1) {
            const value = items[i];
            if (!itemTest(value)) return INVALID;
            output?.push(value);
          }
          return output ?? items;
        };
      }
      const item = compileNode(node.item, at(where, 'item'), inPlace);
      return (input) => {
        if (!Array.isArray(input)) return INVALID;
        const items = input as unknown[];
        // in place: the output array is made only once an item's output is not the item itself
        let output: unknown[] | undefined = inPlace ? undefined : [];
        for (let i = 0; i < items.length; i += 1) {
          const value = item(items[i]);
          if (value === INVALID) return INVALID;
          if (output === undefined && value !== items[i]) output = items.slice(0, i);
          output?.push(value);
        }
        return output ?? items;
      };
    }
    case 'optional': {
      expectRun(node, v.optional, where);
      const fallback = defaultOf(node, where);
      const wrapped = compileNode(wrappedOf(node, where), where, inPlace);
      if (fallback === undefined) return (input) => (input === undefined ? undefined : wrapped(input));
      return (input) => wrapped(input === undefined ? fallback : input);
    }
    default:
      throw new UnsupportedSchemaError(where, `the ${node.kind} '${node.type}'`);
  }
}

/** An optional's default: a value only (a function default is called with valibot's dataset). */
function defaultOf(node: Node, where: string): unknown {
  if (typeof node.default === 'function') throw new UnsupportedSchemaError(where, 'a function as the default');
  return node.default;
}

/** A pipe that builds its output: its schemas in turn, each on the output of the one before. */
function compilePipe(node: Node, where: string, inPlace: boolean): Run {
  expectRun(node, v.pipe, where);
  const steps: { run?: Run; test?: Test }[] = [];
  for (const item of pipeItems(node, where)) {
    if (item.kind === 'validation') steps.push({ test: validationOf(item, where) });
    else if (item.kind === 'schema') {
      const test = testOf(item, where);
      steps.push(test ? { test } : { run: compileNode(item, where, inPlace) });
    } else throw new UnsupportedSchemaError(where, `the ${item.kind} '${item.type}' in a pipe`);
  }
  // Runs of tests fold into one; what remains is a short chain of runs.
  const runs: Run[] = [];
  let pending: Test[] = [];
  const flush = (): void => {
    if (pending.length > 0) runs.push(fromTest(allOf(pending)));
    pending = [];
  };
  for (const step of steps) {
    if (step.test) pending.push(step.test);
    else {
      flush();
      runs.push(step.run!);
    }
  }
  flush();
  if (runs.length === 1) return runs[0]!;
  return (input) => {
    let value = input;
    for (const run of runs) {
      value = run(value);
      if (value === INVALID) return INVALID;
    }
    return value;
  };
}

/** How the object loop checks a member: inline for the common leaves, else by its test or run. */
const enum Check {
  String,
  Boolean,
  /** A number with one requirement (finite, safe_integer, check): `owner.requirement(value)`. */
  NumberCall,
  Test,
  Run,
}

/** A valibot node as the object loop checks it (the node already compiled: testOf verified it). */
function checkOf(node: Node, test: Test | undefined): { check: Check; owner?: Node & { requirement(x: unknown): unknown } } {
  if (!test) return { check: Check.Run };
  if (!node.pipe && node.type === 'string') return { check: Check.String };
  if (!node.pipe && node.type === 'boolean') return { check: Check.Boolean };
  const items = node.pipe?.filter((item) => item.kind !== 'metadata');
  if (items?.length === 2 && items[0]!.type === 'number' && !items[0]!.pipe && items[1]!.kind === 'validation' && isCallValidation(items[1]!)) {
    return { check: Check.NumberCall, owner: items[1] as Node & { requirement(x: unknown): unknown } };
  }
  return { check: Check.Test };
}

function compileObject(node: Node, where: string, inPlace: boolean): Run {
  const entries = node.entries;
  if (!entries || typeof entries !== 'object') throw new UnsupportedSchemaError(where, 'an object without entries');
  const keys: string[] = [];
  const tests: (Test | undefined)[] = [];
  const runs: Run[] = [];
  /** 0: required; 1: optional, absent means absent; 2: optional with a default when absent. */
  const absent: (0 | 1 | 2)[] = [];
  const defaults: unknown[] = [];
  /** For the loop: how each member is checked, and whether it is a plain optional (undefined passes as is). */
  const checks: Check[] = [];
  const owners: ((Node & { requirement(x: unknown): unknown }) | undefined)[] = [];
  const passUndefined: boolean[] = [];
  const loopTests: (Test | undefined)[] = [];
  // valibot walks the entries with for…in; so does this (the same key order)
  for (const key in entries) {
    const entry = entries[key]!;
    const here = at(where, key);
    // valibot's object treats these apart (absent keys, fallbacks); none is translated
    if (entry.type === 'exact_optional' || entry.type === 'nullish') throw new UnsupportedSchemaError(here, `the schema '${entry.type}'`);
    if ((entry as { fallback?: unknown }).fallback !== undefined) throw new UnsupportedSchemaError(here, 'a fallback');
    keys.push(key);
    const test = testOf(entry, here);
    tests.push(test);
    const run = test ? fromTest(test) : compileNode(entry, here, inPlace);
    runs.push(run);
    const dflt = entry.type === 'optional' ? defaultOf(entry, here) : undefined;
    absent.push(entry.type !== 'optional' ? 0 : dflt === undefined ? 1 : 2);
    defaults.push(dflt);
    // A plain optional without a default: undefined passes as is, anything else is its wrapped schema's.
    const plain = entry.type === 'optional' && !entry.pipe && dflt === undefined;
    passUndefined.push(plain);
    const inner = plain ? wrappedOf(entry, here) : entry;
    const innerTest = plain ? testOf(inner, here) : test;
    // (an optional with a default, or one whose schema builds its output, runs its own node)
    const { check, owner } = dflt === undefined ? checkOf(inner, innerTest) : { check: Check.Run };
    checks.push(check);
    owners.push(owner);
    loopTests.push(innerTest);
  }
  const n = keys.length;
  if (absent.every((when) => when === 0) && tests.every((test) => test !== undefined)) {
    const small = smallRecord(keys, tests, inPlace);
    if (small) return small;
  }
  /** In place: the output of an input whose members are its first `i` entries' (schema order), from `i` on. */
  const copyUpTo = (source: Record<string, unknown>, i: number): Record<string, unknown> => {
    const output: Record<string, unknown> = {};
    for (let j = 0; j < i; j += 1) if (keys[j]! in source) output[keys[j]!] = source[keys[j]!];
    return output;
  };
  return (input) => {
    if (!input || typeof input !== 'object') return INVALID;
    const source = input as Record<string, unknown>;
    // in place: the output object is made only once a member's output is not the member itself
    let output: Record<string, unknown> | undefined = inPlace ? undefined : {};
    let present = 0;
    for (let i = 0; i < n; i += 1) {
      const key = keys[i]!;
      let value = source[key];
      if (value === undefined) {
        if (key in source) {
          if (passUndefined[i]) {
            present += 1;
            if (output) output[key] = undefined;
            continue;
          }
        } else {
          const when = absent[i];
          if (when === 0) return INVALID;
          if (when === 1) continue;
          value = defaults[i];
        }
      }
      switch (checks[i]) {
        case Check.String:
          if (typeof value !== 'string') return INVALID;
          break;
        case Check.Boolean:
          if (typeof value !== 'boolean') return INVALID;
          break;
        case Check.NumberCall:
          // value === value: not NaN (valibot's number refuses NaN)
          if (typeof value !== 'number' || value !== value || !owners[i]!.requirement(value)) return INVALID;
          break;
        case Check.Test:
          if (!loopTests[i]!(value)) return INVALID;
          break;
        default:
          value = runs[i]!(value);
          if (value === INVALID) return INVALID;
      }
      present += 1;
      if (output === undefined && value !== source[key]) output = copyUpTo(source, i);
      if (output) output[key] = value;
    }
    if (output) return output;
    // every member is its own output: the input itself, unless it has members to drop
    return isPlainWith(source, present) ? source : copyUpTo(source, n);
  };
}

/**
 * Whether an object is a plain one (JSON.parse's kind: not an array, a Date or anything with a
 * prototype of its own, whose inherited members valibot would copy) with exactly `count` keys.
 */
function isPlainWith(value: object, count: number): boolean {
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  let keys = 0;
  for (const key in value) if (Object.hasOwn(value, key)) keys += 1;
  return keys === count;
}

/**
 * A record of two to four required members, each a test (a timeline entry, a container): unrolled,
 * so each member's reads and writes have a site of their own instead of the loop's one site that
 * every record shape goes through (V8 then keeps them monomorphic). The same steps as the loop.
 */
function smallRecord(keys: string[], tests: Test[], inPlace: boolean): Run | undefined {
  const [k0, k1, k2, k3] = keys as [string, string, string, string];
  const [t0, t1, t2, t3] = tests as [Test, Test, Test, Test];
  type Source = Record<string, unknown>;
  // Each member, written out: present (valibot asks `key in input`) and valid, or the record is not.
  switch (keys.length) {
    case 2:
      return (input) => {
        if (!input || typeof input !== 'object') return INVALID;
        const a = (input as Source)[k0];
        if ((a === undefined && !(k0 in (input as Source))) || !t0(a)) return INVALID;
        const b = (input as Source)[k1];
        if ((b === undefined && !(k1 in (input as Source))) || !t1(b)) return INVALID;
        if (inPlace && isPlainWith(input, keys.length)) return input;
        const output: Source = {};
        output[k0] = a;
        output[k1] = b;
        return output;
      };
    case 3:
      return (input) => {
        if (!input || typeof input !== 'object') return INVALID;
        const a = (input as Source)[k0];
        if ((a === undefined && !(k0 in (input as Source))) || !t0(a)) return INVALID;
        const b = (input as Source)[k1];
        if ((b === undefined && !(k1 in (input as Source))) || !t1(b)) return INVALID;
        const c = (input as Source)[k2];
        if ((c === undefined && !(k2 in (input as Source))) || !t2(c)) return INVALID;
        if (inPlace && isPlainWith(input, keys.length)) return input;
        const output: Source = {};
        output[k0] = a;
        output[k1] = b;
        output[k2] = c;
        return output;
      };
    case 4:
      return (input) => {
        if (!input || typeof input !== 'object') return INVALID;
        const a = (input as Source)[k0];
        if ((a === undefined && !(k0 in (input as Source))) || !t0(a)) return INVALID;
        const b = (input as Source)[k1];
        if ((b === undefined && !(k1 in (input as Source))) || !t1(b)) return INVALID;
        const c = (input as Source)[k2];
        if ((c === undefined && !(k2 in (input as Source))) || !t2(c)) return INVALID;
        const d = (input as Source)[k3];
        if ((d === undefined && !(k3 in (input as Source))) || !t3(d)) return INVALID;
        if (inPlace && isPlainWith(input, keys.length)) return input;
        const output: Source = {};
        output[k0] = a;
        output[k1] = b;
        output[k2] = c;
        output[k3] = d;
        return output;
      };
    default:
      return undefined;
  }
}

/** Compiles `schema` afresh; throws `UnsupportedSchemaError` for anything it cannot translate. */
export function compileSchema<S extends v.GenericSchema>(schema: S): Checker<v.InferOutput<S>> {
  return compileNode(schema, '', false);
}

/**
 * Compiles `schema` into a checker for a value the caller owns outright and will not use apart from
 * the result (JSON.parse's output): the same verdict, and an output equal to valibot's, but any
 * object or array whose output would hold exactly its own members is returned itself (members in
 * its own order), so an accepted record is not copied; a copy is made only where a member is
 * dropped or defaulted, from that object up.
 */
export function compileSchemaInPlace<S extends v.GenericSchema>(schema: S): Checker<v.InferOutput<S>> {
  return compileNode(schema, '', true);
}

const compiled = new WeakMap<object, Checker<unknown>>();
const compiledInPlace = new WeakMap<object, Checker<unknown>>();

/**
 * The checker of `schema` (`inPlace`: compileSchemaInPlace's), compiled at its first use and kept as
 * long as the schema lives.
 */
export function checkerOf<S extends v.GenericSchema>(schema: S, inPlace = false): Checker<v.InferOutput<S>> {
  const cache = inPlace ? compiledInPlace : compiled;
  let checker = cache.get(schema);
  if (checker === undefined) {
    checker = inPlace ? compileSchemaInPlace(schema) : compileSchema(schema);
    cache.set(schema, checker);
  }
  return checker;
}
