/**
 * podctl's entry: runs oclif. Bundled together with the commands (scripts/build.mjs), so bin/run.js
 * and every command share one copy of @oclif/core; oclif reads the generated oclif.manifest.json,
 * so only the invoked command is loaded.
 */
import { execute } from '@oclif/core';
import { handleCommandNotFound } from './base/not-found.js';

/** Runs the CLI for `process.argv`; `dir` is the package root (oclif reads package.json there). */
export async function run(dir: string): Promise<void> {
  // "did you mean": @oclif/plugin-not-found's hook (base/not-found.ts)
  handleCommandNotFound();
  await execute({ dir });
}
