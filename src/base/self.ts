/**
 * How podctl runs: as the single executable (`npm run sea`: process.execPath is podctl itself, with
 * Node.js inside) or as `node bin/run.js` (an npm install or a checkout). What starts another podctl
 * process (the background driver of `--no-wait`) depends on it.
 */
import { isSea } from 'node:sea';

/** True inside the single executable. */
export function isSingleExecutable(): boolean {
  return isSea();
}
