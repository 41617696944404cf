/**
 * Lease ownership across PID namespaces on the real containerd: a `podctl kill` run as PID 1 of its
 * own PID namespace (`unshare --pid --fork --mount-proc`, as in a container) owns a pod that
 * ignores SIGTERM. A podctl on the host sees that owner alive and hands its shorter kill to it (the
 * pod is SIGKILLed by the owner's session, not taken over); once an owner dies, the host takes its
 * pod over and finishes it. Root only (unshare).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { describeContainerd } from './support/env.js';
import { useContainerd } from './support/context.js';
import { PODCTL_BIN, requireBuild, runPodctl } from './support/cli.js';
import { exitInfo, firstSigterm } from './support/observe.js';
import { waitFor } from '../support/wait.js';

const canUnshare = process.getuid?.() === 0 && spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true']).status === 0;

interface KillJson {
  pods: { handledBy: string; ownerPid?: number; outcome: string }[];
}

describeContainerd(import.meta.url, 'an owner in another PID namespace (containerd)', () => {
  const node = useContainerd();
  let stateDir: string;
  const owners: ChildProcess[] = [];

  beforeAll(() => requireBuild());
  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-pidns-'));
  });
  afterEach(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });
  afterAll(() => {
    for (const o of owners) o.kill('SIGKILL');
  });

  function ownerInNamespace(ref: string, endpoint: string): ChildProcess {
    const child = spawn(
      'unshare',
      [
        '--pid',
        '--fork',
        '--mount-proc',
        '--kill-child=SIGKILL',
        process.execPath,
        PODCTL_BIN,
        'kill',
        ref,
        '--grace',
        '600',
        '--timeout',
        '80s',
        '--runtime-endpoint',
        endpoint,
        '--state-dir',
        stateDir,
      ],
      { env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' }, stdio: 'ignore' },
    );
    owners.push(child);
    return child;
  }

  async function ownerSeen(ref: string, endpoint: string): Promise<{ ownerPid: number; ownerAlive: boolean }> {
    return waitFor(
      `${ref} terminating with an owner`,
      async () => {
        const run = await runPodctl(['status', ref, '--json'], { endpoint, stateDir });
        const row = (JSON.parse(run.stdout || '{"pods":[]}') as { pods: { state: string; ownerPid: number | null; ownerAlive: boolean | null }[] }).pods[0];
        return row?.state === 'terminating' && row.ownerPid !== null ? { ownerPid: row.ownerPid, ownerAlive: row.ownerAlive === true } : undefined;
      },
      { timeoutMs: 20_000, everyMs: 200 },
    );
  }

  it.skipIf(!canUnshare)(
    'the host hands its kill to the live owner in the other namespace; after that owner dies, it takes the pod over',
    async () => {
      const endpoint = `unix://${node.socket}`;
      const [owned, orphaned] = await Promise.all(
        ['pidns-owned', 'pidns-orphaned'].map((name) => node.pods.create({ name, terminationGracePeriodSeconds: 600, containers: [{ name: 'stubborn', mode: 'ignore' }] })),
      );
      const ownedRef = `${owned!.namespace}/${owned!.name}`;
      const orphanedRef = `${orphaned!.namespace}/${orphaned!.name}`;

      const first = ownerInNamespace(ownedRef, endpoint);
      const seen = await ownerSeen(ownedRef, endpoint);
      expect(seen.ownerAlive).toBe(true);
      expect(seen.ownerPid).not.toBe(first.pid);
      await waitFor('the first SIGTERM', async () => firstSigterm(owned!.containers[0]!), { timeoutMs: 15_000, everyMs: 50 });
      const kill = await runPodctl(['kill', ownedRef, '--grace', '1', '--json'], { endpoint, stateDir, timeoutMs: 60_000 });
      expect(kill.code, kill.stderr).toBe(0);
      const entry = (JSON.parse(kill.stdout) as KillJson).pods[0]!;
      expect(entry.handledBy).toBe('delegated');
      expect(entry.ownerPid).toBe(seen.ownerPid);
      expect(entry.outcome).toBe('terminated');
      expect((await exitInfo(node.cri, owned!.containers[0]!.id)).exitCode).toBe(137);

      const second = ownerInNamespace(orphanedRef, endpoint);
      expect((await ownerSeen(orphanedRef, endpoint)).ownerAlive).toBe(true);
      second.kill('SIGKILL');
      await waitFor(
        'the owner seen dead',
        async () => {
          const run = await runPodctl(['status', orphanedRef, '--json'], { endpoint, stateDir });
          const row = (JSON.parse(run.stdout || '{"pods":[]}') as { pods: { ownerAlive: boolean | null }[] }).pods[0];
          return row?.ownerAlive === false ? true : undefined;
        },
        { timeoutMs: 20_000, everyMs: 200 },
      );
      const takeOver = await runPodctl(['kill', orphanedRef, '--grace', '1', '--json'], { endpoint, stateDir, timeoutMs: 60_000 });
      expect(takeOver.code, takeOver.stderr).toBe(0);
      const taken = (JSON.parse(takeOver.stdout) as KillJson).pods[0]!;
      expect(taken.handledBy).toBe('local');
      expect(taken.outcome).toBe('terminated');
      expect((await exitInfo(node.cri, orphaned!.containers[0]!.id)).state).toBe('exited');
    },
    120_000,
  );
});
