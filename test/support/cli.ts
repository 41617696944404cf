/**
 * The built CLI (`node bin/run.js`) in a child process, as the command tests run it. Needs `npm run
 * build` first (the test script does it).
 *
 * Contract: podctl runs from the repository's root with this process's environment, except no
 * colour and no kubeconfig or runtime endpoint of the machine's (a test names its own), then the
 * test's `env` (a key set to undefined is removed); a run ends within `timeoutMs` (a bound for a
 * loaded machine, not a speed goal) and resolves with its exit code (1 when it had none) and output.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

export const ROOT = process.cwd();
export const BIN = path.join(ROOT, 'bin', 'run.js');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment podctl runs in (see the contract above). */
export function cliEnv(env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const merged: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '', ...env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete merged[key];
  return merged;
}

/** Runs `podctl ...args` to its end. */
export function runPodctl(args: string[], env: Record<string, string | undefined> = {}, timeoutMs = 60_000): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: cliEnv(env), timeout: timeoutMs }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** Fails at once, saying what to do, when dist/ lacks the built `command`. */
export function requireBuilt(command: string): void {
  if (!existsSync(path.join(ROOT, 'dist', 'commands', `${command}.js`))) throw new Error('dist/ is missing: run `npm run build` first');
}
