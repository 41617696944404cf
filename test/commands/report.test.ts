/**
 * The drain report through the built CLI against the embedded simulator: `drain --report FILE`
 * writes the page and keeps the report in the state dir; `podctl report` draws the last drain again
 * (`-o json`: the same data), or pods picked with --since and names; the facts come from the pods'
 * timelines (preStop hooks, containers killed at their grace deadline, sandbox stops, a failed
 * sandbox stop).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import type { DrainReport } from '../../src/services/drain/report/model.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');

function podctl(args: string[], cwd = ROOT): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' }, timeout: 90_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe('drain --report and podctl report', { timeout: 120_000 }, () => {
  let sim: RunningSimulator;
  let dir: string;
  let common: string[];
  let drain: { code: number; stdout: string; stderr: string };

  beforeAll(async () => {
    if (!existsSync(path.join(ROOT, 'dist', 'commands', 'report.js'))) throw new Error('dist/ is missing or old: run `npm run build` first');
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-cli-report-'));
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.1,
      // the first sandbox stop fails (a network teardown that fails once); the retry, about a second later, succeeds
      faults: [{ method: 'StopPodSandbox', code: 2, details: 'injected: CNI teardown failed: network is not ready', count: 1 }],
      pods: [
        { name: 'stubborn', namespace: 'web', terminationGracePeriodSeconds: 5, containers: [{ name: 'app', onSigterm: 'ignore', preStop: { sleep: { seconds: 1 } } }] },
        {
          name: 'polite',
          namespace: 'web',
          terminationGracePeriodSeconds: 5,
          containers: [
            { name: 'app', onSigterm: { exitAfterSeconds: 1 } },
            { name: 'log', onSigterm: 'exit' },
          ],
        },
        { name: 'dns', namespace: 'kube-system', priority: 2_000_000_000, terminationGracePeriodSeconds: 5, containers: [{ name: 'coredns', onSigterm: 'exit' }] },
      ],
    });
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
    drain = await podctl(['drain', '--grace-period', '8', '--critical-grace-period', '3', '--yes', '--report', path.join(dir, 'drain.html'), ...common]);
  });
  afterAll(async () => {
    await sim?.close();
  });

  it('drain --report writes one self-contained page with a lane per pod, its groups and the SIGKILL at the deadline', () => {
    expect(drain.code, drain.stderr).toBe(0);
    expect(drain.stderr).toContain(`report written to ${path.join(dir, 'drain.html')}`);
    const html = readFileSync(path.join(dir, 'drain.html'), 'utf8');
    expect(html).not.toMatch(/<script|<link|<img|@import|url\(|https?:\/\/(?!www\.w3\.org\/2000\/svg)/i);
    expect(html).toContain("default-src 'none'");
    expect(html.match(/<g class="lane/g)).toHaveLength(3);
    expect(html.match(/<g class="group"/g)).toHaveLength(2);
    // the SIGTERM-ignoring pod is marked, with its exact times on hover
    expect(html).toMatch(/<g class="lane killed[^"]*" data-pod="web\/stubborn"/);
    expect(html.match(/<g class="sigkill"/g)).toHaveLength(1);
    expect(html).toMatch(/<g class="sigkill" data-container="app"><title>web\/stubborn · SIGKILL of app at its grace deadline, \d\d:\d\d:\d\d\.\d{3} UTC/);
    expect(html).toMatch(/<g class="lane(?! killed)[^"]*" data-pod="web\/polite"/);
    expect(html).toMatch(/<g class="lane" data-pod="kube-system\/dns"/);
    expect(html).toContain('Killed at their grace deadline (1)');
  });

  it('keeps the report in the state dir, and podctl report -o json gives the same data', async () => {
    const kept = readdirSync(path.join(dir, 'state', 'reports')).filter((f) => f.endsWith('.json'));
    expect(kept).toHaveLength(1);
    const run = await podctl(['report', '-o', 'json', ...common]);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as DrainReport;
    expect(report).toMatchObject({ format: 'podctl/drain-report', source: 'drain', status: 'done', budgetSumSeconds: 8 });
    expect(report.groups.map((g) => [g.priority, g.budgetSeconds, g.critical])).toEqual([
      [0, 5, false],
      [2_000_000_000, 3, true],
    ]);
    const pod = (name: string) => report.pods.find((p) => p.name === name)!;
    // requested → preStop (sleep) → SIGTERM … SIGKILL at the grace deadline → sandbox stopped
    const stubborn = pod('stubborn');
    expect(stubborn.killedAtDeadline).toEqual(['app']);
    expect(stubborn.segments.map((s) => [s.kind, s.outcome])).toEqual(
      expect.arrayContaining([
        ['prestop', 'succeeded'],
        ['container', 'killed-at-deadline'],
        ['sandbox-stop', 'succeeded'],
      ]),
    );
    const prestop = stubborn.segments.find((s) => s.kind === 'prestop')!;
    const kill = stubborn.segments.find((s) => s.kind === 'container')!;
    expect(prestop.label).toBe('app (sleep)');
    expect(Date.parse(kill.start)).toBeGreaterThanOrEqual(Date.parse(prestop.end));
    expect(Date.parse(stubborn.requestedAt!)).toBeLessThanOrEqual(Date.parse(prestop.start));
    // the polite pod's two containers exited on SIGTERM, nothing killed
    expect(pod('polite').killedAtDeadline).toEqual([]);
    expect(
      pod('polite')
        .segments.filter((s) => s.kind === 'container')
        .map((s) => [s.label, s.outcome]),
    ).toEqual(
      expect.arrayContaining([
        ['app', 'exited'],
        ['log', 'exited'],
      ]),
    );
    // the sandbox stop that failed once is a failure of its pod, with the runtime's words
    const failed = report.pods.filter((p) => p.failures.length > 0);
    expect(failed).toHaveLength(1);
    expect(failed[0]!.failures.join(' ')).toContain('CNI teardown failed');
    expect(failed[0]!.segments.some((s) => s.kind === 'sandbox-stop' && s.outcome === 'failed')).toBe(true);
    expect(report.summary).toMatchObject({ pods: 3, terminated: 3, killedAtDeadline: 1, notFinished: 0 });
    expect(pod('dns').group).toBe(1);
  });

  it('podctl report --since with a pod named draws only that pod; with no drain kept it says so (exit 2)', async () => {
    const run = await podctl(['report', 'web/polite', '--since', '10m', '-o', 'json', ...common]);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as DrainReport;
    expect(report.source).toBe('state-dir');
    expect(report.pods.map((p) => p.name)).toEqual(['polite']);
    const page = await podctl(['report', '--file', path.join(dir, 'again.html'), ...common]);
    expect(page.code, page.stderr).toBe(0);
    expect(page.stdout.trim()).toBe(path.join(dir, 'again.html'));
    expect(readFileSync(path.join(dir, 'again.html'), 'utf8').match(/<g class="lane/g)).toHaveLength(3);
    const none = await podctl(['report', '--state-dir', path.join(dir, 'empty-state')]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no drain report is kept in');
  });
});
