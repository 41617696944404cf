/**
 * Pod names are taken from arguments only, never from stdin: `podctl kill -` with a name piped in
 * (or nothing) is refused before anything happens — exit 2, one line naming the REF — and the pod
 * keeps running (the built CLI in a child process, on the simulator). `xargs podctl kill` is the way
 * to feed names from a pipe.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContainerStateCode } from '../../src/cri/client/codes.js';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { BIN, ROOT, cliEnv, requireBuilt, type CliRun } from '../support/cli.js';

let sim: RunningSimulator;
let common: string[];

beforeAll(async () => {
  requireBuilt('kill');
  const dir = mkdtempSync(path.join(tmpdir(), 'podctl-stdin-'));
  sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), timeScale: 0.05, pods: [{ name: 'web', namespace: 'default', containers: [{ name: 'c' }] }] });
  common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
});
afterAll(async () => {
  await sim.close();
});

/** `podctl ...args` with `input` on its stdin, to its end (bounded). */
function podctlWithInput(args: string[], input: string): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: cliEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

function webRunning(): boolean {
  const sandboxes = sim.state.listPodSandbox(undefined).filter((s) => s.metadata?.name === 'web');
  return sandboxes.some((s) => sim.state.listContainers({ podSandboxId: s.id } as never).some((c) => c.state === ContainerStateCode.RUNNING));
}

describe('podctl kill -: names are not read from stdin', { timeout: 90_000 }, () => {
  it.each([
    ['a name piped in', 'default/web\n'],
    ['an empty stdin', ''],
    ['a malformed line', 'Not A Pod!\n'],
  ])('%s: exit 2, one line, nothing killed', async (_what, input) => {
    const run = await podctlWithInput(['kill', '-', '--grace', '0', ...common], input);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('error: REF "-": "-" is not a valid Kubernetes name');
    expect(webRunning()).toBe(true);
  });
});
