/**
 * The store's crash scenario against a real containerd: a `podctl kill` process is SIGKILLed in the
 * middle of a termination; containerd abandons the StopContainer it was serving, so the pod stays
 * stuck with a SIGTERM-ignoring container running past its grace. The next `podctl sync-known`
 * takes the dead owner's pod over from the checkpoint and completes the kill, with the remembered
 * grace (3 s), never the pod's own (30 s).
 *
 * Runs on a node of its own: sync-known acts on every pod of the runtime it is pointed at.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeContainerd } from './support/env.js';
import { collect, requireBuild, runPodctl, spawnPodctl } from './support/cli.js';
import { sleep } from './support/node.js';
import { usePrivateNode } from './support/context.js';
import { exitInfo, firstSigterm, sandboxReady } from './support/observe.js';
import { waitFor } from '../support/wait.js';

interface StatusJson {
  pods: { uid: string; state: string; ownerPid: number | null; ownerAlive: boolean | null }[];
}

describeContainerd(import.meta.url, 'podctl killed mid-termination, recovered by sync-known', () => {
  beforeAll(() => requireBuild());
  const node = usePrivateNode('crash');
  let stateDir: string;

  beforeAll(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-crash-state-'));
  });
  afterAll(async () => {
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
  });

  it('a kill whose podctl process is SIGKILLed is completed by the next sync-known', async () => {
    const options = { endpoint: `unix://${node.socket}`, stateDir };
    const real = await node.pods.create({
      name: 'crash',
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'stubborn', mode: 'ignore' }],
    });
    const [stubborn] = real.containers;

    const killer = spawnPodctl(['kill', `${real.namespace}/${real.name}`, '--grace', '3', '--timeout', '60s'], options);
    const killerDone = collect(killer, 60_000);
    const sigterm = await waitFor('the SIGTERM', () => firstSigterm(stubborn!), { timeoutMs: 10_000, everyMs: 25 });
    await waitFor(
      'the checkpoint to say terminating',
      async () => {
        const run = await runPodctl(['status', '--uid', real.uid, '-o', 'json'], options);
        const pod = (JSON.parse(run.stdout) as StatusJson).pods.find((p) => p.uid === real.uid);
        return pod?.state === 'terminating' && pod.ownerPid === killer.pid ? pod : undefined;
      },
      { timeoutMs: 10_000, everyMs: 25 },
    );
    killer.kill('SIGKILL');
    expect((await killerDone).signal).toBe('SIGKILL');

    // past the 3 s grace, nothing kills the container: the termination is stuck
    await sleep(Math.max(0, sigterm.time + 4_500 - Date.now()));
    expect(await exitInfo(node.cri, stubborn!.id)).toMatchObject({ state: 'running' });
    const stuck = await runPodctl(['status', '--uid', real.uid, '-o', 'json'], options);
    expect((JSON.parse(stuck.stdout) as StatusJson).pods[0]).toMatchObject({ state: 'terminating', ownerAlive: false });

    const recoveryStarted = Date.now();
    const recovery = await runPodctl(['sync-known', '--desired-from', 'runtime', '--json'], { ...options, timeoutMs: 60_000 });
    expect(recovery.code).toBe(0);
    const result = JSON.parse(recovery.stdout) as { resumed: { uid: string }[]; workers: { uid: string; state: string }[] };
    expect(result.resumed.map((p) => p.uid)).toContain(real.uid);
    expect(result.workers.find((w) => w.uid === real.uid)?.state).toBe('terminated');

    const exit = await exitInfo(node.cri, stubborn!.id);
    expect(exit).toMatchObject({ state: 'exited', exitCode: 137 });
    // the remembered grace (3 s), not the pod's 30 s
    expect(exit.finishedAt! - recoveryStarted).toBeLessThan(3_000 + 3_000);
    expect(await sandboxReady(node.cri, real.sandboxId)).toBe(false);

    const after = await runPodctl(['status', '--uid', real.uid, '-o', 'json'], options);
    expect(after.code).toBe(0);
    expect((JSON.parse(after.stdout) as StatusJson).pods[0]?.state).toMatch(/^(terminated|finished)$/);
  }, 120_000);
});
