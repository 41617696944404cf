/**
 * One training run of the single executable's podctl, for scripts/sea.mjs (run by the executable's
 * Node.js under its flags and --predictable):
 *
 *   node … scripts/sea-train.mjs ASSETS_DIR CACHE_FILE|- [podctl argument…]
 *
 * compiles ASSETS_DIR/podctl.cjs as src/sea-main.ts does inside the executable, runs podctl with
 * the arguments, and at exit writes V8's code cache of the script to CACHE_FILE (`-`: none): the
 * functions the command ran are in it, compiled. node:sea answers as inside the executable, its
 * assets being the files of ASSETS_DIR. The process's exit code is the command's.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';

const [assetsDir, cacheFile, ...argv] = process.argv.slice(2);
if (assetsDir === undefined || cacheFile === undefined) {
  console.error('usage: sea-train.mjs ASSETS_DIR CACHE_FILE|- [podctl argument…]');
  process.exit(2);
}
const nodeRequire = createRequire(import.meta.filename);
const sea = {
  isSea: () => true,
  getRawAsset: (key) => {
    const bytes = readFileSync(path.join(assetsDir, key));
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  },
};
const seaRequire = Object.assign((id) => (id === 'node:sea' ? sea : nodeRequire(id)), nodeRequire);
// inside the executable, argv[1] is the executable too
process.argv = [process.execPath, process.execPath, ...argv];
const script = new vm.Script(readFileSync(path.join(assetsDir, 'podctl.cjs'), 'latin1'), { filename: 'podctl:podctl.cjs' });
const module = { exports: {} };
script.runInThisContext()(module.exports, seaRequire, module);
if (cacheFile !== '-') process.once('exit', () => writeFileSync(cacheFile, script.createCachedData()));
await module.exports.start(argv);
