/**
 * `podctl agent --shutdown-guard` on the real containerd: a private system bus (a real dbus-daemon)
 * with the suite's stand-in logind, `systemd-inhibit` holding the guard's lock, and real pods. On
 * PrepareForShutdown the guard stops the pods in their groups (the static pod last), the runtime
 * kills the one that ignores SIGTERM at the end of its group's budget, the lock is released before
 * logind's delay ends, and `podctl status --last-shutdown` tells each pod's fate afterwards.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { describeContainerd } from './support/env.js';
import { useContainerd } from './support/context.js';
import { PODCTL_BIN, requireBuild, runPodctl } from './support/cli.js';
import { exitInfo, sigterms } from './support/observe.js';
import { logindBusMissing, startLogindBus, type LogindBus } from '../support/logind-bus.js';

const missing = logindBusMissing();
if (missing && process.env.CI === 'true') throw new Error(`test/e2e/shutdown-guard.test.ts: ${missing}`);
if (missing) process.stderr.write(`[e2e] ${missing}: the shutdown guard's containerd test is SKIPPED\n`);

describeContainerd(import.meta.url, 'podctl agent --shutdown-guard against containerd', () => {
  const node = useContainerd();
  let stateDir: string;
  let bus: LogindBus | undefined;
  let agent: ChildProcess | undefined;

  beforeAll(() => requireBuild());
  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-guard-'));
  });
  afterEach(async () => {
    if (agent && agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
    await bus?.close();
    await rm(stateDir, { recursive: true, force: true });
  });

  it.skipIf(missing !== undefined)('drains real pods in their groups within logind’s delay, releases the lock, and the report tells each pod’s fate', async () => {
    const web = await node.pods.create({ name: 'guard-web', terminationGracePeriodSeconds: 30 });
    const stubborn = await node.pods.create({ name: 'guard-stubborn', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', mode: 'ignore' }] });
    const manifest = await node.pods.create({ name: 'guard-static', configSource: 'file', terminationGracePeriodSeconds: 30 });
    bus = await startLogindBus({ delaySeconds: 40 });
    const endpoint = `unix://${node.socket}`;
    agent = spawn(
      process.execPath,
      [
        PODCTL_BIN,
        'agent',
        '--shutdown-guard',
        '--shutdown-group',
        '0:4',
        '--shutdown-group',
        '2000000000:4',
        '--metrics-addr',
        'none',
        '--kubelet-healthz',
        '127.0.0.1:1',
        '--runtime-endpoint',
        endpoint,
        '--state-dir',
        stateDir,
      ],
      { env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', DBUS_SYSTEM_BUS_ADDRESS: bus.address }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    agent.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    await bus.waitFor((e) => e.event === 'inhibit' && e.who === 'podctl', 30_000);

    const from = bus.events.length;
    bus.send('shutdown');
    const poweroff = await bus.waitFor((e) => e.event === 'poweroff', 60_000, from);
    expect(poweroff.why, stderr).toBe('released');
    expect(poweroff.waitedMs).toBeLessThan(35_000);

    // what containerd did: the stubborn container was killed at the end of its group's 4 s
    expect((await exitInfo(node.cri, stubborn.containers[0]!.id)).exitCode).toBe(137);
    expect((await exitInfo(node.cri, web.containers[0]!.id)).state).not.toBe('running');
    // the static pod is critical: its SIGTERM came after the regular group's
    const staticTerm = (await sigterms(manifest.containers[0]!))[0];
    const webTerm = (await sigterms(web.containers[0]!))[0];
    expect(staticTerm && webTerm && staticTerm.time >= webTerm.time).toBe(true);

    const report = await runPodctl(['status', '--last-shutdown', '-o', 'json'], { endpoint, stateDir });
    expect(report.code).toBe(0);
    const last = JSON.parse(report.stdout) as { record: { state: string; pods: { name: string; outcome: string; graceSeconds: number }[] } };
    expect(last.record.state).toBe('done');
    const fate = Object.fromEntries(last.record.pods.map((p) => [p.name, p.outcome]));
    expect(fate).toMatchObject({ [web.name]: 'stopped', [stubborn.name]: 'killed', [manifest.name]: 'stopped' });
    expect(last.record.pods.find((p) => p.name === stubborn.name)?.graceSeconds).toBe(4);
  });
});
