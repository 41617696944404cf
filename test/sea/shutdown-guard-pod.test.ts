/**
 * The shutdown guard inside the DaemonSet: dist/podctl-image.oci.tar imported into the test
 * containerd and `podctl agent --shutdown-guard` run *as a pod through CRI* as deploy/'s DaemonSet
 * with the component deploy/optional/shutdown-guard declares it (daemonset-pod.ts translates the
 * manifest: root without capabilities, seccomp, read-only root, host PID; the component's
 * DBUS_SYSTEM_BUS_ADDRESS and the bus directory mounted read-only where that address points). The
 * "host's" system bus is a real dbus-daemon with the suite's stand-in logind on it.
 *
 * Asserted from outside the pod: logind's ListInhibitors lists the guard's delay lock, held by the
 * image's own systemd-inhibit (a process in the pod's mount namespace); a second guard on the node
 * (the systemd unit's form, host-side) refuses in one line, whether it shares the state dir or not;
 * on PrepareForShutdown(true) the pod's guard drains the node's pods in their groups (the one that
 * ignores SIGTERM killed at its group's end), releases the lock before logind's delay, never stops
 * its own pod, and its report is read host-side afterwards.
 */
import { mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { Logind } from '../../src/services/shutdown/logind.js';
import { describeContainerd } from '../e2e/support/env.js';
import { useContainerd } from '../e2e/support/context.js';
import { requireBuild, runPodctl } from '../e2e/support/cli.js';
import { exitInfo } from '../e2e/support/observe.js';
import { removeSandbox } from '../e2e/support/pods.js';
import { logindBusMissing, startLogindBus, type LogindBus } from '../support/logind-bus.js';
import { guardDaemonSet } from '../deploy/shutdown-guard-component.js';
import { importImage, noImage, removeImage, runAgentPod, sharedKubeletRoot } from './daemonset-pod.js';
import { until } from '../support/wait.js';

if (noImage && process.env.PODCTL_REQUIRE_SEA === '1') throw new Error(`shutdown guard pod: PODCTL_REQUIRE_SEA=1 but ${noImage}`);
const noBus = logindBusMissing();
if (noBus && process.env.CI === 'true') throw new Error(`test/sea/shutdown-guard-pod.test.ts: ${noBus}`);
const skipReason = noImage ?? noBus;
if (skipReason) console.warn(`${'#'.repeat(78)}\n# SHUTDOWN GUARD POD SKIPPED: test/sea/shutdown-guard-pod.test.ts\n# ${skipReason}\n${'#'.repeat(78)}`);

/** The shutdown guard's DaemonSet pod template (deploy/'s DaemonSet with deploy/optional/shutdown-guard). */
function guardTemplate() {
  const ds = guardDaemonSet();
  return { spec: ds.spec.template.spec, container: ds.spec.template.spec.containers[0] };
}

describeContainerd(import.meta.url, 'podctl agent --shutdown-guard as a pod from the image', () => {
  const node = useContainerd();
  let bus: LogindBus | undefined;
  let sandboxId = '';
  let scratch = '';
  let stateDir = '';
  let kubelet: { pods: string; release: () => void } | undefined;

  beforeAll(() => {
    if (skipReason) return;
    requireBuild();
    importImage(node.socket);
    scratch = mkdtempSync(join(tmpdir(), 'podctl-guard-pod-'));
    stateDir = join(scratch, 'state');
    kubelet = sharedKubeletRoot(join(scratch, 'kubelet'));
  }, 180_000);
  afterEach(async () => {
    if (sandboxId) await removeSandbox(node.cri, sandboxId).catch(() => undefined);
    await bus?.close();
  });
  afterAll(() => {
    if (skipReason) return;
    removeImage(node.socket);
    kubelet?.release();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it.skipIf(skipReason !== undefined)(
    "holds logind's lock with the image's systemd-inhibit through the mounted bus; a second guard refuses; on PrepareForShutdown it drains and releases",
    async () => {
      const web = await node.pods.create({ name: 'pod-guard-web', terminationGracePeriodSeconds: 30 });
      const stubborn = await node.pods.create({ name: 'pod-guard-stubborn', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', mode: 'ignore' }] });
      bus = await startLogindBus({ delaySeconds: 40 });
      // the component's budgets made short (the last of a repeated flag wins): 3 s regular, 3 s critical
      const pod = await runAgentPod(node, {
        uid: `guard-${process.pid}-${Date.now().toString(36)}`,
        template: guardTemplate(),
        hostDirs: { state: stateDir, 'kubelet-pods': kubelet!.pods, tmp: join(scratch, 'tmp'), 'system-bus': bus.dir },
        extraArgs: ['--shutdown-grace-period=6', '--shutdown-critical-grace-period=3', '--interval', '1s', '--metrics-addr', 'none', '--kubelet-healthz', '127.0.0.1:1'],
      });
      sandboxId = pod.sandboxId;
      const lock = await bus
        .waitFor((e) => e.event === 'inhibit' && e.who === 'podctl', 60_000)
        .catch((error: Error) => {
          throw new Error(`${error.message}\nthe agent pod's log: ${pod.log().slice(-1_500)}`);
        });

      // what logind lists: a delay lock on shutdown, held by systemd-inhibit from the image (in the pod's mount namespace)
      const logind = await Logind.connect(bus.address);
      try {
        const held = await logind.listInhibitors();
        expect(held).toEqual([expect.objectContaining({ who: 'podctl', mode: 'delay', what: ['shutdown'], uid: 0, pid: lock.pid })]);
      } finally {
        logind.close();
      }
      expect(readFileSync(`/proc/${lock.pid}/cmdline`, 'utf8').split('\0')[0]).toBe('systemd-inhibit');
      expect(readlinkSync(`/proc/${lock.pid}/ns/mnt`)).not.toBe(readlinkSync('/proc/self/ns/mnt'));
      await until('the guard says it holds the lock', () => /holding logind's delay lock on shutdown/.test(pod.log()), { timeoutMs: 15_000, everyMs: 100 });

      // the unit's form beside it: refused in one line, on the same state dir and on another
      const endpoint = `unix://${node.socket}`;
      const env = { DBUS_SYSTEM_BUS_ADDRESS: bus.address };
      const guardArgs = ['agent', '--shutdown-guard', '--metrics-addr', 'none', '--kubelet-healthz', '127.0.0.1:1'];
      const sameDir = await runPodctl(guardArgs, { endpoint, stateDir, env, timeoutMs: 30_000 });
      expect(sameDir.code).not.toBe(0);
      expect(sameDir.stderr.trim().split('\n')).toHaveLength(1);
      expect(sameDir.stderr).toMatch(/another podctl agent \(pid \d+\) serves state dir .*a node runs one shutdown guard: the podctl DaemonSet's agent or the podctl-shutdown-guard unit, not both/);
      const otherDir = mkdtempSync(join(tmpdir(), 'podctl-guard-unit-'));
      try {
        const second = await runPodctl(guardArgs, { endpoint, stateDir: otherDir, env, timeoutMs: 30_000 });
        expect(second.code).toBe(2);
        expect(second.stderr.trim().split('\n')).toHaveLength(1);
        expect(second.stderr).toContain(`another podctl shutdown guard holds logind's delay lock (pid ${lock.pid}): a node runs one guard`);
      } finally {
        rmSync(otherDir, { recursive: true, force: true });
      }
      expect(bus.events.filter((e) => e.event === 'inhibit' && e.who === 'podctl')).toHaveLength(1);

      // the shutdown: drained in the groups, the lock let go before logind's 40 s
      const from = bus.events.length;
      bus.send('shutdown');
      const poweroff = await bus.waitFor((e) => e.event === 'poweroff', 60_000, from);
      expect(poweroff.why, pod.log().slice(-1_500)).toBe('released');
      expect(poweroff.waitedMs).toBeLessThan(35_000);
      expect(bus.events.slice(from).some((e) => e.event === 'release' && e.pid === lock.pid)).toBe(true);
      expect((await exitInfo(node.cri, stubborn.containers[0]!.id)).exitCode).toBe(137);
      expect((await exitInfo(node.cri, web.containers[0]!.id)).state).not.toBe('running');
      // its own pod was not drained
      expect((await node.cri.listPodSandbox({ id: sandboxId }))[0]?.state).toBe(0); // SANDBOX_READY

      const report = await runPodctl(['status', '--last-shutdown', '-o', 'json'], { endpoint, stateDir });
      expect(report.code, report.stderr).toBe(0);
      const last = JSON.parse(report.stdout) as { record: { state: string; trigger: string; pods: { name: string; outcome: string }[] } };
      expect(last.record).toMatchObject({ state: 'done', trigger: 'logind' });
      expect(Object.fromEntries(last.record.pods.map((p) => [p.name, p.outcome]))).toEqual({ [web.name]: 'stopped', [stubborn.name]: 'killed' });
    },
    240_000,
  );
});
