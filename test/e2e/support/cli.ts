/**
 * Running the built podctl CLI (`node bin/run.js`) as an operator would, for end-to-end tests and
 * the CRI benchmark. `npm test` builds before it runs the suites; running these directly needs a
 * prior `npm run build`, and says so.
 *
 * Invariants: every run has a bound (it is killed after `timeoutMs`); the child's environment never
 * inherits a runtime endpoint or state dir from the caller (each call passes its own).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/**
 * Where the built CLI is run from: the repository, or PODCTL_E2E_CLI_ROOT (a copy of bin/, dist/,
 * package.json and oclif.manifest.json), so that a rebuild of the tree cannot pull dist/ away from
 * under a long benchmark.
 */
const CLI_ROOT = process.env.PODCTL_E2E_CLI_ROOT || REPO_ROOT;
export const PODCTL_BIN = join(CLI_ROOT, 'bin', 'run.js');

/** Throws one clear line unless the built CLI starts (`podctl --version` exits 0). */
export function requireBuild(): void {
  if (!existsSync(join(CLI_ROOT, 'dist')) || !existsSync(join(CLI_ROOT, 'oclif.manifest.json'))) {
    throw new Error('e2e: podctl is not built (dist/ missing): run `npm run build` first (`npm test` does)');
  }
  const probe = spawnSync(process.execPath, [PODCTL_BIN, '--version'], { cwd: CLI_ROOT, encoding: 'utf8', timeout: 30_000 });
  if (probe.status !== 0) {
    const why = (probe.stderr || probe.error?.message || `exit ${probe.status}`).trim().split('\n')[0];
    throw new Error(`e2e: the built podctl does not start (${why}): run \`npm run build\``);
  }
}

export interface PodctlRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface PodctlOptions {
  endpoint: string;
  stateDir: string;
  timeoutMs?: number;
  env?: Record<string, string>;
}

function childEnv(options: PodctlOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', ...options.env };
  delete env.CONTAINER_RUNTIME_ENDPOINT;
  delete env.PODCTL_STATE_DIR;
  delete env.KUBECONFIG;
  return env;
}

/** Starts `podctl <args> --runtime-endpoint … --state-dir …` without waiting for it. */
export function spawnPodctl(args: string[], options: PodctlOptions): ChildProcess {
  return spawn(process.execPath, [PODCTL_BIN, ...args, '--runtime-endpoint', options.endpoint, '--state-dir', options.stateDir], {
    cwd: CLI_ROOT,
    env: childEnv(options),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs podctl to completion (or kills it after timeoutMs) and collects its output. */
export function runPodctl(args: string[], options: PodctlOptions): Promise<PodctlRun> {
  const started = performance.now();
  const child = spawnPodctl(args, options);
  return collect(child, options.timeoutMs ?? 60_000, started);
}

export function collect(child: ChildProcess, timeoutMs: number, started = performance.now()): Promise<PodctlRun> {
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: performance.now() - started });
    });
  });
}
