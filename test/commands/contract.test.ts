/**
 * The frozen CLI contract: every command, argument and flag (names, aliases, short characters, types,
 * options, defaults, env vars), and the shape of every command's JSON result. Scripts depend on
 * these; a change must be deliberate: regenerate with `UPDATE_CONTRACT=1 npx vitest run
 * test/commands/contract.test.ts` and commit docs/cli-contract.json with the change.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PodctlCommand } from '../../src/base/command.js';
import { ExitCode } from '../../src/lib/exit-codes.js';
import { FakeSession } from '../services/fake-session.js';
import { runCommand } from './harness.js';

const CONTRACT = path.join(process.cwd(), 'docs', 'cli-contract.json');

type Shape = string | { [key: string]: Shape } | Shape[];

/** The type skeleton of a JSON value: keys and primitive types, arrays by their element shape. */
function shapeOf(value: unknown): Shape {
  if (value === null) return 'null';
  if (Array.isArray(value)) return value.length === 0 ? [] : [value.map(shapeOf).reduce(mergeShapes)];
  if (typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, shapeOf(v)]),
    );
  return typeof value;
}

/** A field that is an object (or array) in one sample and null in another: `{ "null|": shape }`. */
const NULL_OR = 'null|';

function isNullOr(shape: Shape): shape is { [NULL_OR]: Shape } {
  return typeof shape === 'object' && !Array.isArray(shape) && Object.keys(shape).length === 1 && shape[NULL_OR] !== undefined;
}

function mergeShapes(a: Shape, b: Shape): Shape {
  if (a === 'null' && typeof b === 'object') return isNullOr(b) ? b : { [NULL_OR]: b };
  if (b === 'null' && typeof a === 'object') return isNullOr(a) ? a : { [NULL_OR]: a };
  if (isNullOr(a) || isNullOr(b)) {
    const inner = (s: Shape): Shape => (isNullOr(s) ? s[NULL_OR] : s);
    return { [NULL_OR]: mergeShapes(inner(a), inner(b)) };
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    const items = [...a, ...b];
    return items.length === 0 ? [] : [items.reduce(mergeShapes)];
  }
  if (typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return Object.fromEntries(keys.map((k) => [k, a[k] === undefined ? (b[k] as Shape) : b[k] === undefined ? a[k] : mergeShapes(a[k], b[k])]));
  }
  if (typeof a === 'string' && typeof b === 'string') return [...new Set([...a.split('|'), ...b.split('|')])].sort().join('|');
  return `${JSON.stringify(a)}|${JSON.stringify(b)}`;
}

interface FlagLike {
  type: string;
  char?: string;
  aliases?: readonly string[];
  multiple?: boolean;
  options?: readonly string[];
  default?: unknown;
  env?: string;
  required?: boolean;
  summary?: string;
  helpGroup?: string;
}

async function commandClasses(): Promise<Map<string, typeof PodctlCommand>> {
  const dir = path.join(process.cwd(), 'src', 'commands');
  const classes = new Map<string, typeof PodctlCommand>();
  // src/commands/<id>.ts and src/commands/<topic>/<sub>.ts (<topic>/index.ts is the topic's own command)
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .sort();
  for (const file of files) {
    const mod = (await import(path.join(dir, file))) as { default: typeof PodctlCommand };
    classes.set(
      file
        .replace(/\.ts$/, '')
        .replace(/\/index$/, '')
        .split(path.sep)
        .join(':'),
      mod.default,
    );
  }
  return classes;
}

function flagsOf(command: typeof PodctlCommand): Record<string, unknown> {
  const all = { ...(command.baseFlags ?? {}), ...(command.flags ?? {}) } as Record<string, FlagLike>;
  if (command.enableJsonFlag) all.json = { type: 'boolean' };
  return Object.fromEntries(
    Object.keys(all)
      .sort()
      .map((name) => {
        const f = all[name] as FlagLike;
        return [
          name,
          {
            type: f.type,
            ...(f.char ? { char: f.char } : {}),
            ...(f.aliases && f.aliases.length > 0 ? { aliases: [...f.aliases] } : {}),
            ...(f.multiple ? { multiple: true } : {}),
            ...(f.options ? { options: [...f.options] } : {}),
            ...(f.default !== undefined && typeof f.default !== 'function' ? { default: f.default } : {}),
            ...(f.env ? { env: f.env } : {}),
            ...(f.required ? { required: true } : {}),
          },
        ];
      }),
  );
}

async function resultShapes(): Promise<Record<string, Shape>> {
  const pods = () =>
    new FakeSession([
      { namespace: 'web', name: 'frontend', grace: 30, labels: { app: 'frontend' } },
      { namespace: 'web', name: 'api', grace: 5, behaviour: 'stuck' },
      { namespace: 'kube-system', name: 'etcd', static: true, grace: 30 },
      { namespace: 'default', name: 'broken', behaviour: 'fails' },
    ]);
  const classes = await commandClasses();
  const shapes: Record<string, Shape> = {};
  const sample = async (id: string, argvs: string[][]): Promise<void> => {
    const command = classes.get(id);
    if (!command) throw new Error(`no command ${id}`);
    let merged: Shape | undefined;
    for (const argv of argvs) {
      const run = await runCommand(command as never, [...argv, '--json'], pods(), { KUBECONFIG: '' });
      const shape = shapeOf(JSON.parse(run.stdout));
      merged = merged === undefined ? shape : mergeShapes(merged, shape);
    }
    shapes[id] = merged ?? 'none';
  };
  await sample('kill', [
    ['web/frontend', 'web/nope'],
    ['web/api', '--timeout', '1s'],
    ['web/api', '--no-wait'],
    ['-A', '--all'],
  ]);
  await sample('evict', [['web/frontend'], ['web/api', '--no-wait']]);
  await sample('drain', [['--yes'], ['--dry-run']]);
  await sample('sync-known', [['--desired-from', 'runtime', '--yes']]);
  await sample('status', [[], ['web/api', '--explain']]);
  const error = await runCommand(classes.get('kill') as never, ['--json'], pods());
  shapes.error = shapeOf(JSON.parse(error.stdout));
  return shapes;
}

async function contract(): Promise<unknown> {
  const commands: Record<string, unknown> = {};
  for (const [id, command] of await commandClasses()) {
    commands[id] = {
      args: Object.keys(command.args ?? {}),
      variadic: command.strict === false,
      flags: flagsOf(command),
    };
  }
  return { exitCodes: ExitCode, commands, results: await resultShapes() };
}

describe('CLI contract (docs/cli-contract.json)', () => {
  it('commands, flags and JSON result shapes match the committed contract', async () => {
    const current = JSON.parse(JSON.stringify(await contract()));
    if (process.env.UPDATE_CONTRACT === '1') writeFileSync(CONTRACT, `${JSON.stringify(current, null, 2)}\n`);
    const committed = JSON.parse(readFileSync(CONTRACT, 'utf8'));
    expect(current, 'the CLI contract changed: if deliberate, rerun with UPDATE_CONTRACT=1 and commit docs/cli-contract.json').toEqual(committed);
  });

  it('every flag of every command has a summary, and every command has a summary and examples', async () => {
    for (const [id, command] of await commandClasses()) {
      expect(command.summary, id).toBeTruthy();
      expect((command.examples ?? []).length, id).toBeGreaterThan(0);
      const all = { ...(command.baseFlags ?? {}), ...(command.flags ?? {}) } as Record<string, FlagLike>;
      for (const [name, flag] of Object.entries(all)) expect(flag.summary, `${id} --${name}`).toBeTruthy();
    }
  });

  it('the shape function notices a renamed or retyped field', () => {
    const a = shapeOf({ pods: [{ uid: 'x', grace: 1 }] });
    expect(shapeOf({ pods: [{ uid: 'x', graceSeconds: 1 }] })).not.toEqual(a);
    expect(shapeOf({ pods: [{ uid: 'x', grace: '1' }] })).not.toEqual(a);
    expect(mergeShapes(shapeOf({ a: null }), shapeOf({ a: 1 }))).toEqual({ a: 'null|number' });
    expect(mergeShapes(shapeOf({ a: null }), shapeOf({ a: { b: 1 } }))).toEqual({ a: { 'null|': { b: 'number' } } });
    expect(mergeShapes(shapeOf({ a: { b: 1 } }), mergeShapes(shapeOf({ a: null }), shapeOf({ a: { c: 's' } })))).toEqual({ a: { 'null|': { b: 'number', c: 'string' } } });
  });
});
