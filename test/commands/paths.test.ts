/**
 * Paths and the last resort, as an operator meets them (the built CLI in child processes, the
 * embedded simulator): `--state-dir ''` is refused and a relative one resolved and said;
 * `simulator --socket` never deletes a file that is not a socket, refuses paths too long for a unix
 * socket, and replaces only a stale socket; output to a full device (/dev/full) is one line and
 * exit 1, with the stack only under `--log-level debug`.
 */
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { BIN, ROOT, cliEnv, type CliRun as Run } from '../support/cli.js';

function podctl(args: string[], options: { cwd?: string; stdoutFd?: number } = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? ROOT,
      env: cliEnv({ PODCTL_STATE_DIR: '' }),
      stdio: ['ignore', options.stdoutFd ?? 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}

let sim: RunningSimulator;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-paths-'));
  sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), pods: [{ name: 'web' }], timeScale: 1 });
});
afterAll(async () => {
  await sim.close();
});

describe('paths', { timeout: 60_000 }, () => {
  it("--state-dir '' is exit 2 with one line; a relative --state-dir is resolved against the current directory and said", async () => {
    const empty = await podctl(['status', '--runtime-endpoint', sim.endpoint, '--state-dir', '']);
    expect(empty.code).toBe(2);
    expect(empty.stderr.trim().split('\n')).toHaveLength(1);
    expect(empty.stderr).toMatch(/--state-dir is empty/);

    const relative = await podctl(['status', '--runtime-endpoint', sim.endpoint, '--state-dir', 'rel/state', '-o', 'json'], { cwd: dir });
    expect(relative.code, relative.stderr).toBe(0);
    const absolute = path.join(dir, 'rel', 'state');
    expect(relative.stderr).toContain(`--state-dir rel/state is ${absolute}`);
    expect((JSON.parse(relative.stdout) as { stateDir: string }).stateDir).toBe(absolute);
  });

  it('simulator --socket never deletes a file that is not a socket, and refuses a path too long for a unix socket', async () => {
    const file = path.join(dir, 'precious.txt');
    writeFileSync(file, 'keep me');
    const refused = await podctl(['simulator', '--socket', file]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/exists and is not a socket/);
    expect(readFileSync(file, 'utf8')).toBe('keep me');

    const long = path.join(dir, 'x'.repeat(120), 'sim.sock');
    const tooLong = await podctl(['simulator', '--socket', long]);
    expect(tooLong.code).toBe(2);
    expect(tooLong.stderr).toMatch(/longer than a unix socket path can be \(107\)/);
    expect(existsSync(path.dirname(long))).toBe(false);
  });

  it('simulator --socket replaces a stale socket (nobody listening) and serves on it', async () => {
    const stale = path.join(dir, 'stale.sock');
    // a process that listened there and was SIGKILLed leaves the socket file behind
    const holder = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(stale)}, () => process.stdout.write('up'))`]);
    await new Promise((resolve) => holder.stdout.once('data', resolve));
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    expect(lstatSync(stale).isSocket()).toBe(true);

    const served = spawn(process.execPath, [BIN, 'simulator', '--socket', stale, '--pods', '2'], { env: { ...process.env, NO_COLOR: '1' } });
    let stderr = '';
    served.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const deadline = Date.now() + 20_000;
    let status: Run | undefined;
    while (Date.now() < deadline) {
      status = await podctl(['status', '--runtime-endpoint', `unix://${stale}`, '--state-dir', path.join(dir, 'stale-state'), '-o', 'json']);
      if (status.code === 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    served.kill('SIGTERM');
    await new Promise((resolve) => served.once('exit', resolve));
    expect(status?.code, `${status?.stderr}\n${stderr}`).toBe(0);
    expect((JSON.parse(status!.stdout) as { simulated: boolean; pods: unknown[] }).pods).toHaveLength(2);
  });
});

describe('the last resort', { timeout: 60_000 }, () => {
  it('kill whose reader goes away after its first line (`2>&1 | head -1`) still finishes the pod it drives, and exits with its own code', async () => {
    const stateDir = path.join(dir, 'reader-gone-state');
    const child = spawn(process.execPath, [BIN, 'kill', 'default/web', '--grace', '2', '--runtime-endpoint', sim.endpoint, '--state-dir', stateDir], {
      env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', PODCTL_STATE_DIR: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    // the first line read, the reader goes: every later write of the kill meets a closed pipe (EPIPE)
    await new Promise((resolve) => child.stderr.once('data', resolve));
    child.stderr.destroy();
    child.stdout.destroy();
    const code = await exited;
    const after = await podctl(['status', 'default/web', '--runtime-endpoint', sim.endpoint, '--state-dir', stateDir, '-o', 'json']);
    const pod = (JSON.parse(after.stdout) as { pods: { name: string; state: string; owner?: unknown }[] }).pods[0];
    expect(pod?.state).toBe('finished');
    expect(pod?.owner).toBeUndefined();
    expect(code).toBe(0);
  });

  it.skipIf(!existsSync('/dev/full'))('status > /dev/full: one line naming the cause, exit 1, no stack unless --log-level debug', async () => {
    const full = openSync('/dev/full', 'w');
    const run = await podctl(['status', '--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'full-state')], { stdoutFd: full });
    expect(run.code).toBe(1);
    const errors = run.stderr.split('\n').filter((l) => l.startsWith('error:'));
    expect(errors).toEqual(['error: cannot write the output: ENOSPC (no space left on the device)']);
    expect(run.stderr).not.toMatch(/\n\s+at |podctl\.cjs|Node\.js v/);

    const debug = await podctl(['status', '--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'full-state'), '--log-level', 'debug'], { stdoutFd: full });
    expect(debug.code).toBe(1);
    expect(debug.stderr).toMatch(/\n\s+at /);
  });
});
