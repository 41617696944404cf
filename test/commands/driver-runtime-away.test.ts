/**
 * A background driver outlives a runtime that goes away: `podctl kill` times out while the runtime
 * is gone and hands the pod to `kill --drive`; that driver waits for the runtime (services/terminate/drive.ts)
 * instead of exiting, and once a runtime answers on the same socket it drives the pod to the end
 * and exits 0 — so the kill's message "handed to background podctl pid N, which drives them until
 * terminated" stays true. The built CLI in child processes against the embedded simulator, in real
 * time. Needs `npm run build` first.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import type { SimPodSpec } from '../../src/cri/simulator/types.js';
import { alive } from '../support/process.js';
import { until, waitFor } from '../support/wait.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');
const ENV = { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' };
/** The pod: its container ignores SIGTERM, so it terminates when its 8 s grace is over (SIGKILL). */
const POD: SimPodSpec = { name: 'slow', namespace: 'default', uid: '6d1f0c3e-3b8a-4f57-9f0e-2a6b1d0c9e41', terminationGracePeriodSeconds: 8, containers: [{ name: 'c', onSigterm: 'ignore' }] };

function podctl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: ENV, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

beforeAll(() => {
  if (!existsSync(path.join(ROOT, 'dist', 'commands', 'kill.js'))) throw new Error('dist/ is missing: run `npm run build` before the CLI tests');
});

describe('a background driver while the runtime is away', { timeout: 90_000 }, () => {
  let dir: string;
  let socket: string;
  let sim: RunningSimulator | undefined;
  let driver = 0;

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-away-'));
    socket = path.join(dir, 'cri.sock');
  });
  afterAll(async () => {
    if (driver > 0 && alive(driver)) process.kill(driver, 'SIGKILL');
    await sim?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits for it, drives the pod to the end once it is back, and exits 0', async () => {
    sim = await startSimulator({ socketPath: socket, timeScale: 1, pods: [POD] });
    const common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
    // the runtime goes away while the kill waits: the kill gives up after 2 s and hands the pod on
    const child = spawn(process.execPath, [BIN, 'kill', 'default/slow', '--timeout', '2s', ...common], { cwd: ROOT, env: ENV });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.resume();
    const exited = new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
    await until('the kill waits', () => stderr.includes('waiting up to 2s'), { timeoutMs: 15_000, everyMs: 200 });
    await sim.close();
    sim = undefined;
    const kill = { code: await exited, stderr };
    expect(kill.code, kill.stderr).toBe(3);
    const handed = /handed to background podctl pid (\d+), which drives them until terminated \(log ([^)]+)\)/.exec(kill.stderr);
    driver = Number(handed?.[1]);
    const log = handed?.[2] ?? '';
    expect(driver, kill.stderr).toBeGreaterThan(0);

    // the driver waits (it did not exit on the missing socket) and says so in its log
    const waiting = await waitFor(`driver ${driver} says it waits (log ${log})`, () => (readFileSync(log, 'utf8').includes('waiting for the runtime') ? readFileSync(log, 'utf8') : undefined), {
      timeoutMs: 15_000,
      everyMs: 200,
      detail: () => `alive: ${alive(driver)}; the log:\n${readFileSync(log, 'utf8')}`,
    });
    expect(waiting).toMatch(/no such socket|refused/);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(alive(driver), `driver ${driver} still running; log:\n${readFileSync(log, 'utf8')}`).toBe(true);

    // a runtime on the same socket again (the pod still runs there): the driver finishes it and exits 0
    sim = await startSimulator({ socketPath: socket, timeScale: 1, pods: [POD] });
    await until(`driver ${driver} exits`, () => !alive(driver), { timeoutMs: 40_000, everyMs: 200 });
    const written = readFileSync(log, 'utf8');
    expect(written).toContain('the runtime answered again');
    const result = JSON.parse(written.slice(written.indexOf('{')));
    expect(result.pods).toMatchObject([{ name: 'slow', outcome: 'terminated' }]);
    const status = await podctl(['status', 'default/slow', '--json', ...common]);
    const [pod] = JSON.parse(status.stdout).pods;
    expect(pod.state).toMatch(/terminated|finished/);
    expect(pod.containersRunning).toBe(0);
  });

  /** A driver for POD in a state dir of its own that records the pod, with no runtime at its socket. */
  async function waitingDriver(stateDir: string): Promise<{ exited: Promise<number>; stderr: () => string; kill: (signal: NodeJS.Signals) => void }> {
    mkdirSync(path.join(stateDir, 'pods'), { recursive: true });
    writeFileSync(path.join(stateDir, 'pods', `${POD.uid}.ckpt`), '');
    const args = ['kill', '--uid', POD.uid!, '--drive', '--yes', '--runtime-endpoint', `unix://${path.join(dir, 'none.sock')}`, '--state-dir', stateDir];
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: ENV });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.resume();
    const exited = new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
    await until('the driver waits', () => stderr.includes('waiting for the runtime'), { timeoutMs: 15_000, everyMs: 200 });
    return { exited, stderr: () => stderr, kill: (signal) => child.kill(signal) };
  }

  it('SIGTERM ends the wait at once (exit 130), and the driver does not claim to hand on pods it never took', async () => {
    const driver = await waitingDriver(path.join(dir, 'state-2'));
    const signalled = Date.now();
    driver.kill('SIGTERM');
    expect(await driver.exited).toBe(130);
    expect(Date.now() - signalled).toBeLessThan(5_000);
    expect(driver.stderr()).toContain('SIGTERM: stopping; this process drives no pod');
    expect(driver.stderr()).not.toContain('handed to');
  });

  it('a driver whose pods are no longer recorded (the state dir removed) stops waiting: exit 1, said why', async () => {
    const stateDir = path.join(dir, 'state-3');
    const driver = await waitingDriver(stateDir);
    rmSync(stateDir, { recursive: true, force: true });
    const removed = Date.now();
    expect(await driver.exited).toBe(1);
    // at its next attempt: the pauses so far are 0.5 s, 1 s, 2 s
    expect(Date.now() - removed).toBeLessThan(10_000);
    expect(driver.stderr()).toContain('none of the pods has a checkpoint any more; nothing left to drive');
  });
});
