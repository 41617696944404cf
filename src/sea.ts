/**
 * The single executable's podctl (`npm run sea` → dist/podctl-linux-x64): this module, bundled by
 * scripts/sea.mjs with what podctl loads at run time (oclif and every command, the CRI messages,
 * the watch screen's components), is one CommonJS script carried as an asset of the executable; its
 * tiny main (src/sea-main.ts) compiles it with a V8 code cache trained on the command that runs and
 * calls `start`. client-node, yaml, grpc-js (the simulator's server), plugin-not-found and the watch
 * screen's React, Ink and yoga (one asset) are assets too, compiled on first use (src/sea-assets.ts).
 *
 * Invariants:
 * - Nothing is read from beside the executable: package.json and oclif.manifest.json are carried
 *   in the script (scripts/sea.mjs defines them) and served to oclif from memory, under the
 *   directory of the executable, which stands as the package root.
 * - Nothing is written beside it either: the only files podctl writes are its own state
 *   (--state-dir) and, for oclif, nothing (it has no plugins, no update checks).
 */
import path from 'node:path';
import { main } from './launch.js';
import { exitWhenIdle } from './lib/exit-when-idle.js';

/** package.json's fields podctl and oclif read (scripts/sea.mjs). */
declare const __PODCTL_SEA_PACKAGE_JSON__: string;
/** oclif.manifest.json as built (scripts/sea.mjs). */
declare const __PODCTL_SEA_MANIFEST__: string;

/** Where the bundled @oclif/core looks up a JSON file before reading it (see scripts/sea.mjs). */
const EMBEDDED_JSON = Symbol.for('podctl.embedded-json');

/** Runs the CLI for `argv` (the executable's arguments), the executable's directory standing as the package root. */
export function start(argv: string[]): Promise<void> {
  const root = path.dirname(process.execPath);
  exitWhenIdle();
  (globalThis as Record<symbol, unknown>)[EMBEDDED_JSON] = new Map([[path.join(root, 'oclif.manifest.json'), __PODCTL_SEA_MANIFEST__]]);
  return main(root, argv, JSON.parse(__PODCTL_SEA_PACKAGE_JSON__) as Parameters<typeof main>[2]);
}
