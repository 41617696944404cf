/**
 * `podctl agent --shutdown-guard` as a node meets it: the built CLI in child processes, a real
 * `dbus-daemon` on a private system bus with the suite's stand-in logind on it (Inhibit hands out a
 * real file descriptor; PrepareForShutdown, ListInhibitors, InhibitDelayMaxUSec), `systemd-inhibit`
 * holding the guard's lock, and the embedded CRI simulator as the node's runtime. The same guard
 * against containerd's pods is in test/e2e/shutdown-guard.test.ts.
 *
 * What is asserted is what logind sees (when the lock is taken and released, whether the power went
 * off at the end of the delay or when the locks were gone), what the pods' containers went through,
 * and the report `podctl status --last-shutdown` reads after the "reboot".
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator, type SimPodSpec } from '../../src/cri/simulator/index.js';
import { ContainerStateCode } from '../../src/cri/client/codes.js';
import { holdKubeletInhibitor, logindBusMissing, startLogindBus, type LogindBus } from '../support/logind-bus.js';
import { startKubeApiServer } from '../support/kube-api-server.js';
import { writeKubeconfig } from '../kube/support.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');
const missing = logindBusMissing();
if (missing && process.env.CI) throw new Error(`the shutdown guard's tests need ${missing}; scripts/test.sh installs it`);
if (missing) console.warn(`SKIPPED: test/commands/shutdown-guard.test.ts: ${missing}`);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let dir: string;
const cleanups: (() => Promise<void> | void)[] = [];
/** One private system bus for the file's tests, one after another: each sets its delay and starts with no lock held. */
let sharedBus: LogindBus | undefined;

beforeAll(async () => {
  if (!existsSync(path.join(ROOT, 'dist', 'commands', 'agent.js'))) throw new Error('dist/ is missing: run `npm run build` before the CLI tests');
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-guard-'));
  if (!missing) sharedBus = await startLogindBus({ delaySeconds: 5 });
}, 30_000);
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await sharedBus?.idle(15_000);
});
afterAll(async () => {
  await sharedBus?.close();
  rmSync(dir, { recursive: true, force: true });
});

function podctl(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '', ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

interface Node {
  sim: RunningSimulator;
  bus: LogindBus;
  stateDir: string;
  common: string[];
}

let serial = 0;
async function node(pods: SimPodSpec[], delaySeconds: number): Promise<Node> {
  const name = `n${(serial += 1)}`;
  const sim = await startSimulator({ socketPath: path.join(dir, `${name}.sock`), pods, timeScale: 1 });
  cleanups.push(() => sim.close());
  await sharedBus!.setDelay(delaySeconds);
  const bus = busFrom(sharedBus!, sharedBus!.events.length);
  const stateDir = path.join(dir, `${name}-state`);
  // no kubelet here unless a test says so: its healthz refused, and no kubelet process on the machine
  return { sim, bus, stateDir, common: ['--runtime-endpoint', sim.endpoint, '--state-dir', stateDir, '--kubelet-healthz', '127.0.0.1:1'] };
}

/** The shared bus as one test sees it: its waits start at the events of this test. */
function busFrom(shared: LogindBus, start: number): LogindBus {
  return { ...shared, waitFor: (match, timeoutMs, from = start) => shared.waitFor(match, timeoutMs, from) };
}

interface Agent {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
}

async function startAgent(n: Node, args: string[], common = n.common): Promise<Agent> {
  const child = spawn(process.execPath, [BIN, 'agent', '--interval', '500ms', '--metrics-addr', '127.0.0.1:0', ...args, ...common], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', DBUS_SYSTEM_BUS_ADDRESS: n.bus.address },
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  const deadline = Date.now() + 30_000;
  while (!/serving \/metrics/.test(stderr) && Date.now() < deadline && child.exitCode === null) await sleep(50);
  if (!/serving \/metrics/.test(stderr)) throw new Error(`the agent did not start: ${stderr}`);
  return { child, stderr: () => stderr, exited };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function lastShutdown(n: Node): Promise<{ record: Record<string, any> | null; counts: Record<string, number> | null; completed: boolean | null }> {
  const run = await podctl(['status', '--last-shutdown', '-o', 'json', '--state-dir', n.stateDir]);
  expect(run.stderr).toBe('');
  return JSON.parse(run.stdout);
}

function outcomeOf(record: Record<string, any>, name: string): string {
  return (record.pods as { name: string; outcome: string }[]).find((p) => p.name === name)?.outcome ?? 'absent';
}

async function metrics(agent: Agent): Promise<string> {
  const port = /serving \/metrics and \/healthz on http:\/\/127\.0\.0\.1:(\d+)/.exec(agent.stderr())![1];
  return new Promise((resolve, reject) => {
    http
      .get(`http://127.0.0.1:${port}/metrics`, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

const podctlLock = (e: { event: string; who?: string }): boolean => e.event === 'inhibit' && e.who === 'podctl';

describe.skipIf(missing !== undefined)('podctl agent --shutdown-guard', { timeout: 120_000 }, () => {
  it('no kubelet: drains the groups in order within the delay, lets the shutdown go on, and the report survives the reboot', async () => {
    const n = await node(
      [
        { name: 'batch', namespace: 'jobs', priority: 0, terminationGracePeriodSeconds: 30 },
        { name: 'stubborn', namespace: 'jobs', priority: 0, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'ignore' }] },
        { name: 'dns', namespace: 'kube-system', priority: 2_000_000_000, terminationGracePeriodSeconds: 30 },
      ],
      30,
    );
    const agent = await startAgent(n, ['--shutdown-guard', '--shutdown-group', '0:2', '--shutdown-group', '2000000000:2']);
    await n.bus.waitFor(podctlLock, 15_000);
    n.bus.send('shutdown');
    const poweroff = await n.bus.waitFor((e) => e.event === 'poweroff', 40_000);
    // the power went when podctl let go, not at the end of logind's 30 s
    expect(poweroff.why).toBe('released');
    expect(poweroff.held).toEqual([]);
    expect(poweroff.waitedMs).toBeLessThan(25_000);
    // the stubborn pod got its group's 2 s (not its own 30) and was killed at the end of them
    const stubborn = n.sim.state.listContainers(undefined).find((c) => c.labels['io.kubernetes.pod.name'] === 'stubborn');
    expect(n.sim.state.containerStatus(stubborn!.id).exitCode).toBe(137);
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);

    // "after the reboot": the report, as text and as JSON
    const last = await lastShutdown(n);
    expect(last.completed).toBe(true);
    expect(last.record).toMatchObject({ trigger: 'logind', state: 'done', windowMs: 30_000, groupsTotalMs: 4_000 });
    expect(outcomeOf(last.record!, 'batch')).toBe('stopped');
    expect(outcomeOf(last.record!, 'stubborn')).toBe('killed');
    expect(outcomeOf(last.record!, 'dns')).toBe('stopped');
    expect((last.record!.pods as { name: string; graceSeconds: number }[]).find((p) => p.name === 'stubborn')?.graceSeconds).toBe(2);
    const text = await podctl(['status', '--last-shutdown', '--state-dir', n.stateDir]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/jobs\/stubborn +group ≥0 +grace 2s +killed at the deadline/);
    expect(text.stdout).toMatch(/2 stopped in time, 1 killed at the deadline/);

    // the agent exports the last shutdown when it starts again (with or without the guard)
    const again = await startAgent(n, []);
    const text2 = await metrics(again);
    expect(text2).toMatch(/^podctl_shutdown_last_pods\{outcome="killed"\} 1$/m);
    expect(text2).toMatch(/^podctl_shutdown_last_pods\{outcome="stopped"\} 2$/m);
    expect(text2).toMatch(/^podctl_shutdown_last_completed 1$/m);
  });

  it('a 5 s delay against 30 s of groups: said at start (log, metric, status header) with the drop-in; the drain fits in what logind grants, and each pod ends as its budget says', async () => {
    // the groups get at most 3 s of the 5 (1 s kept to release, 1 s to see the last pods gone), less what
    // the guard took to plan on a loaded machine. Each pod's end is decided by what it does and the grace
    // it got, not by the machine's speed: one stops at SIGTERM, one ignores it (the runtime kills it at
    // the end of its grace, a second or more before the drain's bound), one no signal ends.
    const n = await node(
      [
        { name: 'quick', priority: 0, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] },
        { name: 'web', priority: 0, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'ignore' }] },
        { name: 'hung', priority: 0, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', process: 'stuck' }] },
        { name: 'etcd', namespace: 'kube-system', priority: 2_000_000_000, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] },
      ],
      5,
    );
    const agent = await startAgent(n, ['--shutdown-guard', '--shutdown-grace-period', '30', '--shutdown-critical-grace-period', '10']);
    await n.bus.waitFor(podctlLock, 15_000);
    expect(agent.stderr()).toMatch(/logind grants a shutdown 5s \(InhibitDelayMaxSec\) but the shutdown groups ask for 30s: pods get 3s in all/);
    expect(agent.stderr()).toContain('/etc/systemd/logind.conf.d/99-podctl-shutdown.conf');
    expect(agent.stderr()).toMatch(/InhibitDelayMaxSec=31/);
    expect(await metrics(agent)).toMatch(/^podctl_shutdown_budget_short 1$/m);
    const status = await podctl(['status', ...n.common]);
    expect(status.stderr).toMatch(/^shutdown guard \(pid \d+\): logind grants a shutdown 5s .*99-podctl-shutdown\.conf/m);

    const from = n.bus.events.length;
    n.bus.send('shutdown');
    const poweroff = await n.bus.waitFor((e) => e.event === 'poweroff', 30_000, from);
    // podctl released within the delay: logind did not have to cut it off
    expect(poweroff.why).toBe('released');
    const last = await lastShutdown(n);
    const given = (last.record!.groups as { givenSeconds: number }[]).map((g) => g.givenSeconds);
    expect(given.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    expect(given.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(3);
    const pods = last.record!.pods as { name: string; group: number; graceSeconds: number; outcome: string }[];
    const pod = (name: string) => pods.find((p) => p.name === name)!;
    expect(pods).toHaveLength(4);
    // each pod got its group's shrunk budget
    for (const p of pods) expect(p.graceSeconds).toBe(p.group === 0 ? given[0] : given[1]);
    // stopped at SIGTERM (killed at once when its group got no second at all), killed at the end of its grace, still running at power-off
    expect(pod('quick').outcome).toBe(pod('quick').graceSeconds > 0 ? 'stopped' : 'killed');
    expect(pod('web').outcome).toBe('killed');
    expect(pod('hung').outcome).toBe('running');
    expect(pod('etcd').outcome).toBe('stopped');
    // what the runtime says agrees: the one killed exited 137, the hung one still runs
    const container = (name: string) => n.sim.state.listContainers(undefined).find((c) => c.labels['io.kubernetes.pod.name'] === name)!;
    expect(n.sim.state.containerStatus(container('web').id).exitCode).toBe(137);
    expect(n.sim.state.containerStatus(container('hung').id).state).toBe(ContainerStateCode.RUNNING);
    const text = await podctl(['status', '--last-shutdown', '--state-dir', n.stateDir]);
    expect(text.stdout).toMatch(/hung +group ≥0 +grace \d+s +still running at power-off/);
    expect(text.stdout).toMatch(/web +group ≥0 +grace \d+s +killed at the deadline/);
  });

  describe('beside a kubelet holding its own inhibitor', () => {
    const pods: SimPodSpec[] = [
      { name: 'web', priority: 0, terminationGracePeriodSeconds: 30 },
      { name: 'apiserver', namespace: 'kube-system', static: true, priority: 2_000_000_000, terminationGracePeriodSeconds: 30 },
    ];

    /** A node whose kubelet answers its healthz and holds its own shutdown lock; the guard started beside it. */
    async function besideKubelet(extra: string[] = []): Promise<{ n: Node; kubelet: ReturnType<typeof holdKubeletInhibitor>; healthz: http.Server; agent: Agent }> {
      const healthz = http.createServer((_req, res) => res.end('ok'));
      await new Promise<void>((resolve) => healthz.listen(0, '127.0.0.1', resolve));
      cleanups.push(() => new Promise<void>((resolve) => (healthz.listening ? healthz.close(() => resolve()) : resolve())));
      const n = await node(pods, 30);
      const kubelet = holdKubeletInhibitor(n.bus.address);
      cleanups.push(() => kubelet.release());
      await n.bus.waitFor((e) => e.event === 'inhibit' && e.who === 'kubelet', 15_000);
      const common = ['--runtime-endpoint', n.sim.endpoint, '--state-dir', n.stateDir, '--kubelet-healthz', `127.0.0.1:${(healthz.address() as { port: number }).port}`];
      const agent = await startAgent(n, ['--shutdown-guard', '--shutdown-group', '0:5', '--shutdown-group', '2000000000:5', ...extra], common);
      await n.bus.waitFor(podctlLock, 15_000);
      expect(agent.stderr()).toMatch(/the kubelet's graceful shutdown holds its own lock: podctl goes after it/);
      return { n, kubelet, healthz, agent };
    }

    it('waits for its lock to go; the pods a running kubelet owns stay its own (never stopped over CRI)', async () => {
      const { n, kubelet } = await besideKubelet();
      const from = n.bus.events.length;
      n.bus.send('shutdown');
      await n.bus.waitFor((e) => e.event === 'prepare' && e.start === true, 10_000, from);
      await sleep(1_500);
      await kubelet.release();
      const poweroff = await n.bus.waitFor((e) => e.event === 'poweroff', 30_000, from);
      expect(poweroff.why).toBe('released');
      const last = await lastShutdown(n);
      expect(last.record!.kubelet).toMatchObject({ inhibitor: true, owned: 2 });
      expect(last.record!.kubelet.deferredMs).toBeGreaterThanOrEqual(1_000);
      // the kubelet stand-in stopped nothing, and podctl stopped nothing behind its back: both still run, and the report says so
      expect(outcomeOf(last.record!, 'web')).toBe('running');
      expect(outcomeOf(last.record!, 'apiserver')).toBe('running');
      expect(n.sim.state.journal().filter((r) => r.kind === 'signal')).toEqual([]);
    });

    it("stopped (SIGTERM) while it defers, as the kubelet stops its critical pod: stops none of the kubelet's pods, hands them on in a finished record, releases its lock and exits", async () => {
      const { n, agent } = await besideKubelet(['--shutdown-stop-timeout', '4s']);
      const lock = await n.bus.waitFor(podctlLock, 15_000);
      const from = n.bus.events.length;
      n.bus.send('shutdown');
      await n.bus.waitFor((e) => e.event === 'prepare' && e.start === true, 10_000, from);
      const deferring = Date.now() + 15_000;
      while (!/waiting for it/.test(agent.stderr()) && Date.now() < deferring) await sleep(50);
      expect(agent.stderr()).toMatch(/the kubelet's graceful shutdown holds its lock: waiting for it/);
      // the kubelet still holds its lock (its share would last ~19 s more): the guard's pod gets SIGTERM now
      agent.child.kill('SIGTERM');
      expect(await agent.exited).toBe(0);
      await n.bus.waitFor((e) => e.event === 'release' && e.pid === lock.pid, 15_000, from);
      // no fight: nothing stopped over CRI while the kubelet owns the pods
      expect(n.sim.state.journal().filter((r) => r.kind === 'signal')).toEqual([]);
      expect(agent.stderr()).toMatch(/the guard was stopped \(SIGTERM\) after .*; leaving the kubelet's pods to its graceful shutdown/);

      const last = await lastShutdown(n);
      expect(last.completed).toBe(true);
      expect(last.record).toMatchObject({ trigger: 'logind', state: 'handed-on', kubelet: { inhibitor: true, owned: 2 } });
      expect(last.record!.endedAt).toBeGreaterThanOrEqual(last.record!.startedAt);
      expect(outcomeOf(last.record!, 'web')).toBe('handed-on');
      expect(outcomeOf(last.record!, 'apiserver')).toBe('handed-on');
      expect(last.counts).toMatchObject({ 'handed-on': 2, pending: 0, running: 0 });
      const text = await podctl(['status', '--last-shutdown', '--state-dir', n.stateDir]);
      expect(text.code).toBe(0);
      expect(text.stdout).toMatch(/stopped by SIGTERM while it deferred to the kubelet: handed on to the kubelet's graceful shutdown in /);
      expect(text.stdout).toMatch(/apiserver +group ≥2000000000 +grace 30s +left to the kubelet's graceful shutdown \(the guard was stopped first\)/);
      expect(text.stdout).toMatch(/2 left to the kubelet's graceful shutdown, 0 still running at power-off, 0 unknown/);
      expect(text.stdout).not.toMatch(/ended before its drain did/);
    });

    it('the kubelet gone mid-share: nothing stopped while its lock was held, then the guard stops every pod', async () => {
      const { n, kubelet, healthz } = await besideKubelet();
      const from = n.bus.events.length;
      n.bus.send('shutdown');
      await n.bus.waitFor((e) => e.event === 'prepare' && e.start === true, 10_000, from);
      await sleep(1_500);
      expect(n.sim.state.journal().filter((r) => r.kind === 'signal')).toEqual([]);
      // the kubelet dies: its healthz goes, and its lock with it
      await new Promise<void>((resolve) => healthz.close(() => resolve()));
      await kubelet.release();
      const poweroff = await n.bus.waitFor((e) => e.event === 'poweroff', 30_000, from);
      expect(poweroff.why).toBe('released');
      const last = await lastShutdown(n);
      expect(last.record!.kubelet).toMatchObject({ inhibitor: true, owned: 0 });
      expect(outcomeOf(last.record!, 'web')).toBe('stopped');
      expect(outcomeOf(last.record!, 'apiserver')).toBe('stopped');
    });
  });

  it('a shutdown cancelled mid-drain stops the drain and keeps the lock; one cancelled after the drain takes the lock again', async () => {
    const n = await node(
      [
        { name: 'slow', priority: 0, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'ignore' }] },
        { name: 'late', priority: 1000, terminationGracePeriodSeconds: 30 },
      ],
      30,
    );
    // the first group's 8 s leave the cancel (sent once its pod has its SIGTERM) time to arrive before the second group starts
    const agent = await startAgent(n, ['--shutdown-guard', '--shutdown-group', '0:8', '--shutdown-group', '1000:2']);
    const first = await n.bus.waitFor(podctlLock, 15_000);
    let from = n.bus.events.length;
    n.bus.send('shutdown');
    await n.bus.waitFor((e) => e.event === 'prepare' && e.start === true, 10_000, from);
    // mid-drain: the first group's pod has its SIGTERM
    const signalled = Date.now() + 15_000;
    while (n.sim.state.journal().filter((r) => r.kind === 'signal').length === 0 && Date.now() < signalled) await sleep(50);
    n.bus.send('cancel');
    const deadline = Date.now() + 15_000;
    while ((await lastShutdown(n)).record?.state !== 'cancelled' && Date.now() < deadline) await sleep(100);
    const cancelled = await lastShutdown(n);
    expect(cancelled.record).toMatchObject({ state: 'cancelled' });
    // the second group never started: its pod still runs, and the guard still holds the lock it had
    expect(outcomeOf(cancelled.record!, 'late')).toBe('running');
    expect(n.sim.state.journal().filter((r) => r.kind === 'signal').length).toBe(1);
    await sleep(1_000);
    expect(n.bus.events.slice(from).some((e) => e.event === 'release' || e.event === 'poweroff')).toBe(false);
    expect(agent.stderr()).toMatch(/the shutdown was cancelled \(PrepareForShutdown false\)/);

    // a shutdown that ran to its end released the lock; cancelled afterwards, the guard takes it again
    from = n.bus.events.length;
    n.bus.send('shutdown');
    await n.bus.waitFor((e) => e.event === 'release' && e.pid === first.pid, 30_000, from);
    n.bus.send('cancel');
    const again = await n.bus.waitFor(podctlLock, 15_000, from);
    expect(again.pid).not.toBe(first.pid);
  });

  it('the guard killed mid-drain: its lock dies with it, and the record on disk is whole (the drain it had begun)', async () => {
    const n = await node([{ name: 'slow', priority: 0, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'ignore' }] }], 60);
    const agent = await startAgent(n, ['--shutdown-guard', '--shutdown-group', '0:40']);
    const lock = await n.bus.waitFor(podctlLock, 15_000);
    const from = n.bus.events.length;
    n.bus.send('shutdown');
    const deadline = Date.now() + 20_000;
    while ((await lastShutdown(n)).record?.state !== 'draining' && Date.now() < deadline) await sleep(100);
    agent.child.kill('SIGKILL');
    await agent.exited;
    const released = await n.bus.waitFor((e) => e.event === 'release' && e.pid === lock.pid, 15_000, from);
    const poweroff = await n.bus.waitFor((e) => e.event === 'poweroff', 15_000, from);
    // logind went on when the lock died, long before its 60 s
    expect(poweroff.why).toBe('released');
    expect(poweroff.at - released.at).toBeLessThan(5);
    const last = await lastShutdown(n);
    expect(last.completed).toBe(false);
    expect(last.record).toMatchObject({ state: 'draining' });
    expect(outcomeOf(last.record!, 'slow')).toBe('pending');
    // nothing half-written: every file in the folder is a whole record or the guard's state
    const folder = path.join(n.stateDir, 'shutdowns');
    for (const name of readdirSync(folder)) {
      expect(name).toMatch(/\.json$|^guard\.state$|^\.tmp$/);
      if (name.endsWith('.json')) expect(() => JSON.parse(readFileSync(path.join(folder, name), 'utf8'))).not.toThrow();
    }
    const text = await podctl(['status', '--last-shutdown', '--state-dir', n.stateDir]);
    expect(text.stdout).toMatch(/the guard \(pid \d+\) ended before its drain did/);
  });

  it('SIGTERM: a plain stop drains nothing; during a shutdown logind did not announce it drains within the stop timeout', async () => {
    const n = await node([{ name: 'web', priority: 0, terminationGracePeriodSeconds: 30 }], 30);
    const plain = await startAgent(n, ['--shutdown-guard']);
    await n.bus.waitFor(podctlLock, 15_000);
    plain.child.kill('SIGTERM');
    expect(await plain.exited).toBe(0);
    expect((await lastShutdown(n)).record).toBeNull();
    expect(n.sim.state.journal().filter((r) => r.kind === 'signal')).toEqual([]);

    const from = n.bus.events.length;
    const agent = await startAgent(n, ['--shutdown-guard', '--shutdown-stop-timeout', '20s']);
    await n.bus.waitFor(podctlLock, 15_000, from);
    n.bus.send('reboot-job');
    await n.bus.waitFor((e) => e.event === 'reboot-job', 10_000, from);
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
    expect(agent.stderr()).toMatch(/stopped while systemd starts reboot\.target and logind announced nothing: draining within the stop timeout \(20s\)/);
    const last = await lastShutdown(n);
    expect(last.record).toMatchObject({ trigger: 'sigterm', state: 'done', windowMs: 20_000 });
    expect(outcomeOf(last.record!, 'web')).toBe('stopped');
  });

  it("with an API server: the pods it stopped get the kubelet's node-shutdown status, as the agent's own RBAC allows", async () => {
    const server = await startKubeApiServer();
    cleanups.push(() => server.stop());
    const token = server.addAgent({ node: 'node-7' });
    server.installNodeRestriction(); // the agent writes only while its node restriction is in force
    const n = await node([{ name: 'api-web', namespace: 'web', uid: 'uid-api-web', priority: 0, terminationGracePeriodSeconds: 30 }], 30);
    server.addPod({ metadata: { name: 'api-web', namespace: 'web', uid: 'uid-api-web' }, spec: { nodeName: 'node-7', containers: [{ name: 'main' }] }, status: { phase: 'Running' } });
    const kubeconfig = writeKubeconfig(dir, server.port, 't', token, 'kubeconfig-api');
    await startAgent(n, ['--shutdown-guard', '--shutdown-group', '0:5', '--kubeconfig', kubeconfig, '--node', 'node-7']);
    await n.bus.waitFor(podctlLock, 15_000);
    const from = n.bus.events.length;
    n.bus.send('shutdown');
    const poweroff = await n.bus.waitFor((e) => e.event === 'poweroff', 30_000, from);
    expect(poweroff.why).toBe('released');
    expect(outcomeOf((await lastShutdown(n)).record!, 'api-web')).toBe('stopped');
    expect(server.getPod('web', 'api-web')?.status).toMatchObject({
      phase: 'Failed',
      reason: 'Terminated',
      message: 'Pod was terminated in response to imminent node shutdown.',
      conditions: [expect.objectContaining({ type: 'DisruptionTarget', status: 'True' })],
    });
  });

  it('a lock lost without the guard letting go (its systemd-inhibit killed) is said and taken again; a second guard on the node refuses, naming it', async () => {
    const n = await node([{ name: 'web', priority: 0, terminationGracePeriodSeconds: 30 }], 30);
    const agent = await startAgent(n, ['--shutdown-guard']);
    const first = await n.bus.waitFor(podctlLock, 15_000);
    const from = n.bus.events.length;
    process.kill(first.pid!, 'SIGKILL');
    await n.bus.waitFor((e) => e.event === 'release' && e.pid === first.pid, 15_000, from);
    const again = await n.bus.waitFor(podctlLock, 15_000, from);
    expect(again.pid).not.toBe(first.pid);
    expect(agent.stderr()).toMatch(/logind's lock was lost \(systemd-inhibit ended \(SIGKILL\)\); taking it again/);

    // a second guard on the node (another state dir: the unit beside the DaemonSet's agent) refuses, naming the holder
    const second = await podctl(['agent', '--shutdown-guard', '--runtime-endpoint', n.sim.endpoint, '--state-dir', `${n.stateDir}-second`], {
      DBUS_SYSTEM_BUS_ADDRESS: n.bus.address,
    });
    expect(second.code).toBe(2);
    expect(second.stderr.trim().split('\n')).toHaveLength(1);
    expect(second.stderr).toContain(`another podctl shutdown guard holds logind's delay lock (pid ${again.pid}): a node runs one guard`);
  });

  it('refuses bad flags and an unreachable bus before anything happens: exit 2, one line', async () => {
    const n = await node([], 5);
    const [orphanFlag, noBus, none] = await Promise.all([
      podctl(['agent', '--shutdown-group', '0:5', ...n.common]),
      podctl(['agent', '--shutdown-guard', ...n.common], { DBUS_SYSTEM_BUS_ADDRESS: `unix:path=${path.join(dir, 'no-bus')}` }),
      podctl(['status', '--last-shutdown', '--state-dir', path.join(dir, 'empty-state')]),
    ]);
    expect(orphanFlag.code).toBe(2);
    expect(orphanFlag.stderr.trim().split('\n')).toHaveLength(1);
    expect(orphanFlag.stderr).toMatch(/the --shutdown-\* budgets need --shutdown-guard/);
    expect(noBus.code).toBe(2);
    expect(noBus.stderr).toMatch(/--shutdown-guard: .*ENOENT/);
    expect(none.code).toBe(4);
    expect(none.stderr).toMatch(/no guarded shutdown recorded/);
  });
});
