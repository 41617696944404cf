/**
 * `podctl kill` end to end: the built CLI, a fresh state dir, the real containerd. What an operator
 * sees (exit code, JSON result, stderr) and what the runtime did (SIGTERM, SIGKILL after the grace).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { describeContainerd } from './support/env.js';
import { useContainerd } from './support/context.js';
import { requireBuild, runPodctl } from './support/cli.js';
import { exitInfo, firstSigterm, sandboxReady } from './support/observe.js';
import { waitFor } from '../support/wait.js';

describeContainerd(import.meta.url, 'podctl kill against containerd', () => {
  const node = useContainerd();
  let stateDir: string;

  beforeAll(() => requireBuild());
  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-cli-'));
  });
  afterEach(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  const podctl = (args: string[]) => runPodctl(args, { endpoint: `unix://${node.socket}`, stateDir, timeoutMs: 60_000 });

  it('kills a pod with --grace 2: exit 0, JSON outcome terminated, SIGTERM then SIGKILL ~2 s later', async () => {
    const real = await node.pods.create({ name: 'cli', containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const [stubborn] = real.containers;

    const run = await podctl(['kill', `${real.namespace}/${real.name}`, '--grace', '2', '--json']);
    expect(run.stderr).not.toMatch(/error/i);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as { status: string; pods: { uid: string; outcome: string; gracePeriodSeconds: number }[] };
    expect(result.status).toBe('done');
    expect(result.pods).toEqual([expect.objectContaining({ uid: real.uid, outcome: 'terminated', gracePeriodSeconds: 2 })]);

    const exit = await exitInfo(node.cri, stubborn!.id);
    expect(exit).toMatchObject({ state: 'exited', exitCode: 137 });
    const termToKill = exit.finishedAt! - (await firstSigterm(stubborn!))!.time;
    expect(termToKill).toBeGreaterThanOrEqual(1_800);
    expect(termToKill).toBeLessThan(4_000);
    expect(await sandboxReady(node.cri, real.sandboxId)).toBe(false);

    // a second process sees the result in the shared state dir
    const status = await podctl(['status', '--uid', real.uid, '-o', 'json']);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(real.uid);
  });

  it('kills by label selector every matching pod, and only those', async () => {
    const app = `sel-${Date.now().toString(36)}`;
    const [a, b] = await node.pods.createMany(2, { name: 'sel', labels: { app } });
    const bystander = await node.pods.create({ name: 'bystander', labels: { app: `${app}-other` } });

    const run = await podctl(['kill', '-n', a!.namespace, '-l', `app=${app}`, '--grace', '1', '--json']);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as { pods: { uid: string; outcome: string }[] };
    expect(result.pods.map((p) => p.uid).sort()).toEqual([a!.uid, b!.uid].sort());
    for (const real of [a!, b!]) {
      expect(await exitInfo(node.cri, real.containers[0]!.id)).toMatchObject({ state: 'exited', exitCode: 0 });
    }
    expect(await exitInfo(node.cri, bystander.containers[0]!.id)).toMatchObject({ state: 'running' });
  });

  it("a second `podctl kill --grace 1` shortens a first process's in-flight kill (grace 30)", async () => {
    const real = await node.pods.create({ name: 'shorten', terminationGracePeriodSeconds: 30, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const [stubborn] = real.containers;
    const ref = `${real.namespace}/${real.name}`;

    const first = podctl(['kill', ref, '--json']);
    await waitFor('the first SIGTERM', () => firstSigterm(stubborn!), { timeoutMs: 10_000, everyMs: 25 });
    const secondStarted = Date.now();
    const second = await podctl(['kill', ref, '--grace', '1', '--json']);
    const firstRun = await first;

    expect(second.code).toBe(0);
    expect(firstRun.code).toBe(0);
    const exit = await exitInfo(node.cri, stubborn!.id);
    expect(exit).toMatchObject({ state: 'exited', exitCode: 137 });
    // killed about a second after the shorter grace was asked for, not 30 s after the first SIGTERM
    expect(exit.finishedAt! - secondStarted).toBeLessThan(6_000);
    const firstResult = JSON.parse(firstRun.stdout) as { pods: { uid: string; outcome: string }[] };
    expect(firstResult.pods).toEqual([expect.objectContaining({ uid: real.uid, outcome: 'terminated' })]);
  }, 60_000);

  it('evict: the pod is stopped, then its containers and sandbox are removed from the runtime', async () => {
    const real = await node.pods.create({ name: 'evict', containers: [{ name: 'main', mode: 'default' }] });

    const run = await podctl(['evict', `${real.namespace}/${real.name}`, '--grace', '5', '--json']);
    expect(run.code).toBe(0);
    const [sandboxes, containers] = await Promise.all([
      node.cri.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': real.uid } }),
      node.cri.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': real.uid } }),
    ]);
    expect(containers).toEqual([]);
    expect(sandboxes).toEqual([]);
  }, 60_000);

  it('drain -l: ordinary pods first, the static (critical) pod last, each within its group budget', async () => {
    const app = `drain-${Date.now().toString(36)}`;
    const ordinary = await node.pods.create({ name: 'drain-app', labels: { app }, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const critical = await node.pods.create({ name: 'drain-static', labels: { app }, configSource: 'file', containers: [{ name: 'main', mode: 'default' }] });

    const run = await podctl(['drain', '-l', `app=${app}`, '--grace-period', '4', '--critical-grace-period', '2', '--yes', '--json']);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as { status: string; groups: { critical: boolean; budgetSeconds: number; pods: { uid: string; outcome: string }[] }[] };
    expect(result.status).toBe('done');
    const groupOf = (uid: string) => result.groups.find((g) => g.pods.some((p) => p.uid === uid));
    expect(groupOf(ordinary.uid)).toMatchObject({ critical: false, budgetSeconds: 2 });
    expect(groupOf(critical.uid)).toMatchObject({ critical: true, budgetSeconds: 2 });
    expect(result.groups.flatMap((g) => g.pods.map((p) => p.uid))).toHaveLength(2);

    const ordinaryExit = await exitInfo(node.cri, ordinary.containers[0]!.id);
    expect(ordinaryExit).toMatchObject({ state: 'exited', exitCode: 137 });
    const ordinarySigterm = await firstSigterm(ordinary.containers[0]!);
    const criticalSigterm = await firstSigterm(critical.containers[0]!);
    // As in the kubelet's node shutdown, the critical group starts once the ordinary group is done
    // or its budget (2 s) is spent. The ordinary pod ignores SIGTERM and its grace is the budget, so
    // both end together: the critical pod must not be asked before that budget has run out.
    expect(ordinarySigterm).toBeDefined();
    expect(criticalSigterm!.time).toBeGreaterThanOrEqual(ordinarySigterm!.time + 2000 - 150);
    expect(await exitInfo(node.cri, critical.containers[0]!.id)).toMatchObject({ state: 'exited', exitCode: 0 });
  }, 60_000);

  it('a pod that is not on the node: exit 4 and a one-line error', async () => {
    const run = await podctl(['kill', 'e2e/no-such-pod-here']);
    expect(run.code).toBe(4);
    const lines = run.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(/not found/);
    expect(run.stdout).toBe('');
  });

  it('an unreachable runtime: exit 1, one line naming the socket and the flag', async () => {
    const missing = join(stateDir, 'no-runtime.sock');
    const run = await runPodctl(['kill', 'e2e/anything', '--grace', '1'], { endpoint: `unix://${missing}`, stateDir, timeoutMs: 30_000 });
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(missing);
    expect(lines[0]).toContain('--runtime-endpoint');
    expect(lines[0]).not.toMatch(/\bat .+:\d+:\d+/); // no stack trace
  });
});
