/**
 * How a podctl process ends (src/lib/exit-when-idle.ts), through bin/run.js in child processes: once
 * nothing is left to run it exits through `process.exit` with the exit code it would have had
 * (Node.js then leaves the heap to the kernel instead of freeing it first), its output complete and
 * its `exit` listeners run; beside another `beforeExit` listener it ends as Node.js would.
 * A probe preloaded with `-r` records the calls. Needs `npm run build` first.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoNode, startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');
const PODS = 40;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function podctl(args: string[], probe: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['-r', probe, BIN, ...args],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' }, timeout: 60_000, maxBuffer: 16 << 20 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** Records on stderr each `process.exit` call (with its argument) and the `exit` event's code; with `extra`, adds a `beforeExit` listener. */
function probeFile(dir: string, extra: boolean): string {
  const file = path.join(dir, extra ? 'probe-extra.cjs' : 'probe.cjs');
  writeFileSync(
    file,
    [
      'const exit = process.exit;',
      'process.exit = function (code) { process.stderr.write(`probe: process.exit(${code})\\n`); return exit.apply(process, arguments); };',
      "process.on('exit', (code) => process.stderr.write(`probe: exit event ${code}\\n`));",
      extra ? "process.on('beforeExit', () => process.stderr.write('probe: other beforeExit ran\\n'));" : '',
    ].join('\n'),
  );
  return file;
}

let sim: RunningSimulator;
let common: string[];
let probe: string;
let probeExtra: string;

beforeAll(async () => {
  if (!existsSync(path.join(ROOT, 'dist', 'podctl.cjs'))) throw new Error('dist/ is missing: run `npm run build` first');
  const dir = mkdtempSync(path.join(tmpdir(), 'podctl-exit-'));
  sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), pods: demoNode(PODS) });
  common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
  probe = probeFile(dir, false);
  probeExtra = probeFile(dir, true);
});
afterAll(async () => {
  await sim?.close();
});

describe('the end of a podctl process', { timeout: 60_000 }, () => {
  it('status exits through process.exit once idle, with code 0, its whole table written and exit listeners run', async () => {
    const run = await podctl(['status', '-o', 'json', ...common], probe);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('probe: process.exit(undefined)');
    expect(run.stderr).toContain('probe: exit event 0');
    expect((JSON.parse(run.stdout) as { pods: unknown[] }).pods).toHaveLength(PODS);
  });

  it('a failing command keeps its documented exit code (4: pod not found) and its one-line error', async () => {
    const run = await podctl(['kill', 'nosuch/pod', ...common], probe);
    expect(run.code).toBe(4);
    expect(run.stderr).toMatch(/^error: pod not found on this node: nosuch\/pod/m);
    expect(run.stderr).toContain('probe: exit event 4');
  });

  it('beside another beforeExit listener, the process ends as Node.js would: that listener runs, no process.exit from podctl', async () => {
    const run = await podctl(['status', ...common], probeExtra);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('probe: other beforeExit ran');
    expect(run.stderr).not.toContain('probe: process.exit');
    expect(run.stderr).toContain('probe: exit event 0');
  });
});
