/**
 * The bundles' CommonJS interop as the build rewrites it (scripts/esbuild-plugins.mjs, applied to
 * dist/podctl.cjs and the executable's podctl.cjs): a CommonJS module imported by several ES modules
 * is copied once and its copy served to each (`interopCopiedOnce`), with the same values as before —
 * live ones, `default` the module itself, a module that gained exports since its first import
 * copied again; the enumerability of each export as the module has it (`interopWithoutDescriptorReads`).
 * Checked on esbuild bundles made here, minified as the executable's and as dist/podctl.cjs, run in a fresh Node.js.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error -- the build's plugins are plain JavaScript, without declarations
import { interopCopiedOnce, interopWithoutDescriptorReads } from '../../scripts/esbuild-plugins.mjs';

type Rewrite = (text: string, file: string) => string;
const copiedOnce = interopCopiedOnce as Rewrite;
const withoutDescriptorReads = interopWithoutDescriptorReads as Rewrite;

const FILES: Record<string, string> = {
  // a CommonJS module with a live export, a hidden one, and one added after the first import
  'counter.cjs': `let n = 0;
exports.bump = () => { n += 1; exports.count = n; };
exports.count = 0;
Object.defineProperty(exports, 'hidden', { value: 'h', enumerable: false });`,
  'first.mjs': `import counter, { bump } from './counter.cjs';
import * as all from './counter.cjs';
export const first = { counter, bump, all };`,
  'second.mjs': `import * as all from './counter.cjs';
export const second = { all };`,
  'late.mjs': `import * as all from './counter.cjs';
export const late = () => all;`,
  'entry.mjs': `import { first } from './first.mjs';
import { second } from './second.mjs';
import * as counter from './counter.cjs';
first.bump();
const keys = (o) => Object.keys(o).sort().join(',');
const before = { same: first.all === second.all, count: second.all.count, default: first.counter === second.all.default, keys: keys(second.all), hiddenEnumerable: Object.prototype.propertyIsEnumerable.call(second.all, 'hidden'), hidden: second.all.hidden };
counter.default.added = 'later';
const { late } = await import('./late.mjs');
const after = { sameAsFirst: late() === first.all, added: late().added, count: late().count };
console.log(JSON.stringify({ before, after }));`,
};

describe("the bundle's CommonJS interop, rewritten by the build", () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-interop-'));
    for (const [name, text] of Object.entries(FILES)) writeFileSync(path.join(dir, name), text);
  });

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Bundles entry.mjs as the builds do (identifiers minified: the executable's; not: dist/podctl.cjs), rewritten or not, and runs it. */
  async function run(minify: boolean, rewrite: boolean): Promise<unknown> {
    const out = path.join(dir, `out-${minify}-${rewrite}.cjs`);
    await build({
      entryPoints: [path.join(dir, 'entry.mjs')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      splitting: false,
      outfile: `${out}.mjs`,
      minifyWhitespace: true,
      minifySyntax: true,
      minifyIdentifiers: minify,
      keepNames: minify,
      logLevel: 'silent',
    });
    const text = readFileSync(`${out}.mjs`, 'utf8');
    writeFileSync(`${out}.mjs`, rewrite ? copiedOnce(withoutDescriptorReads(text, out), out) : text);
    return JSON.parse(execFileSync(process.execPath, [`${out}.mjs`], { encoding: 'utf8' })) as unknown;
  }

  it.each([true, false])('identifiers minified %s: one copy for every importer, the same values as before', async (minify) => {
    const before = (await run(minify, false)) as { before: Record<string, unknown>; after: Record<string, unknown> };
    const after = (await run(minify, true)) as typeof before;
    expect(before.before.same).toBe(false);
    expect(after.before.same).toBe(true);
    expect(after.after.sameAsFirst).toBe(false);
    // every value an importer sees is the same as without the rewrite
    expect({ ...after.before, same: undefined }).toEqual({ ...before.before, same: undefined });
    expect({ ...after.after, sameAsFirst: undefined }).toEqual({ ...before.after, sameAsFirst: undefined });
    expect(after).toMatchObject({ before: { count: 1, default: true, keys: 'bump,count,default', hiddenEnumerable: false, hidden: 'h' }, after: { added: 'later', count: 1 } });
  });

  it("a bundle without esbuild's helper fails the build", () => {
    expect(() => copiedOnce('console.log(1)', 'x.cjs')).toThrow(/__toESM not found/);
  });
});
