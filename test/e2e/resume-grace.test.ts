/**
 * A crash mid-grace does not restart the grace: the stored termination deadline is authoritative on
 * resume. On the real containerd: a pod that ignores SIGTERM, grace 8 s; `podctl kill` is SIGKILLed
 * 3 s into the grace; `podctl sync-known` resumes the pod, and SIGTERM → SIGKILL (the container's
 * first SIGTERM to its exit) stays within grace + 2 s — not 3 s + a whole new grace.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { describeContainerd } from './support/env.js';
import { useContainerd } from './support/context.js';
import { collect, requireBuild, runPodctl, spawnPodctl } from './support/cli.js';
import { exitedInfo, firstSigterm } from './support/observe.js';
import { waitFor } from '../support/wait.js';

describeContainerd(import.meta.url, 'resume after a crash mid-grace (containerd)', () => {
  const node = useContainerd();
  let stateDir: string;

  beforeAll(() => requireBuild());
  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-resume-'));
  });
  afterEach(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  it('a kill SIGKILLed 3 s into an 8 s grace, resumed by sync-known: SIGTERM → SIGKILL within grace + 2 s', async () => {
    const grace = 8;
    const pod = await node.pods.create({ name: 'resume', terminationGracePeriodSeconds: grace, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const endpoint = `unix://${node.socket}`;
    const kill = spawnPodctl(['kill', `${pod.namespace}/${pod.name}`], { endpoint, stateDir });
    const killed = collect(kill, 30_000);
    const sigterm = await waitFor('the first SIGTERM', async () => firstSigterm(pod.containers[0]!), { timeoutMs: 15_000, everyMs: 50 });
    await new Promise((r) => setTimeout(r, 3_000));
    kill.kill('SIGKILL');
    expect((await killed).signal).toBe('SIGKILL');
    const resume = await runPodctl(['sync-known', '--desired-from', 'runtime', '--json'], { endpoint, stateDir, timeoutMs: 60_000 });
    expect(resume.code, resume.stderr).toBe(0);
    expect((JSON.parse(resume.stdout) as { resumed: { uid: string }[] }).resumed.map((p) => p.uid)).toEqual([pod.uid]);
    const exit = await exitedInfo(node.cri, pod.containers[0]!.id);
    expect(exit.exitCode).toBe(137);
    const termToKill = exit.finishedAt! - sigterm.time;
    console.info(`[figure] crash mid-grace: SIGTERM → SIGKILL ${termToKill} ms for a ${grace} s grace (podctl SIGKILLed 3 s in, resumed by sync-known)`);
    expect(termToKill).toBeGreaterThanOrEqual(grace * 1000 - 500);
    expect(termToKill).toBeLessThanOrEqual((grace + 2) * 1000);
  }, 90_000);

  it('a damaged checkpoint (one flipped bit) of a pod mid-grace: sync-known keeps it terminating and finishes it, not resurrects it', async () => {
    const grace = 8;
    const pod = await node.pods.create({ name: 'damaged', terminationGracePeriodSeconds: grace, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const endpoint = `unix://${node.socket}`;
    const kill = spawnPodctl(['kill', `${pod.namespace}/${pod.name}`], { endpoint, stateDir });
    const killed = collect(kill, 30_000);
    const sigterm = await waitFor('the first SIGTERM', async () => firstSigterm(pod.containers[0]!), { timeoutMs: 15_000, everyMs: 50 });
    await new Promise((r) => setTimeout(r, 1_000));
    kill.kill('SIGKILL');
    expect((await killed).signal).toBe('SIGKILL');
    // one flipped bit in the payload: the checksum no longer matches
    const file = join(
      stateDir,
      'pods',
      (await readdir(join(stateDir, 'pods'))).find((n) => n.startsWith(pod.uid))!,
    );
    const bytes = await readFile(file);
    bytes[bytes.length - 3] = bytes[bytes.length - 3]! ^ 0x01;
    await writeFile(file, bytes);
    // the runtime is the desired source: a resurrected (untracked) pod would be kept running
    const resume = await runPodctl(['sync-known', '--desired-from', 'runtime', '--json'], { endpoint, stateDir, timeoutMs: 60_000 });
    expect(resume.code, resume.stderr).toBe(0);
    // its fate: SIGKILLed at the end of its grace, not left running as a desired pod
    const exit = await exitedInfo(node.cri, pod.containers[0]!.id);
    expect(resume.stderr).toMatch(/checksum mismatch; kept terminating with grace \d+s/);
    expect(exit.exitCode).toBe(137);
    // and no longer than the grace it had: the stored deadline (or a shorter one) held
    expect(exit.finishedAt! - sigterm.time).toBeLessThanOrEqual((grace + 2) * 1000);
    expect((await readdir(join(stateDir, 'quarantine'))).some((n) => n.startsWith(pod.uid))).toBe(true);
  }, 90_000);
});
