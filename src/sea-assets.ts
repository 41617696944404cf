/**
 * The single executable's scripts, each a CommonJS script carried as an asset of the executable with
 * V8's code cache of it (scripts/sea.mjs): podctl itself (`podctl.cjs`, compiled at every start by
 * src/sea-main.ts with the cache trained on the command that runs), and the packages kept out of it
 * (`SEA_ASSET_PACKAGES`: @kubernetes/client-node, yaml, grpc-js, plugin-not-found, and `tui`: React,
 * Ink and yoga, one copy for the watch screen), compiled and run on their first import only
 * (`status` or `kill` without an API server never run client-node, half of podctl's JavaScript).
 *
 * Invariants:
 * - Each package is evaluated at most once per process (the first import's exports are kept).
 * - A code cache is an optimisation only: a missing one, or one V8 rejects (another Node.js, other
 *   flags, damaged bytes), means compiling from source, never a failure. NODE_DEBUG=podctl-sea says
 *   which cache each script was compiled with and whether V8 accepted it.
 * - Used only inside the executable (node:sea); a script that is missing is a build error, reported
 *   as such.
 */
import { createRequire } from 'node:module';
import { getRawAsset } from 'node:sea';
import { debuglog } from 'node:util';
import vm from 'node:vm';

const loaded = new Map<string, unknown>();
const debug = debuglog('podctl-sea');

/** The asset's bytes, or undefined when the executable does not carry it. */
function assetBytes(key: string): Buffer | undefined {
  try {
    const raw = getRawAsset(key);
    return typeof raw === 'string' ? Buffer.from(raw, 'latin1') : Buffer.from(raw);
  } catch {
    return undefined;
  }
}

/**
 * Compiles and runs the script carried as `<name>.cjs` with the first code cache of `caches` the
 * executable carries (none: from source); returns what it exports.
 */
export function runAsset(name: string, caches: readonly string[]): unknown {
  const source = assetBytes(`${name}.cjs`);
  if (source === undefined) throw new Error(`this podctl executable carries no ${name} (a build error: rebuild it with \`npm run sea\`)`);
  let cache: string | undefined;
  let cachedData: Buffer | undefined;
  for (const key of caches) {
    cachedData = assetBytes(key);
    if (cachedData !== undefined) {
      cache = key;
      break;
    }
  }
  // The script is a function expression (scripts/sea.mjs wraps it) whose source is ASCII: one byte a character.
  const script = new vm.Script(source.toString('latin1'), { filename: `podctl:${name}.cjs`, ...(cachedData ? { cachedData } : {}) });
  debug('%s.cjs: code cache %s %s', name, cache ?? '(none)', cache === undefined ? 'carried' : script.cachedDataRejected === true ? 'rejected' : 'accepted');
  const module = { exports: {} as unknown };
  const factory = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: { exports: unknown }) => void;
  factory(module.exports, createRequire(process.execPath), module);
  return module.exports;
}

/** The exports of the package carried as `<name>.cjs` (with `<name>.v8`, its code cache). */
export function loadAsset(name: string): unknown {
  if (!loaded.has(name)) loaded.set(name, runAsset(name, [`${name}.v8`]));
  return loaded.get(name);
}
