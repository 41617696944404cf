/**
 * The built CLI (`node bin/run.js`) in child processes: --help content, exit codes, stdout/stderr
 * separation, and real runs against the embedded CRI simulator. Needs `npm run build` first (the
 * test script does it).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { requireBuilt, runPodctl as podctl, BIN } from '../support/cli.js';
import { waitFor } from '../support/wait.js';

beforeAll(() => {
  requireBuilt('kill');
});

describe('--help teaches', { timeout: 60_000 }, () => {
  it.each([
    ['kill', ['--grace', '--timeout', '--no-wait', '-l, --selector', 'killPodNow bound', 'Exit codes:', '3   timed out', 'EXAMPLES']],
    ['evict', ['--reason', '--message', 'Failed', 'Exit codes:', 'EXAMPLES']],
    ['drain', ['--grace-period', '--critical-grace-period', '--group', '--exclude', '--dry-run', 'critical pods', '5   partially done', 'EXAMPLES']],
    ['sync-known', ['--desired', '--desired-from', 'orphan', 'EXAMPLES']],
    ['status', ['--explain', '-o, --output', 'wide', 'couldHaveRunningContainers', 'EXAMPLES']],
    ['simulator', ['--pods', '--socket', 'EXAMPLES']],
  ])('podctl %s --help', async (command, needles) => {
    const run = await podctl([command, '--help']);
    expect(run.code).toBe(0);
    for (const needle of [...needles, '--runtime-endpoint', '--state-dir', '--kubeconfig', '--node', '--log-level', '--json', '--no-color']) {
      expect(run.stdout, needle).toContain(needle);
    }
  });
});

describe('-h is --help (kubectl and crictl habit)', { timeout: 60_000 }, () => {
  it('podctl -h and podctl kill -h print the same help as --help, exit 0', async () => {
    const [short, long] = await Promise.all([podctl(['kill', '-h']), podctl(['kill', '--help'])]);
    expect(short.code).toBe(0);
    expect(short.stdout).toBe(long.stdout);
    expect(short.stdout).toContain('USAGE');
    const top = await podctl(['-h']);
    expect(top.code).toBe(0);
    expect(top.stdout).toContain('COMMANDS');
  });
});

describe('crictl habits', { timeout: 60_000 }, () => {
  it('-r is --runtime-endpoint', async () => {
    const run = await podctl(['status', '-r', 'unix:///tmp/podctl-no-such-runtime.sock']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('runtime endpoint /tmp/podctl-no-such-runtime.sock (--runtime-endpoint): no such socket');
  });
});

describe('contradictions are usage errors, not silently resolved', { timeout: 60_000 }, () => {
  it('-o yaml with --json, and -A with pod names: exit 2, one line', async () => {
    for (const args of [
      ['status', '-o', 'yaml', '--json'],
      ['status', '-oyaml', '--json'],
      ['kill', 'web/api', '-A', '--dry-run'],
    ]) {
      const run = await podctl(args);
      expect(run.code, args.join(' ')).toBe(2);
    }
    // which format the caller wants is unclear: one line on stderr, nothing on stdout
    const both = await podctl(['status', '-o', 'yaml', '--json']);
    expect(both.stdout).toBe('');
    expect(both.stderr.trim().split('\n')).toEqual(['error: --json and -o yaml ask for two formats (use one of them: --json is -o json)']);
    const all = await podctl(['kill', 'web/api', '-A', '--dry-run']);
    expect(all.stderr.trim().split('\n')).toHaveLength(1);
    expect(all.stderr).toContain('-A/--all-namespaces applies to -l, --field-selector and --all, not to pod names');
  });
});

describe('exit codes and streams', { timeout: 60_000 }, () => {
  it('usage error: exit 2, one line on stderr, nothing on stdout', async () => {
    const run = await podctl(['kill']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^error: no pods given/);
  });

  it('an unknown flag is a usage error too', async () => {
    const run = await podctl(['status', '--frobnicate']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/Nonexistent flag: --frobnicate.*podctl status --help/);
  });

  it('a missing runtime socket: exit 1, one line naming the path and the flag', async () => {
    const state = mkdtempSync(path.join(tmpdir(), 'podctl-cli-'));
    const run = await podctl(['status', '--runtime-endpoint', 'unix:///nonexistent/cri.sock', '--state-dir', state]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('/nonexistent/cri.sock');
    expect(run.stderr).toContain('--runtime-endpoint');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it.each([
    ['under /proc (a file system that refuses new names)', () => `/proc/podctl-no-such-dir-${process.pid}`, 'ENOENT'],
    [
      'below a regular file',
      () => {
        const file = path.join(mkdtempSync(path.join(tmpdir(), 'podctl-cli-')), 'file');
        writeFileSync(file, 'x');
        return path.join(file, 'state');
      },
      'ENOTDIR',
    ],
  ])('an unusable state dir %s: exit 1 at once, one line naming the path, the cause and --state-dir', async (_what, stateDir, code) => {
    const dir = stateDir();
    // Bounded below the session-open bound (30 s), so a hang cannot pass as its timeout message.
    const run = await podctl(['status', '--state-dir', dir, '--runtime-endpoint', 'unix:///nonexistent/cri.sock'], {}, 20_000);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(new RegExp(`^error: cannot create state dir ${dir}: .*\\(${code}\\); choose another with --state-dir`));
  });
});

/** A line of `status -w -o json`. */
interface WatchLine {
  type: string;
  at: string;
  pod: { namespace: string; name: string; state: string; ready: unknown };
}

describe('against the embedded simulator', { timeout: 90_000 }, () => {
  let sim: RunningSimulator;
  let dir: string;
  let common: string[];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-cli-sim-'));
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.05,
      pods: [
        { name: 'web-1', namespace: 'web', labels: { app: 'web' }, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] },
        { name: 'web-2', namespace: 'web', labels: { app: 'web' }, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] },
        { name: 'stubborn', namespace: 'default', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'ignore' }] },
        { name: 'stubborn-2', namespace: 'default', terminationGracePeriodSeconds: 600, containers: [{ name: 'c', onSigterm: 'ignore' }] },
        { name: 'stubborn-3', namespace: 'default', terminationGracePeriodSeconds: 600, containers: [{ name: 'c', onSigterm: 'ignore' }] },
        { name: 'batch-1', namespace: 'batch', priority: -5, terminationGracePeriodSeconds: 10, containers: [{ name: 'c', onSigterm: { exitAfterSeconds: 2 } }] },
        {
          name: 'watched',
          namespace: 'follow',
          terminationGracePeriodSeconds: 30,
          containers: [
            { name: 'a', onSigterm: 'exit' },
            { name: 'b', onSigterm: 'exit' },
          ],
        },
        { name: 'etcd', namespace: 'kube-system', static: true, priority: 2_000_001_000, containers: [{ name: 'etcd', onSigterm: 'exit' }] },
      ],
    });
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
  });

  afterAll(async () => {
    await sim?.close();
  });

  it('status lists the runtime pods (table on stdout)', async () => {
    const run = await podctl(['status', ...common]);
    expect(run.code).toBe(0);
    expect(run.stdout.split('\n')[0]).toMatch(/^NAMESPACE\/NAME\s+UID\s+STATE\s+READY\s+GRACE\s+IN STATE\s+AGE\s+OWNER\s+LAST ERROR$/);
    // READY and AGE come from the runtime: two containers running, a pod a few seconds old
    expect(run.stdout).toMatch(/follow\/watched\s+\S{8}\s+runtime\s+2\/2\s+-\s+\S+\s+\d+s\s/);
    for (const name of ['web/web-1', 'web/web-2', 'default/stubborn', 'batch/batch-1', 'kube-system/etcd']) expect(run.stdout).toContain(name);
  });

  it('status -w -o json: a JSON line per change, as another process kills the pod; SIGINT ends it with exit 0', async () => {
    const child = spawn(process.execPath, [BIN, 'status', '-w', '-n', 'follow', '-o', 'json', ...common], { env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' } });
    let stdout = '';
    let stderr = '';
    const waiters: { test: (lines: WatchLine[]) => boolean; resolve: () => void }[] = [];
    const lines = (): WatchLine[] =>
      stdout
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as WatchLine);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      for (const w of waiters.splice(0)) {
        if (w.test(lines())) w.resolve();
        else waiters.push(w);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const until = (test: (l: WatchLine[]) => boolean) => new Promise<void>((resolve) => (test(lines()) ? resolve() : waiters.push({ test, resolve })));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await until((l) => l.length >= 1);
    expect(lines()[0]).toMatchObject({ type: 'added', pod: { namespace: 'follow', name: 'watched', state: 'runtime', ready: { sandbox: true, containers: 2, total: 2 } } });
    const kill = await podctl(['kill', 'follow/watched', '--grace', '1', ...common]);
    expect(kill.code).toBe(0);
    await until((l) => l.some((r) => r.type === 'modified' && r.pod.state === 'finished'));
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    const records = lines();
    expect(records.every((r) => ['added', 'modified', 'deleted'].includes(r.type) && /Z$/.test(r.at))).toBe(true);
    // the last line is the pod finished; each line is a change (never the same state and READY twice in a row)
    expect(records.at(-1)?.pod).toMatchObject({ name: 'watched', state: 'finished' });
    const seen = records.map((r) => JSON.stringify([r.pod.state, r.pod.ready]));
    expect(seen.every((s, i) => i === 0 || s !== seen[i - 1])).toBe(true);
    expect(stderr).toContain('SIGINT: stopping the watch');
    expect(stderr).not.toMatch(/^error:/m);
  });

  it('status --json says the runtime is the simulator, though reached through an explicit --runtime-endpoint', async () => {
    const run = await podctl(['status', '--json', ...common]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ endpoint: sim.endpoint, simulated: true });
  });

  it('kill waits for termination and reports it as JSON; status then shows it finished', async () => {
    const run = await podctl(['kill', 'web/web-1', '--grace', '2', '--json', ...common]);
    expect(run.stderr).toContain('waiting up to 10s');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({ action: 'kill', status: 'done', pods: [{ namespace: 'web', name: 'web-1', outcome: 'terminated', gracePeriodSeconds: 2 }] });
    const status = JSON.parse((await podctl(['status', 'web/web-1', '--json', ...common])).stdout);
    expect(['terminated', 'finished']).toContain(status.pods[0].state);
    expect(status.pods[0].containersRunning).toBe(0);
  });

  it('a container ignoring SIGTERM outlives a short --timeout: exit 3; --explain says why', async () => {
    const run = await podctl(['kill', 'stubborn', '--grace', '30', '--timeout', '1s', ...common]);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('default/stubborn still terminating after 1s');
    const explainNow = async () => {
      const explain = await podctl(['status', 'default/stubborn', '--explain', '--json', ...common]);
      expect(explain.code).toBe(0);
      return JSON.parse(explain.stdout).explain[0];
    };
    // right after the exit, each answer is one of the hand-off's true moments: nobody drives it yet,
    // the background driver adopted it and its worker has yet to pick the kill up, or it drives it
    const first = await explainNow();
    expect(first.state).toBe('terminating');
    expect(first.waitingFor).toMatch(/^(No podctl process drives it now|The worker to pick up the termination request|syncTerminatingPod:)/);
    // then the background driver's worker stops it within its grace
    const e = await waitFor(
      'the background driver to drive default/stubborn',
      async () => {
        const now = await explainNow();
        return now.waitingFor.startsWith('syncTerminatingPod:') && now.driven ? now : undefined;
      },
      20_000,
    );
    expect(e.state).toBe('terminating');
    expect(e.predicates.find((p: { name: string }) => p.name === 'isPodTerminationRequested').value).toBe(true);
    expect(e.predicates.find((p: { name: string }) => p.name === 'shouldPodContainersBeTerminating').value).toBe(true);
    // the background driver that took the pod over has what is left of the 30 s, never more
    expect(e.gracePeriodSeconds).toBeGreaterThanOrEqual(27);
    expect(e.gracePeriodSeconds).toBeLessThanOrEqual(30);
    expect(e.timeline.length).toBeGreaterThan(0);
  });

  it('SIGINT while waiting: exit 130, the pod handed to a background driver whose PID is shown and who owns it', async () => {
    const child = spawn(process.execPath, [BIN, 'kill', 'default/stubborn-2', '--timeout', '5m', ...common], { env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' } });
    let stderr = '';
    const waiting = new Promise<void>((resolve) => {
      child.stderr.on('data', (c: Buffer) => {
        stderr += c.toString();
        if (stderr.includes('waiting up to 5m')) resolve();
      });
    });
    const exited = new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
    await waiting;
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toContain('SIGINT: stopping; pods this process drives are handed to a background podctl process');
    const pid = Number(/handed to background podctl pid (\d+)/.exec(stderr)?.[1]);
    expect(pid).toBeGreaterThan(0);
    try {
      let status: { pods: { state: string; ownerPid: number | null; ownerAlive: boolean | null }[] } | undefined;
      for (let i = 0; i < 100 && status?.pods[0]?.ownerPid !== pid; i += 1) {
        status = JSON.parse((await podctl(['status', 'default/stubborn-2', '--json', ...common])).stdout);
        if (status?.pods[0]?.ownerPid !== pid) await new Promise((r) => setTimeout(r, 100));
      }
      expect(status?.pods[0]).toMatchObject({ state: 'terminating', ownerPid: pid, ownerAlive: true });
    } finally {
      process.kill(pid, 'SIGKILL');
    }
  });

  it('a second kill with a shorter grace shortens the first one in flight (another process)', async () => {
    const first = spawn(process.execPath, [BIN, 'kill', 'default/stubborn-3', '--json', ...common], { env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' } });
    let out = '';
    let err = '';
    first.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const waiting = new Promise<void>((resolve) => {
      first.stderr.on('data', (c: Buffer) => {
        err += c.toString();
        if (err.includes('waiting up to 15m')) resolve();
      });
    });
    const exited = new Promise<number>((resolve) => first.on('exit', (code) => resolve(code ?? 1)));
    await waiting; // grace 600 s → killPodNow bound 900 s
    const second = await podctl(['kill', 'default/stubborn-3', '--grace', '1', '--json', ...common]);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout).pods[0]).toMatchObject({ handledBy: 'delegated', outcome: 'terminated' });
    expect(await exited).toBe(0);
    expect(JSON.parse(out).pods[0]).toMatchObject({ name: 'stubborn-3', outcome: 'terminated' });
  });

  it('--no-wait returns at once and a background podctl finishes the termination', async () => {
    const run = await podctl(['kill', 'batch/batch-1', '--no-wait', '--json', ...common]);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({ status: 'requested', handedOffTo: { pid: expect.any(Number) } });
    let state = '';
    for (let i = 0; i < 100 && state !== 'finished' && state !== 'terminated'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      state = JSON.parse((await podctl(['status', 'batch/batch-1', '--json', ...common])).stdout).pods[0].state;
    }
    expect(['terminated', 'finished']).toContain(state);
  });

  it('evict removes the stopped pod from the runtime', async () => {
    const run = await podctl(['evict', 'web/web-2', '--json', ...common]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ action: 'evict', pods: [{ name: 'web-2', outcome: 'terminated' }] });
    const status = JSON.parse((await podctl(['status', '-n', 'web', '--json', ...common])).stdout);
    const row = status.pods.find((p: { name: string }) => p.name === 'web-2');
    expect(row === undefined || (row.containersTotal === 0 && row.evicted === true)).toBe(true);
  });

  it('an unknown pod: exit 4', async () => {
    const run = await podctl(['kill', 'web/nope', ...common]);
    expect(run.code).toBe(4);
  });

  it('drain --dry-run plans critical pods last and changes nothing', async () => {
    const run = await podctl(['drain', '--dry-run', '--json', ...common]);
    expect(run.code).toBe(0);
    const plan = JSON.parse(run.stdout);
    const last = plan.groups.at(-1);
    expect(last.critical).toBe(true);
    expect(last.pods.map((p: { name: string }) => p.name)).toContain('etcd');
  });

  it('kill of a running static pod really stops its containers', async () => {
    const run = await podctl(['kill', 'kube-system/etcd', '--grace', '1', '--yes', '--json', ...common]);
    const status = JSON.parse((await podctl(['status', 'kube-system/etcd', '--json', ...common])).stdout);
    expect(status.pods[0].containersRunning).toBe(0);
    expect(JSON.parse(run.stdout).pods[0].outcome).toBe('terminated');
    expect(run.code).toBe(0);
  });
});

describe('a real drain against the embedded simulator', { timeout: 90_000 }, () => {
  let sim: RunningSimulator;
  let common: string[];

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-cli-drain-'));
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.1,
      pods: [
        { name: 'batch', namespace: 'jobs', priority: -5, terminationGracePeriodSeconds: 60, containers: [{ name: 'c', onSigterm: { exitAfterSeconds: 3 } }] },
        {
          name: 'web',
          namespace: 'web',
          terminationGracePeriodSeconds: 30,
          containers: [
            { name: 'c', onSigterm: 'exit' },
            { name: 'd', onSigterm: 'exit' },
          ],
        },
        { name: 'deaf', namespace: 'web', priority: 1000, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'ignore' }] },
        { name: 'dns', namespace: 'kube-system', priority: 2_000_000_000, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] },
      ],
    });
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
  });

  afterAll(async () => {
    await sim?.close();
  });

  it('without a terminal, a drain over CRI that would stop a system-critical pod is refused without --yes: exit 2, one line, nothing stopped', async () => {
    const run = await podctl(['drain', '--grace-period', '4', '--critical-grace-period', '2', ...common]);
    expect(run.code).toBe(2);
    const errors = run.stderr.split('\n').filter((l) => l.startsWith('error:'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/refusing to drain 1 static or system-critical pod\(s\): kube-system\/dns \(system-critical\) over CRI without confirmation.*--yes/);
    const status = JSON.parse((await podctl(['status', '--json', ...common])).stdout);
    expect(status.pods.filter((p: { containersRunning: number }) => p.containersRunning > 0)).toHaveLength(4);
  });

  it('terminates every pod, lowest priority first, critical last: exit 0 and a JSON summary', async () => {
    const run = await podctl(['drain', '--grace-period', '4', '--critical-grace-period', '2', '--yes', '--json', ...common]);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result.status).toBe('done');
    expect(result.summary).toMatchObject({ planned: 4, terminated: 4, failed: 0, timedOut: 0 });
    expect(result.groups.map((g: { priority: number; pods: { name: string; gracePeriodSeconds: number }[] }) => [g.priority, g.pods.map((p) => `${p.name}:${p.gracePeriodSeconds}`)])).toEqual([
      [0, ['batch:2', 'deaf:2', 'web:2']],
      [2_000_000_000, ['dns:2']],
    ]);
    expect(run.stderr).toContain('drain: group 1/2');
    const status = JSON.parse((await podctl(['status', '--json', ...common])).stdout);
    expect(status.pods.every((p: { containersRunning: number }) => p.containersRunning === 0)).toBe(true);
  });
});
