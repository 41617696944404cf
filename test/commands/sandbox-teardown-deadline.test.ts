/**
 * The deadline of the sandbox teardown calls, through the built CLI on the simulator: a
 * StopPodSandbox that answers after 11 s (a loaded containerd tearing a network down) is waited for
 * when no deadline is set (the kubelet's 2m), and cut at the user's --request-timeout when one is;
 * a kill that stops waiting while the sandbox stop runs says so, not that something is being killed.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseFault, startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { requireBuilt, runPodctl as podctl, type CliRun } from '../support/cli.js';
import { killAll } from '../support/process.js';

const sims: RunningSimulator[] = [];
/** Background drivers a timed-out kill handed its pod to. */
const drivers: number[] = [];
afterAll(async () => {
  killAll(drivers);
  for (const s of sims) await s.close();
});

beforeAll(() => {
  requireBuilt('kill');
});

/** A simulator with one pod `default/web` whose StopPodSandbox does its work, then answers `lateSeconds` late; podctl's flags for it. */
async function slowTeardownNode(lateSeconds: number): Promise<string[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'podctl-teardown-'));
  const fault = parseFault(`StopPodSandbox=delay:${lateSeconds}`);
  const sim = await startSimulator({
    socketPath: path.join(dir, 'cri.sock'),
    timeScale: 0.05,
    pods: [{ name: 'web', namespace: 'default', containers: [{ name: 'c' }] }],
    faults: fault.kind === 'rule' ? [fault.rule] : [],
  });
  sims.push(sim);
  return ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
}

/** The pod's timeline lines for its sandbox stop (`status --explain`). */
async function sandboxSteps(common: string[]): Promise<string[]> {
  const explain = await podctl(['status', 'default/web', '--explain', ...common]);
  expect(explain.code, explain.stderr).toBe(0);
  return explain.stdout.split('\n').filter((line) => line.includes('sandbox-stopped'));
}

function rememberDriver(run: CliRun): void {
  const pid = /handed to background podctl pid (\d+)/.exec(run.stderr)?.[1];
  if (pid) drivers.push(Number(pid));
}

describe('StopPodSandbox deadline', { timeout: 120_000 }, () => {
  it('waits out a slow sandbox stop by default (2m), cuts it at --request-timeout when given, and names what remains', async () => {
    const [defaulted, flagged, impatient] = await Promise.all([slowTeardownNode(11), slowTeardownNode(11), slowTeardownNode(11)]);
    const [plain, cut, handed] = await Promise.all([
      podctl(['kill', 'default/web', '--grace', '0', '--timeout', '90s', '--json', ...defaulted]),
      podctl(['kill', 'default/web', '--grace', '0', '--timeout', '3s', '--request-timeout', '2s', ...flagged]),
      podctl(['kill', 'default/web', '--grace', '0', '--timeout', '3s', ...impatient]),
    ]);
    rememberDriver(cut);
    rememberDriver(handed);

    // no deadline set: the one StopPodSandbox is answered, the first attempt finishes the pod
    expect(plain.code, plain.stderr).toBe(0);
    expect(JSON.parse(plain.stdout).pods[0].outcome).toBe('terminated');
    const steps = await sandboxSteps(defaulted);
    expect(steps.join('\n')).not.toMatch(/failed|DeadlineExceeded/);
    expect(steps).toHaveLength(1);
    expect(steps[0]).toMatch(/sandbox [0-9a-f]{12} stopped/);

    // the user's deadline wins: the call is cut at 2s, said in the pod's timeline
    expect(cut.code, cut.stderr).toBe(3);
    expect((await sandboxSteps(flagged)).join('\n')).toContain('StopPodSandbox: DeadlineExceeded: no answer within 2s');

    // the kill stops waiting while the sandbox stop runs: its outcome says so
    expect(handed.code, handed.stderr).toBe(3);
    expect(handed.stdout).toContain('every container stopped; what remains is the sandbox stop');
    expect(handed.stdout).not.toContain('killing what still runs');
  });
});
