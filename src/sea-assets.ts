/**
 * The single executable's packages kept out of its main script (scripts/sea.mjs, `SEA_ASSET_PACKAGES`):
 * each is a CommonJS script carried as an asset of the executable with V8's code cache of it, compiled
 * and run on its first import only. The main script, which Node.js compiles at every start, is then
 * the code of the commands' common paths alone (@kubernetes/client-node is half of podctl's
 * JavaScript, and `status` or `kill` without an API server never run it).
 *
 * Invariants:
 * - Each package is evaluated at most once per process (the first import's exports are kept).
 * - The code cache is an optimisation only: one V8 rejects (another Node.js, other flags) means
 *   compiling from source, never a failure.
 * - Used only inside the executable (node:sea); an asset that is missing is a build error, reported
 *   as such.
 */
import { createRequire } from 'node:module';
import { getRawAsset } from 'node:sea';
import vm from 'node:vm';

const loaded = new Map<string, unknown>();

/** The asset's bytes, or undefined when the executable does not carry it. */
function assetBytes(key: string): Buffer | undefined {
  try {
    const raw = getRawAsset(key);
    return typeof raw === 'string' ? Buffer.from(raw, 'latin1') : Buffer.from(raw);
  } catch {
    return undefined;
  }
}

/** The exports of the package carried as `<name>.cjs` (with `<name>.v8`, its code cache). */
export function loadAsset(name: string): unknown {
  if (loaded.has(name)) return loaded.get(name);
  const source = assetBytes(`${name}.cjs`);
  if (source === undefined) throw new Error(`this podctl executable carries no ${name} (a build error: rebuild it with \`npm run sea\`)`);
  const cachedData = assetBytes(`${name}.v8`);
  // The script is a function expression (scripts/sea.mjs wraps it) whose source is ASCII: one byte a character.
  const script = new vm.Script(source.toString('latin1'), { filename: `podctl:${name}.cjs`, ...(cachedData ? { cachedData } : {}) });
  const module = { exports: {} as unknown };
  const factory = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: { exports: unknown }) => void;
  factory(module.exports, createRequire(process.execPath), module);
  loaded.set(name, module.exports);
  return module.exports;
}
