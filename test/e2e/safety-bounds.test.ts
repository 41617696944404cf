/**
 * Issue "safe by default", point 3 and 5, end to end on the real containerd (the built CLI, fresh
 * state dirs): grace, budgets and durations past their documented maximum (a year) are usage errors
 * before anything happens; a checkpoint on disk whose grace is out of range is quarantined with one
 * warning, and status, drain and sync-known go on (no crash, no stack); `--grace` on a pod whose own
 * grace is shorter uses (and shows) the pod's; bad paths are refused with one line.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { MAX_GRACE_SECONDS } from '../../src/engine/grace.js';
import { encodeCheckpoint } from '../../src/store/format.js';
import { checkpointFor, statusFor } from '../store/support/fixtures.js';
import { describeContainerd } from './support/env.js';
import { useContainerd } from './support/context.js';
import { requireBuild, runPodctl } from './support/cli.js';
import { exitInfo } from './support/observe.js';
import type { RealPod } from './support/pods.js';

describeContainerd(import.meta.url, 'bounded grace and safe paths against containerd', () => {
  const node = useContainerd();
  let stateDir: string;

  beforeAll(() => requireBuild());
  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-bounds-'));
  });
  afterEach(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  const podctl = (args: string[]) => runPodctl(args, { endpoint: `unix://${node.socket}`, stateDir, timeoutMs: 60_000 });
  const running = async (pod: RealPod): Promise<boolean> => (await exitInfo(node.cri, pod.containers[0]!.id)).state === 'running';

  it('grace, budgets and durations past a year are exit 2 with one line naming the maximum; nothing is stopped', async () => {
    const pod = await node.pods.create({ name: 'bounded', terminationGracePeriodSeconds: 1 });
    const ref = `${pod.namespace}/${pod.name}`;
    const cases: [string[], RegExp][] = [
      [['kill', ref, '--grace', '99999999999999999999'], /--grace.*past the maximum of 8760h \(a year\)/],
      [['kill', ref, '--grace', String(MAX_GRACE_SECONDS + 1)], /--grace.*past the maximum of 8760h \(a year\)/],
      [['evict', ref, '--timeout', '99999999999999999999s'], /--timeout: .* past the maximum of 8760h/],
      [['drain', '--group', '0:100000000000000000000'], /--group.*past the maximum of 8760h \(a year\)/],
      [['drain', '--grace-period', '99999999999'], /--grace-period.*past the maximum of 8760h \(a year\)/],
    ];
    for (const [args, message] of cases) {
      const run = await podctl(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(run.stderr, args.join(' ')).toMatch(message);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
    expect(await running(pod)).toBe(true);
  });

  it('a checkpoint whose grace is out of range: readers report it and move nothing; the next writer quarantines it and the pod stays terminating at the lower bound', async () => {
    const pod = await node.pods.create({ name: 'poisoned', terminationGracePeriodSeconds: 1 });
    // a checkpoint of a dead writer that says this pod is terminating with a grace of 1e20 s
    const status = statusFor(pod.uid, { gracePeriod: 1e20 });
    const checkpoint = checkpointFor(pod.uid, { namespace: pod.namespace, name: pod.name, status, writerPid: 999_999, graceDeadline: Date.now() + 60_000 });
    await mkdir(join(stateDir, 'pods'), { recursive: true });
    const file = join(stateDir, 'pods', `${pod.uid}.ckpt`);
    await writeFile(file, encodeCheckpoint(checkpoint));

    const statusRun = await podctl(['status', '-o', 'json']);
    expect(statusRun.code, statusRun.stderr).toBe(0);
    expect(statusRun.stderr).toMatch(/kept terminating with grace 2s.*left in place \(read-only/);
    expect(statusRun.stderr).not.toMatch(/\n\s+at |Deadline is too far/);
    // a reader moves nothing
    expect(existsSync(file)).toBe(true);
    expect(existsSync(join(stateDir, 'quarantine')) ? readdirSync(join(stateDir, 'quarantine')) : []).toEqual([]);
    const row = (JSON.parse(statusRun.stdout) as { pods: { uid: string; state: string; gracePeriodSeconds: number | null }[] }).pods.find((p) => p.uid === pod.uid);
    // not resurrected as a plain runtime pod: still on its way out, with the lower bound of its grace
    expect(row?.state).toBe('terminating');
    expect(row?.gracePeriodSeconds).toBe(2);

    const drain = await podctl(['drain', '--dry-run', '--json']);
    expect(drain.code, drain.stderr).toBe(0);
    expect(existsSync(file)).toBe(true);
    // the runtime as the desired source would keep a resurrected pod running; this one is finished
    const sync = await podctl(['sync-known', '--desired-from', 'runtime', '--json']);
    expect(sync.code, sync.stderr).toBe(0);
    expect(readdirSync(join(stateDir, 'quarantine')).length).toBe(1);
    const deadline = Date.now() + 20_000;
    while ((await running(pod)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(await running(pod)).toBe(false);
  });

  it('--grace 100 on a pod whose own grace is 2 s uses 2 s and shows it', async () => {
    const pod = await node.pods.create({ name: 'own-grace', terminationGracePeriodSeconds: 2, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const run = await podctl(['kill', `${pod.namespace}/${pod.name}`, '--grace', '100']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`${pod.name}\\s+\\S+\\s+terminated\\s+2s\\s`));
  });

  it("--state-dir '' is exit 2 with one line; a relative --state-dir is resolved and shown", async () => {
    const empty = await runPodctl(['status'], { endpoint: `unix://${node.socket}`, stateDir: '', timeoutMs: 30_000 });
    expect(empty.code).toBe(2);
    expect(empty.stderr.trim().split('\n')).toHaveLength(1);
    expect(empty.stderr).toMatch(/--state-dir/);
  });
});
