/**
 * `podctl agent` and the metrics flags as an operator meets them (the built CLI in child processes,
 * against the embedded CRI simulator): --help, bad flags refused before anything happens (exit 2,
 * one line), a busy --metrics-addr, SIGTERM = exit 0 within 5 s with its state saved, and metrics
 * files pointed into a directory that does not exist.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { requireBuilt, runPodctl, type CliRun as Run, BIN, ROOT } from '../support/cli.js';

/** `podctl ...args`, killed after `timeoutMs`. */
function podctl(args: string[], timeoutMs?: number): Promise<Run> {
  return runPodctl(args, {}, timeoutMs);
}

let sim: RunningSimulator;
let dir: string;
let busy: Server;
let busyPort: number;

beforeAll(async () => {
  requireBuilt('agent');
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-cli-agent-'));
  sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), pods: [{ name: 'web', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'ignore' }] }], timeScale: 1 });
  busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  busyPort = (busy.address() as { port: number }).port;
});
afterAll(async () => {
  busy.close();
  await sim.close();
});

const common = (): string[] => ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];

describe('podctl agent (CLI)', { timeout: 60_000 }, () => {
  it('--help teaches the loop, the endpoints and the exit codes', async () => {
    const run = await podctl(['agent', '--help']);
    expect(run.code).toBe(0);
    for (const needle of ['--interval', '--stuck-after', '--metrics-addr', '/metrics', '/healthz', 'SIGTERM', 'Exit codes:', 'EXAMPLES']) expect(run.stdout, needle).toContain(needle);
  });

  it.each([
    [['--interval', '10ms'], /--interval 10ms is too short/],
    [['--interval', 'soon'], /--interval/],
    [['--metrics-addr', '9640'], /--metrics-addr "9640" is not HOST:PORT/],
    [['--desired', 'x.json', '--desired-from', 'runtime'], /mutually exclusive/],
    [['--desired', '/nonexistent/desired.yaml'], /--desired \/nonexistent\/desired.yaml: cannot read \(ENOENT\)/],
  ])('refuses %j before anything happens: exit 2, one line', async (args, message) => {
    const run = await podctl(['agent', ...args, ...common()]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(message);
  });

  it('a state dir that cannot be created ends it at start: exit 2, one line naming it', async () => {
    const file = path.join(dir, 'not-a-dir');
    writeFileSync(file, '');
    const run = await podctl(['agent', '--metrics-addr', 'none', '--runtime-endpoint', sim.endpoint, '--state-dir', path.join(file, 'state')]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/state dir .*not-a-dir\/state: a part of the path is not a directory \(ENOTDIR\)/);
  });

  it('a --metrics-addr already in use is exit 2 naming the address', async () => {
    const run = await podctl(['agent', '--metrics-addr', `127.0.0.1:${busyPort}`, ...common()]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`--metrics-addr 127.0.0.1:${busyPort}: cannot listen \\(EADDRINUSE\\)`));
  });

  it('SIGTERM stops it within 5 s with exit 0', async () => {
    const child = spawn(process.execPath, [BIN, 'agent', '--interval', '200ms', '--metrics-addr', '127.0.0.1:0', ...common()], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' } });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const deadline = Date.now() + 20_000;
    while (!/serving \/metrics/.test(stderr) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(stderr).toMatch(/serving \/metrics and \/healthz on http:\/\/127\.0\.0\.1:\d+/);
    const started = Date.now();
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(stderr).toMatch(/SIGTERM: stopping the agent/);
    expect(stderr).toMatch(/agent: stopped after \d+ step\(s\)/);
  });

  it('kill --metrics-textfile and watch --metrics-file into a missing directory: exit 2 before anything happens', async () => {
    const missing = path.join(dir, 'no-such-dir', 'podctl.prom');
    const kill = await podctl(['kill', 'default/web', '--metrics-textfile', missing, ...common()]);
    expect(kill.code).toBe(2);
    expect(kill.stderr).toMatch(/--metrics-textfile: directory .*no-such-dir does not exist \(ENOENT\)/);
    const watch = await podctl(['watch', '-o', 'json', '--metrics-file', missing, ...common()]);
    expect(watch.code).toBe(2);
    expect(watch.stderr).toMatch(/--metrics-file: directory .*no-such-dir does not exist/);
  });
});
