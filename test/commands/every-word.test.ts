/**
 * Every word true: what podctl says is checked against what happened, through the built CLI
 * (`node bin/run.js`) on the embedded simulator. Needs `npm run build` first (the test script does it).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { alive, processesNaming } from '../support/process.js';
import { requireBuilt, runPodctl as podctl, useSimNode, BIN } from '../support/cli.js';
import { until } from '../support/wait.js';

/** The bound of a wait here (for a loaded machine, not a speed goal) and its pace. */
const WAIT = { timeoutMs: 30_000, everyMs: 100 };

beforeAll(() => {
  requireBuilt('kill');
});

describe('a pod whose worker was forgotten keeps how it ended', { timeout: 90_000 }, () => {
  const node = useSimNode('podctl-words-', {
    timeScale: 0.05,
    pods: [
      { name: 'worker-1', namespace: 'default', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] },
      { name: 'web-1', namespace: 'web', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] },
    ],
  });

  it('kill → sync-known (forget) → status, --explain → kill --dry-run: finished, when, by whom; not planned again', async () => {
    const kill = await podctl(['kill', 'default/worker-1', '--grace', '1', '--json', ...node.common]);
    expect(kill.code).toBe(0);
    const killer = (JSON.parse(kill.stdout) as { pods: { ownerPid: number }[] }).pods[0]!.ownerPid;
    const sync = await podctl(['sync-known', '--desired-from', 'runtime', '--json', ...node.common]);
    expect(sync.code).toBe(0);
    expect((JSON.parse(sync.stdout) as { forgotten: { name: string }[] }).forgotten.map((p) => p.name)).toEqual(['worker-1']);

    // the runtime still lists the pod (its sandbox stopped): status says how it ended, not "runtime"
    const status = await podctl(['status', 'default/worker-1', '--explain', '--json', ...node.common]);
    expect(status.code).toBe(0);
    const result = JSON.parse(status.stdout) as {
      pods: { state: string; since: string; inStateSeconds: number; containersTotal: number }[];
      explain: { state: string; tracked: boolean; waitingFor: string; predicates: { name: string; value: boolean; meaning: string }[]; timeline: { type: string; pid: number; detail: string }[] }[];
    };
    const row = result.pods[0]!;
    expect(row.state).toBe('finished');
    expect(row.containersTotal).toBe(1);
    const explained = result.explain[0]!;
    expect(explained.tracked).toBe(true);
    expect(explained.waitingFor).toContain('its worker was forgotten');
    expect(explained.predicates.find((p) => p.name === 'isPodTerminationRequested')).toMatchObject({ value: true });
    // who finished it, and when it was forgotten
    expect(explained.timeline).toContainEqual(expect.objectContaining({ type: 'finished', pid: killer }));
    expect(explained.timeline.map((t) => t.type)).toContain('forgotten');
    const finishedAt = Date.parse(row.since);
    expect(Date.now() - finishedAt).toBeLessThan(60_000);

    const text = await podctl(['status', 'default/worker-1', '--explain', ...node.common]);
    expect(text.stdout).not.toContain('nobody asked this pod to terminate');
    expect(text.stdout).not.toContain('podctl has not acted on it');

    const dryRun = await podctl(['kill', 'default/worker-1', '--dry-run', '--json', ...node.common]);
    expect(dryRun.code).toBe(0);
    expect((JSON.parse(dryRun.stdout) as { pods: { outcome: string }[] }).pods[0]!.outcome).toBe('already-terminated');

    // the other pod, never acted on, is still a runtime pod
    const other = await podctl(['status', 'web/web-1', '--json', ...node.common]);
    expect((JSON.parse(other.stdout) as { pods: { state: string }[] }).pods[0]!.state).toBe('runtime');
  });

  it('the ending goes once the runtime no longer lists the pod', async () => {
    const evict = await podctl(['evict', 'web/web-1', '--grace', '1', '--yes', ...node.common]);
    expect(evict.code).toBe(0);
    // evicted: its containers and sandbox are removed, so the runtime lists it no more
    const sync = await podctl(['sync-known', '--desired-from', 'runtime', ...node.common]);
    expect(sync.code).toBe(0);
    expect(readdirSync(path.join(node.stateDir, 'ended')).filter((n) => !n.startsWith('.'))).toHaveLength(1);
    const status = await podctl(['status', 'web/web-1', '--json', ...node.common]);
    expect(status.code).toBe(4);
  });
});

describe('a background driver stops on SIGTERM', { timeout: 120_000 }, () => {
  let sim: RunningSimulator;
  let dir: string;
  let stateDir: string;
  let common: string[];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-words-driver-'));
    stateDir = path.join(dir, 'state');
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      pods: [
        ...['stubborn-1', 'stubborn-2'].map((name) => ({ name, namespace: 'default', terminationGracePeriodSeconds: 600, containers: [{ name: 'c', onSigterm: 'ignore' as const }] })),
        { name: 'short', namespace: 'default', terminationGracePeriodSeconds: 2, containers: [{ name: 'c', onSigterm: 'ignore' as const }] },
      ],
    });
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', stateDir];
  });

  afterAll(async () => {
    for (const pid of processesNaming(dir)) process.kill(pid, 'SIGKILL');
    await sim?.close();
  });

  interface Owned {
    pods: { name: string; ownerPid: number | null; driven: boolean | null; state: string }[];
  }
  const statusOf = async (name: string): Promise<Owned['pods'][number]> => {
    const run = await podctl(['status', `default/${name}`, '--json', ...common]);
    return (JSON.parse(run.stdout) as Owned).pods[0]!;
  };

  /** `kill --no-wait`: the pod goes to a background driver; resolves once that driver drives it. */
  async function handToDriver(name: string): Promise<{ pid: number; log: string }> {
    const kill = await podctl(['kill', `default/${name}`, '--no-wait', '--json', ...common]);
    expect(kill.code, kill.stderr).toBe(0);
    const driver = (JSON.parse(kill.stdout) as { handedOffTo: { pid: number; log: string } }).handedOffTo;
    await until(`driver ${driver.pid} drives ${name}`, async () => (await statusOf(name)).ownerPid === driver.pid, WAIT);
    return driver;
  }

  it('without an agent: it says which pods it leaves undriven and exits; no other driver starts', async () => {
    const driver = await handToDriver('stubborn-1');
    process.kill(driver.pid, 'SIGTERM');
    await until(`driver ${driver.pid} exits`, () => !alive(driver.pid), WAIT);
    const log = readFileSync(driver.log, 'utf8');
    expect(log).toContain(`no agent serves ${stateDir}, so 1 pod(s) are left undriven: default/stubborn-1`);
    // no driver of its own replaced it
    expect(processesNaming(stateDir)).toEqual([]);
    expect(await statusOf('stubborn-1')).toMatchObject({ state: 'terminating', driven: false });
  });

  it('with an agent: it hands its pods to the agent, then exits; a second agent refuses to start, naming the first', async () => {
    const driver = await handToDriver('stubborn-2');
    const agent = spawn(process.execPath, [BIN, 'agent', '--metrics-addr', 'none', '--interval', '500ms', ...common], { env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' } });
    let agentErr = '';
    agent.stderr.on('data', (chunk: Buffer) => (agentErr += chunk.toString()));
    try {
      await until('the agent marks the state dir', () => existsSync(path.join(stateDir, 'agent.pid')), WAIT);
      const second = await podctl(['agent', '--metrics-addr', 'none', ...common]);
      expect(second.code).toBe(1);
      expect(second.stderr.trim()).toBe(`error: another podctl agent (pid ${agent.pid}) serves state dir ${stateDir}; stop it first, or give this one another --state-dir`);

      process.kill(driver.pid, 'SIGTERM');
      await until(`driver ${driver.pid} exits`, () => !alive(driver.pid), WAIT);
      expect(readFileSync(driver.log, 'utf8')).toContain(`1 pod(s) handed to the agent (pid ${agent.pid}), which drives them on: default/stubborn-2`);
      expect(await statusOf('stubborn-2')).toMatchObject({ state: 'terminating', ownerPid: agent.pid, driven: true });
    } finally {
      agent.kill('SIGKILL');
    }
    expect(agentErr).not.toMatch(/^error:/m);
  });

  it('an undriven pod past its deadline: --explain says when the deadline passed, never a negative grace', async () => {
    const driver = await handToDriver('short');
    process.kill(driver.pid, 'SIGKILL');
    await until(`driver ${driver.pid} is gone`, () => !alive(driver.pid), WAIT);
    await until(
      'the grace deadline passed',
      async () => {
        const run = await podctl(['status', 'default/short', '--explain', '--json', ...common]);
        const e = (JSON.parse(run.stdout) as { explain: { graceDeadline: string | null }[] }).explain[0]!;
        return e.graceDeadline !== null && Date.parse(e.graceDeadline) < Date.now() - 1_000;
      },
      WAIT,
    );
    const text = await podctl(['status', 'default/short', '--explain', ...common]);
    const grace = text.stdout.split('\n').find((l) => l.trimStart().startsWith('grace:'))!;
    expect(grace).toMatch(/^ {2}grace: {8}\d+s; its deadline passed \d+s ago, and nobody drives the pod$/);
    expect(text.stdout).not.toMatch(/-\d+s/);
  });
});

describe('one rule for duration flags, --timeout 0 and repeated flags', { timeout: 90_000 }, () => {
  let sim: RunningSimulator;
  let dir: string;
  let common: string[];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-words-flags-'));
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      pods: [
        { name: 'app-1', namespace: 'web', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] },
        { name: 'dns', namespace: 'kube-system', priority: 2_000_000_000, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] },
      ],
    });
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
  });

  afterAll(async () => {
    await sim?.close();
  });

  const plan = async (args: string[]): Promise<unknown> => {
    const run = await podctl([...args, '--dry-run', '--json', ...common]);
    expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
    const result = JSON.parse(run.stdout) as { pods?: { name: string; gracePeriodSeconds: number; drainGraceSeconds?: number }[]; groups?: unknown };
    return { groups: result.groups, pods: result.pods?.map((p) => [p.name, p.gracePeriodSeconds, p.drainGraceSeconds]) };
  };

  it('a grace or budget is a number of seconds or a duration, on every command', async () => {
    expect(await plan(['drain', '--grace-period', '1m', '--critical-grace-period', '20s'])).toEqual(await plan(['drain', '--grace-period', '60', '--critical-grace-period', '20']));
    expect(await plan(['drain', '--group', '0:5s', '--group', '2000000000:1m'])).toEqual(await plan(['drain', '--group', '0:5', '--group', '2000000000:60']));
    expect(await plan(['kill', 'web/app-1', '--grace', '5s'])).toEqual(await plan(['kill', 'web/app-1', '--grace', '5']));
    // a part of a second is refused, naming the flag
    const part = await podctl(['kill', 'web/app-1', '--grace', '1.5', '--dry-run', ...common]);
    expect(part.code).toBe(2);
    expect(part.stderr).toContain('--grace: "1.5" is not a whole number of seconds');
  });

  it('--timeout 0 is refused alike by kill, evict and drain', async () => {
    const runs = await Promise.all([
      podctl(['kill', 'web/app-1', '--timeout', '0', ...common]),
      podctl(['evict', 'web/app-1', '--timeout', '0s', ...common]),
      podctl(['drain', '--timeout', '0', ...common]),
    ]);
    for (const run of runs) {
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/^error: --timeout: "0s?" leaves no time to wait for termination/);
    }
    // nothing was done
    expect((JSON.parse((await podctl(['status', 'web/app-1', '--json', ...common])).stdout) as { pods: { state: string }[] }).pods[0]!.state).toBe('runtime');
  });

  it('a flag given twice is taken the last time (--state-dir, -o, --grace)', async () => {
    const run = await podctl(['status', '--state-dir', path.join(dir, 'not-this-one'), '-o', 'table', ...common, '-o', 'json']);
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as { stateDir: string }).stateDir).toBe(path.join(dir, 'state'));
    expect(existsSync(path.join(dir, 'not-this-one'))).toBe(false);
    expect(await plan(['kill', 'web/app-1', '--grace', '20', '--grace', '3'])).toEqual(await plan(['kill', 'web/app-1', '--grace', '3']));
  });
});
