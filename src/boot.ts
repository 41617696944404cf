/**
 * Start-up of the `podctl` executable (bin/run.js, CommonJS): compiles dist/podctl.cjs — oclif and every
 * command in one script (src/launch.ts) — with a V8 code cache, and runs it.
 *
 * Why: Node 20 has no compile cache for modules, and compiling podctl's ~1 MB of JavaScript at
 * every start is ~35 ms of a command's ~100 ms start-up. A vm.Script accepts V8's cached data
 * instead: the first run of each command writes dist/cache/<command>-<bundle hash>.v8 (after the
 * command ran, so the functions it compiled are in it), later runs skip most compiling.
 *
 * Invariants:
 * - The cache is an optimisation only: a missing, unreadable, unwritable or rejected cache means
 *   compiling from source, never a failure. It lives inside dist/ (as trusted as the code) and its
 *   name carries the bundle's content hash (a rebuilt bundle never meets an older cache) and V8's
 *   version (each Node.js running the install keeps its own).
 * - A cache is written once per command and bundle (temporary file + rename: concurrent first runs
 *   cannot leave a torn file), at process exit, only for podctl's own commands.
 * - Without a command word first (`--version`, `--help`, nothing) or without dist/podctl.cjs (an
 *   older build), the ES-module CLI (dist/cli.js) runs instead.
 * - PODCTL_CODE_CACHE=0 turns the cache off (to measure it, or to rule it out).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import vm from 'node:vm';
import { exitWhenIdle } from './lib/exit-when-idle.js';

/** Set by scripts/build.mjs: the first hex digits of dist/podctl.cjs's sha256. */
declare const __PODCTL_BUNDLE_HASH__: string;

interface Launch {
  main(root: string, argv: string[]): Promise<void>;
  isCommand(id: string | undefined): boolean;
}

/** A command name usable in a file name (anything else runs without a cache). */
const CACHE_KEY = /^[a-z][a-z0-9-]{0,39}$/;

function cacheFileOf(root: string, argv: readonly string[]): string | undefined {
  if (process.env.PODCTL_CODE_CACHE === '0') return undefined;
  const id = argv[0];
  if (id === undefined || !CACHE_KEY.test(id)) return undefined;
  // V8's version too: one install run by two Node.js versions keeps a cache for each, instead of
  // each rejecting and rewriting the other's at every run
  const v8 = process.versions.v8.replace(/[^0-9A-Za-z.-]/g, '_');
  return path.join(root, 'dist', 'cache', `${id}-${__PODCTL_BUNDLE_HASH__}-${v8}.v8`);
}

function readCache(file: string | undefined): Buffer | undefined {
  if (!file) return undefined;
  try {
    return readFileSync(file);
  } catch {
    return undefined;
  }
}

function writeCache(file: string, data: Buffer): void {
  const temp = `${file}.tmp-${process.pid}`;
  try {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
    writeFileSync(temp, data, { mode: 0o644 });
    renameSync(temp, file);
  } catch {
    // A read-only install runs without a cache; a half-written temporary is removed.
    try {
      rmSync(temp, { force: true });
    } catch {
      // nothing more to do
    }
  }
}

/** Compiles and evaluates the bundle as CommonJS, with `cachedData` when there is one. */
function loadBundle(bundle: string, cachedData: Buffer | undefined): { launch: Launch; script: vm.Script } {
  const source = readFileSync(bundle, 'utf8');
  // `__podctlImport`: the packages kept out of the bundle (the watch screen, client-node, yaml) are
  // ES modules imported on first use, through this module's `import()` (resolved from dist/).
  const wrapped = `(function (exports, require, module, __filename, __dirname, __podctlImport) {${source}\n})`;
  const script = new vm.Script(wrapped, { filename: bundle, ...(cachedData ? { cachedData } : {}) });
  const module = { exports: {} as Launch };
  const run = script.runInThisContext() as (e: object, r: NodeJS.Require, m: object, f: string, d: string, i: (s: string) => Promise<unknown>) => void;
  run(module.exports, createRequire(bundle), module, bundle, path.dirname(bundle), (specifier) => import(specifier));
  return { launch: module.exports, script };
}

/** Runs podctl for process.argv; `bin` is bin/run.js's path (or file URL). */
export async function boot(bin: string): Promise<void> {
  exitWhenIdle();
  const binPath = bin.startsWith('file:') ? fileURLToPath(bin) : bin;
  const root = path.resolve(path.dirname(binPath), '..');
  const bundle = path.join(root, 'dist', 'podctl.cjs');
  const argv = process.argv.slice(2);
  // `--version`, `--help` and a bare `podctl` load less through the ES-module CLI than the whole
  // bundle without a cache; so does an older build without the bundle.
  if (argv[0] === undefined || !CACHE_KEY.test(argv[0]) || !existsSync(bundle)) {
    const { run } = (await import(pathToFileURL(path.join(root, 'dist', 'cli.js')).href)) as { run: (dir: string) => Promise<void> };
    // the package root, not bin/ (whose package.json only marks run.js as CommonJS)
    return run(root);
  }
  const cacheFile = cacheFileOf(root, argv);
  const cachedData = readCache(cacheFile);
  const { launch, script } = loadBundle(bundle, cachedData);
  if (cacheFile && (cachedData === undefined || script.cachedDataRejected) && launch.isCommand(argv[0])) {
    process.once('exit', () => writeCache(cacheFile, script.createCachedData()));
  }
  await launch.main(root, argv);
}
