/**
 * The README's first command ends in `npm run demo` (scripts/demo.sh): it must work on a machine
 * with no runtime, on its own private simulator socket, and clean up after itself.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mkdtempSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('npm run demo (scripts/demo.sh)', { timeout: 180_000 }, () => {
  it('starts a private simulator, drains it with visible progress, shows status, and cleans up', async () => {
    if (!existsSync(path.join(process.cwd(), 'dist', 'commands', 'drain.js'))) throw new Error('dist/ is missing: run `npm run build` first');
    const tmp = mkdtempSync(path.join(tmpdir(), 'podctl-demo-test-'));
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        'bash',
        ['scripts/demo.sh'],
        {
          cwd: process.cwd(),
          env: { ...process.env, TMPDIR: tmp, DEMO_PODS: '10', DEMO_TIME_SCALE: '0.05', DEMO_GRACE: '6', DEMO_CRITICAL_GRACE: '2', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' },
          timeout: 170_000,
        },
        (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
      );
    });
    expect(run.stderr).toContain('private to this demo');
    // it says its time is scaled, and writes no colour into a pipe
    expect(run.stderr).toContain("demo: simulated time runs at --time-scale 0.05: every simulated wait is 20× shorter than real time (a pod's 120s grace passes in 6s)");
    expect(run.stderr + run.stdout).not.toContain('\x1b[');
    expect(run.stderr).toMatch(/drain: group 1\/2/);
    expect(run.stderr).toMatch(/✓ \S+ terminated/);
    expect(run.stderr).toMatch(/drain done: 10\/10 terminated/);
    // status before (runtime) and after (finished): two tables with every pod
    const tables = run.stdout.split('\n').filter((l) => l.startsWith('NAMESPACE/NAME'));
    expect(tables).toHaveLength(2);
    expect(run.stdout).toMatch(/kube-system\/etcd-node-1 +\S+ +finished/);
    expect(run.code).toBe(0);
    // it ends saying what the drain did, then the path of the drain's report, last on stdout
    expect(run.stderr).toMatch(/== done: the drain terminated every pod \(10 of 10 in [\d.]+ s; (\d+ SIGKILLed at their grace deadline: they ignored SIGTERM|every container exited on SIGTERM)\)/);
    expect(run.stderr).not.toContain('0 done, 5 partially done');
    const report = run.stdout.trim().split('\n').at(-1)!;
    expect(report).toBe(path.join(tmp, 'podctl-demo-report.html'));
    expect(readFileSync(report, 'utf8').match(/<g class="lane/g)).toHaveLength(10);
    // the private socket and state are gone
    expect(readdirSync(tmp).filter((f) => f.startsWith('podctl-demo.'))).toEqual([]);
  });
});
