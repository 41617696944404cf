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
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startSimulator, type RunningSimulator, type SimPodSpec, type StartSimulatorOptions } from '../../src/cri/simulator/index.js';
import { writeKubeconfig } from '../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from './kube-api-server.js';

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

/** A node for the CLI beside the local API server: the server (token x), a fresh directory, the simulator, and the flags that point podctl at them as node-7. */
export interface CliApiNode {
  server: KubeApiServer;
  sim: RunningSimulator;
  dir: string;
  common: string[];
}

/** Starts a CliApiNode in `<tmp>/<prefix>…` with the simulator's `pods` (at 1/20 of their times). */
export async function startCliApiNode(prefix: string, pods: SimPodSpec[]): Promise<CliApiNode> {
  const server = await startKubeApiServer();
  server.token = 'x';
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  const kubeconfig = writeKubeconfig(dir, server.port, 't', 'x');
  const sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), timeScale: 0.05, pods });
  return { server, sim, dir, common: ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state'), '--kubeconfig', kubeconfig, '--node', 'node-7'] };
}

/** A simulator node for a describe block's CLI runs: the simulator, its directory, the state dir in it, and podctl's flags for them. */
export interface SimNode {
  readonly sim: RunningSimulator;
  readonly dir: string;
  readonly stateDir: string;
  readonly common: string[];
}

/**
 * Before the block's tests starts the simulator (`options`, on `cri.sock`) in a fresh
 * `<tmp>/<prefix>…` directory whose `state` is the state dir, with the flags that point podctl at
 * both (`--runtime-endpoint`, `--state-dir`, then `extraFlags`); closes it after them. The
 * handle's fields are valid inside tests.
 */
export function useSimNode(prefix: string, options: Omit<StartSimulatorOptions, 'socketPath'>, extraFlags: string[] = []): SimNode {
  let node: SimNode | undefined;
  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), prefix));
    const stateDir = path.join(dir, 'state');
    const sim = await startSimulator({ ...options, socketPath: path.join(dir, 'cri.sock') });
    node = { sim, dir, stateDir, common: ['--runtime-endpoint', sim.endpoint, '--state-dir', stateDir, ...extraFlags] };
  });
  afterAll(async () => {
    await node?.sim.close();
  });
  const ready = (): SimNode => {
    if (!node) throw new Error('the simulator is not started yet (use it inside a test)');
    return node;
  };
  return {
    get sim() {
      return ready().sim;
    },
    get dir() {
      return ready().dir;
    },
    get stateDir() {
      return ready().stateDir;
    },
    get common() {
      return ready().common;
    },
  };
}
