/**
 * `podctl agent` on a state dir that becomes read-only (the built CLI in a child process, against
 * the embedded CRI simulator): a read-only bind mount laid over the state dir while the agent runs
 * gives every write EROFS, as a remounted disk does. /healthz stays 200 (liveness is the loop's own
 * progress) and names the state dir's failure with its cause and since when; /readyz turns 503
 * after a few failed steps naming it; podctl_housekeeping_steps_total{result="failed"} counts them;
 * once the mount is gone the agent is ready again. A state dir already read-only at start ends the
 * agent with exit 2 and one line.
 *
 * Needs root and mount (a bind mount); without them the file is skipped, saying so.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { waitFor } from '../support/wait.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');
const ENV = { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' };

/** Why read-only bind mounts cannot be made here (not root, no mount permission), or undefined. */
function cannotMount(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  const probe = mkdtempSync(path.join(tmpdir(), 'podctl-mount-probe-'));
  try {
    execFileSync('mount', ['--bind', probe, probe], { stdio: 'pipe' });
    execFileSync('umount', [probe], { stdio: 'pipe' });
    return undefined;
  } catch (error) {
    return `mount --bind failed: ${String((error as { stderr?: Buffer }).stderr ?? (error as Error).message).trim()}`;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}
const unmountable = cannotMount();
if (unmountable) console.warn(`test/commands/agent-state-dir.test.ts: SKIPPED: a read-only state dir needs root and mount (${unmountable})`);

let sim: RunningSimulator;
let dir: string;
const mounted = new Set<string>();
const children: ChildProcess[] = [];

/** A read-only bind mount of `target` over itself: every write under it is EROFS until `unmount`. */
function mountReadOnly(target: string): void {
  execFileSync('mount', ['--bind', target, target]);
  mounted.add(target);
  execFileSync('mount', ['-o', 'remount,bind,ro', target]);
}

function unmount(target: string): void {
  if (mounted.delete(target)) execFileSync('umount', [target]);
}

async function get(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  return { status: res.status, text: await res.text() };
}

/** A probe of the agent's endpoints: a refused or failed request is an answer not yet given. */
const answered =
  <T>(probe: () => Promise<T | undefined>) =>
  () =>
    probe().catch(() => undefined);

const failedSteps = (metrics: string): number => Number(/^podctl_housekeeping_steps_total\{result="failed"\} (\d+)/m.exec(metrics)?.[1] ?? 'NaN');

beforeAll(async () => {
  if (unmountable) return;
  if (!existsSync(path.join(ROOT, 'dist', 'commands', 'agent.js'))) throw new Error('dist/ is missing: run `npm run build` before the CLI tests');
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-agent-erofs-'));
  sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), pods: [{ name: 'web', containers: [{ name: 'c', onSigterm: 'exit' }] }], timeScale: 1 });
});
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  for (const target of [...mounted]) unmount(target);
});
afterAll(async () => {
  await sim?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(unmountable !== undefined)('podctl agent with a read-only state dir (EROFS)', { timeout: 90_000 }, () => {
  it('says so in /healthz and /readyz with its cause and since when, counts the failed steps, and is ready again once it can write', async () => {
    const stateDir = path.join(dir, 'state-running');
    mkdirSync(stateDir);
    const child = spawn(process.execPath, [BIN, 'agent', '--interval', '200ms', '--metrics-addr', '127.0.0.1:0', '--runtime-endpoint', sim.endpoint, '--state-dir', stateDir], { cwd: ROOT, env: ENV });
    children.push(child);
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const base = await waitFor(
      'the agent serves /healthz',
      answered(async () => /serving \/metrics and \/healthz on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1]),
      { timeoutMs: 30_000, everyMs: 200 },
    );
    await waitFor(
      'the agent is ready after a step',
      answered(async () => ((await get(`${base}/readyz`)).status === 200 && /^podctl_housekeeping_steps_total\{result="ok"\} [1-9]/m.test((await get(`${base}/metrics`)).text) ? true : undefined)),
      { timeoutMs: 30_000, everyMs: 200 },
    );
    expect(failedSteps((await get(`${base}/metrics`)).text)).toBe(0);

    const readOnlyFrom = Date.now();
    mountReadOnly(stateDir);
    // the state dir is checked with a write at most every 10 s; then 3 failed steps in a row
    const ready = await waitFor(
      '/readyz says 503',
      answered(async () => {
        const r = await get(`${base}/readyz`);
        return r.status === 503 ? r : undefined;
      }),
      { timeoutMs: 40_000, everyMs: 200 },
    );
    const cause = `${stateDir}: read-only file system (EROFS)`;
    // not ready from the third failed step; a fourth (every 200 ms) may have failed by the time /readyz answers
    const failedInARow = /^(\d+) housekeeping steps failed in a row: state-dir: (.*)$/.exec(ready.text.split('\n')[0] ?? '');
    expect(failedInARow, ready.text).not.toBeNull();
    expect(Number(failedInARow![1])).toBeGreaterThanOrEqual(3);
    expect(failedInARow![2]).toBe(cause);
    const health = await get(`${base}/healthz`);
    expect(health.status).toBe(200); // liveness: the loop goes on, a restart would not mend the disk
    const line = health.text.split('\n').find((l) => l.startsWith('state-dir: '));
    const since = /^state-dir: failing since (\S+Z) \(.*\): (.*)$/.exec(line ?? '');
    expect(since, health.text).not.toBeNull();
    expect(since![2]).toBe(cause);
    expect(Date.parse(since![1]!)).toBeGreaterThanOrEqual(Math.floor(readOnlyFrom / 1000) * 1000);
    expect(Date.parse(since![1]!)).toBeLessThanOrEqual(Date.now());
    expect(failedSteps((await get(`${base}/metrics`)).text)).toBeGreaterThanOrEqual(3);
    expect(stderr).toContain(`agent: the state dir cannot be written: ${cause}; housekeeping waits for it`);
    // said once, not at every step
    expect(stderr.split(`the state dir cannot be written`).length - 1).toBe(1);

    unmount(stateDir);
    await waitFor(
      '/readyz says 200 again',
      answered(async () => ((await get(`${base}/readyz`)).status === 200 ? true : undefined)),
      { timeoutMs: 40_000, everyMs: 200 },
    );
    expect((await get(`${base}/healthz`)).text).toMatch(/^state-dir: ok since /m);
    expect(stderr).toContain(`agent: the state dir can be written again (${stateDir})`);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('a state dir read-only at start ends the agent: exit 2, one line naming it', async () => {
    const stateDir = path.join(dir, 'state-at-start');
    mkdirSync(stateDir);
    mountReadOnly(stateDir);
    const run = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [BIN, 'agent', '--metrics-addr', 'none', '--runtime-endpoint', sim.endpoint, '--state-dir', stateDir],
        { cwd: ROOT, env: ENV, timeout: 60_000 },
        (error, _stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stderr }),
      );
    });
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(stateDir);
    expect(run.stderr).toMatch(/read-only file system \(EROFS\)/);
  });
});
