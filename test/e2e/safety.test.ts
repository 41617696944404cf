/**
 * The safety rules end to end (docs/operator-guide.md#safety-rules): the built CLI, fresh state dirs,
 * the real containerd. Each test checks what the runtime did, not only what podctl said.
 *
 * - (sync-known's rules are in safety-sync-known.test.ts, on a node of its own);
 * - an empty desired list is refused (exit 2, naming --yes) and nothing is stopped;
 * - --dry-run changes nothing and predicts what the real run then does;
 * - destructive scopes need --yes without a terminal; evict refuses static pods without --force;
 * - --grace never lengthens a pod's own grace, and the result shows the grace used;
 * - a wait that ends early (timeout, SIGINT) hands the pod to a background driver whose PID is
 *   shown and which really finishes the termination.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { describeContainerd } from './support/env.js';
import { useContainerd } from './support/context.js';
import { collect, requireBuild, runPodctl, spawnPodctl } from './support/cli.js';
import { exitInfo, firstSigterm } from './support/observe.js';
import type { RealPod } from './support/pods.js';
import { alive } from '../support/process.js';
import { until } from '../support/wait.js';

interface KillJson {
  status: string;
  dryRun: boolean;
  pods: { uid: string; outcome: string; gracePeriodSeconds: number }[];
  handedOffTo?: { pid: number; log: string; uids: string[] } | null;
}

describeContainerd(import.meta.url, 'safety rules against containerd', () => {
  const node = useContainerd();
  let stateDir: string;
  const drivers: number[] = [];

  beforeAll(() => requireBuild());
  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-safety-'));
  });
  afterEach(async () => {
    for (const pid of drivers.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await rm(stateDir, { recursive: true, force: true });
  });

  const podctl = (args: string[], env?: Record<string, string>) => runPodctl(args, { endpoint: `unix://${node.socket}`, stateDir, timeoutMs: 60_000, ...(env ? { env } : {}) });
  const running = async (pod: RealPod): Promise<boolean> => (await exitInfo(node.cri, pod.containers[0]!.id)).state === 'running';

  it('an empty desired list is refused: exit 2, one line naming --yes, nothing stopped', async () => {
    const pod = await node.pods.create({ name: 'bystander' });
    const empty = join(stateDir, 'empty.json');
    await writeFile(empty, '{"kind":"PodList","items":[]}');
    const run = await podctl(['sync-known', '--desired', empty]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/empty.*--yes/);
    expect(await running(pod)).toBe(true);
  });

  it("kill --dry-run stops nothing, writes nothing, and has the real result's shape", async () => {
    const pod = await node.pods.create({ name: 'dry', terminationGracePeriodSeconds: 1 });
    const plan = await podctl(['kill', `${pod.namespace}/${pod.name}`, '--dry-run', '--json']);
    expect(plan.code, plan.stderr).toBe(0);
    const planned = JSON.parse(plan.stdout) as KillJson;
    expect(planned).toMatchObject({ status: 'planned', dryRun: true, pods: [{ uid: pod.uid, outcome: 'planned', gracePeriodSeconds: 1 }] });
    expect(await running(pod)).toBe(true);
    expect(existsSync(join(stateDir, 'pods', `${pod.uid}.ckpt`))).toBe(false);

    const real = JSON.parse((await podctl(['kill', `${pod.namespace}/${pod.name}`, '--json'])).stdout) as KillJson;
    // every field of the result is there in both (null where it has no value, never absent)
    expect(Object.keys(planned).sort()).toEqual(Object.keys(real).sort());
    expect(Object.keys(planned.pods[0]!).sort()).toEqual(expect.arrayContaining(['gracePeriodSeconds', 'name', 'namespace', 'outcome', 'uid']));
    expect(real.pods[0]?.outcome).toBe('terminated');
    // where the dry run was checked for a checkpoint is where the real kill wrote one
    expect(existsSync(join(stateDir, 'pods', `${pod.uid}.ckpt`))).toBe(true);
  });

  it('a static pod is not killed without --yes when there is no terminal; evict refuses it without --force', async () => {
    const staticPod = await node.pods.create({ name: 'scheduler', namespace: 'kube-system', configSource: 'file', terminationGracePeriodSeconds: 1 });
    const ref = `${staticPod.namespace}/${staticPod.name}`;
    const refused = await podctl(['kill', ref]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/static.*--yes/);
    const evict = await podctl(['evict', ref, '--yes']);
    expect(evict.code).toBe(2);
    expect(evict.stderr).toMatch(/evict refuses static.*--force/);
    expect(await running(staticPod)).toBe(true);

    const confirmed = await podctl(['kill', ref, '--yes', '--json']);
    expect(confirmed.code, confirmed.stderr).toBe(0);
    expect(await running(staticPod)).toBe(false);
  });

  it('--grace 100 on a pod whose own grace is 3 s uses 3 s, and says so', async () => {
    const pod = await node.pods.create({ name: 'short', terminationGracePeriodSeconds: 3, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const run = await podctl(['kill', `${pod.namespace}/${pod.name}`, '--grace', '100', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as KillJson;
    expect(result.pods[0]?.gracePeriodSeconds).toBe(3);
    const exit = await exitInfo(node.cri, pod.containers[0]!.id);
    const termToKill = exit.finishedAt! - (await firstSigterm(pod.containers[0]!))!.time;
    expect(termToKill).toBeGreaterThanOrEqual(2_500);
    expect(termToKill).toBeLessThan(6_000);
  });

  it('a kill that times out hands the pod to a background driver (PID shown) which finishes it', async () => {
    const pod = await node.pods.create({ name: 'slow', terminationGracePeriodSeconds: 5, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const run = await podctl(['kill', `${pod.namespace}/${pod.name}`, '--timeout', '1s', '--json']);
    expect(run.code).toBe(3);
    const result = JSON.parse(run.stdout) as KillJson;
    expect(result.pods[0]?.outcome).toBe('timeout');
    const driver = result.handedOffTo?.pid;
    expect(driver).toBeGreaterThan(0);
    drivers.push(driver!);
    expect(run.stderr).toContain(`handed to background podctl pid ${driver}`);
    expect(alive(driver!)).toBe(true);
    // the driver owns the pod (status shows it) and really stops it, then exits
    await until(
      'the driver owns the pod',
      async () => {
        const status = await podctl(['status', '--uid', pod.uid, '-o', 'json']);
        return status.stdout.includes(`"ownerPid": ${driver}`) || status.stdout.includes(`"ownerPid":${driver}`) || !(await running(pod));
      },
      { timeoutMs: 10_000, everyMs: 100 },
    );
    await until('the driver stopped the container', async () => !(await running(pod)), { timeoutMs: 20_000, everyMs: 100 });
    expect((await exitInfo(node.cri, pod.containers[0]!.id)).exitCode).toBe(137);
    await until('the driver exited after the pod terminated', async () => !alive(driver!), { timeoutMs: 20_000, everyMs: 100 });
  });

  it('SIGINT during a kill hands the pod on (exit 130, PID shown); termination really continues', async () => {
    const pod = await node.pods.create({ name: 'sigint', terminationGracePeriodSeconds: 4, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const started = performance.now();
    const child = spawnPodctl(['kill', `${pod.namespace}/${pod.name}`, '--json'], { endpoint: `unix://${node.socket}`, stateDir });
    const done = collect(child, 60_000, started);
    await until('SIGTERM reached the container', async () => (await firstSigterm(pod.containers[0]!)) !== undefined, { timeoutMs: 15_000, everyMs: 100 });
    child.kill('SIGINT');
    const run = await done;
    expect(run.code).toBe(130);
    const result = JSON.parse(run.stdout) as KillJson;
    expect(result.status).toBe('interrupted');
    const driver = result.handedOffTo?.pid;
    expect(driver).toBeGreaterThan(0);
    drivers.push(driver!);
    expect(run.stderr).toContain(`pid ${driver}`);
    await until('the driver stopped the container', async () => !(await running(pod)), { timeoutMs: 20_000, everyMs: 100 });
  });

  it('drain interrupted prints its partial per-pod result as JSON and hands on what still terminates', async () => {
    const app = `drain-${Date.now().toString(36)}`;
    const pod = await node.pods.create({ name: 'drained', labels: { app }, terminationGracePeriodSeconds: 4, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const child = spawnPodctl(['drain', '-l', `app=${app}`, '--grace-period', '10', '--critical-grace-period', '2', '--yes', '--json'], { endpoint: `unix://${node.socket}`, stateDir });
    const done = collect(child, 60_000);
    await until('SIGTERM reached the container', async () => (await firstSigterm(pod.containers[0]!)) !== undefined, { timeoutMs: 15_000, everyMs: 100 });
    child.kill('SIGINT');
    const run = await done;
    expect(run.code).toBe(130);
    const result = JSON.parse(run.stdout) as { status: string; groups: { pods: { uid: string; outcome: string }[] }[]; handedOffTo?: { pid: number } };
    expect(result.status).toBe('interrupted');
    expect(result.groups.flatMap((g) => g.pods)).toEqual([expect.objectContaining({ uid: pod.uid, outcome: 'interrupted' })]);
    expect(result.handedOffTo?.pid).toBeGreaterThan(0);
    drivers.push(result.handedOffTo!.pid);
    await until('the driver stopped the container', async () => !(await running(pod)), { timeoutMs: 20_000, everyMs: 100 });
  });
});
