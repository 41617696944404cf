/**
 * The confirmation of destructive scopes on a real terminal: the built CLI under `script` (a
 * pseudo-terminal for stdin and stderr), against the embedded simulator. "n" (or nothing) does
 * nothing and exits 2; "y" proceeds. Without a terminal the same command needs --yes (safety tests);
 * a drain over CRI of static or system-critical pods asks the same way.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');
const hasScript = (() => {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!hasScript)('confirmation on a terminal', { timeout: 60_000 }, () => {
  let sim: RunningSimulator;
  let common: string[];

  beforeAll(async () => {
    if (!existsSync(path.join(ROOT, 'dist', 'podctl.cjs'))) throw new Error('dist/ is missing: run `npm run build` first');
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-confirm-'));
    sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), timeScale: 0.05, pods: 10 });
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
  });
  afterAll(async () => {
    await sim?.close();
  });

  /** Runs podctl on a pseudo-terminal, typing `answer` at it. */
  const onTerminal = (args: string[], answer: string): Promise<{ code: number; output: string }> =>
    new Promise((resolve) => {
      const command = [process.execPath, BIN, ...args, ...common].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
      const child = execFile('script', ['-qec', command, '/dev/null'], { env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' }, timeout: 45_000 }, (error, stdout) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, output: stdout }),
      );
      child.stdin?.end(answer);
    });

  const running = async (ref: string): Promise<number> => {
    const out = await new Promise<string>((resolve) =>
      execFile(process.execPath, [BIN, 'status', ref, '--json', ...common], { env: { ...process.env, KUBECONFIG: '' } }, (_e, stdout) => resolve(stdout)),
    );
    return (JSON.parse(out) as { pods: { containersRunning: number }[] }).pods[0]?.containersRunning ?? -1;
  };

  it('asks before killing static and system-critical pods; "n" does nothing (exit 2)', async () => {
    const run = await onTerminal(['kill', '-n', 'kube-system', '--all'], 'n\n');
    expect(run.output).toMatch(/kill \d+ static or system-critical pod\(s\): .*etcd.*\? \[y\/N\]/);
    expect(run.output).toContain('kill not confirmed; nothing was done');
    expect(run.code).toBe(2);
    expect(await running('kube-system/etcd-node-1')).toBeGreaterThan(0);
  });

  it('a drain over CRI asks before stopping static and system-critical pods; "n" stops nothing (exit 2)', async () => {
    const runningPods = async (): Promise<number> => {
      const status = await new Promise<string>((resolve) =>
        execFile(process.execPath, [BIN, 'status', '-A', '--json', ...common], { env: { ...process.env, KUBECONFIG: '' } }, (_e, stdout) => resolve(stdout)),
      );
      return (JSON.parse(status) as { pods: { containersRunning: number }[] }).pods.filter((p) => p.containersRunning > 0).length;
    };
    const before = await runningPods();
    const run = await onTerminal(['drain', '--grace-period', '2', '--critical-grace-period', '1'], 'n\n');
    expect(run.output).toMatch(/drain \d+ static or system-critical pod\(s\): .*etcd.* over CRI\? \[y\/N\]/);
    expect(run.output).toContain('drain not confirmed; nothing was done');
    expect(run.code).toBe(2);
    expect(await running('kube-system/etcd-node-1')).toBeGreaterThan(0);
    expect(before).toBeGreaterThan(1);
    expect(await runningPods()).toBe(before);
  });

  it('"y" proceeds and the pods are killed', async () => {
    const run = await onTerminal(['kill', 'kube-system/etcd-node-1', '--grace', '1'], 'y\n');
    expect(run.output).toMatch(/\? \[y\/N\]/);
    expect(run.code).toBe(0);
    expect(await running('kube-system/etcd-node-1')).toBe(0);
  });
});
