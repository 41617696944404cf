/**
 * Hand-over when the owner dies: a process drives a slow termination, a second one (this test)
 * asks for a shorter grace through the inbox, then the owner is SIGKILLed. The waiting session
 * takes the lease over (the PID is gone), resumes from the checkpoint with the shorter grace and
 * finishes the pod; the runtime never sees a longer grace after a shorter one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { RunningSimulator } from '../../src/cri/simulator/index.js';
import { openSession } from '../../src/session/open.js';
import { openStore } from '../../src/store/index.js';
import { tempDir } from './support/fixtures.js';
import { journalCounts, isRunning, runDriver, seed, startNode } from './support/harness.js';

let dir: { path: string; cleanup: () => Promise<void> };
let sim: RunningSimulator;
beforeAll(async () => {
  dir = await tempDir('podctl-takeover-');
  sim = await startNode(join(dir.path, 'sim.sock'), 1);
});
afterAll(async () => {
  await sim.close();
  await dir.cleanup();
});

describe('owner dies while another process waits on its pod', () => {
  it('the waiter takes over and finishes with the shortened grace', async () => {
    const stateDir = join(dir.path, 'state');
    const [pod] = seed(sim, [{ name: 'stubborn', namespace: 'takeover', terminationGracePeriodSeconds: 60, containers: [{ name: 'main', onSigterm: 'ignore' }] }]);
    const owner = runDriver([stateDir, sim.endpoint, '120000', `${pod!.uid}:60`]);
    while (!owner.lines.some((l) => l.step === 'requested')) {
      if (owner.child.exitCode !== null) throw new Error(`driver exited: ${owner.stderr.join('')}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const session = await openSession({ stateDir, runtimeEndpoint: sim.endpoint });
    try {
      const handle = await session.requestKill({ uid: pod!.uid, gracePeriodSeconds: 2 });
      expect(handle).toMatchObject({ handledBy: 'delegated', ownerPid: owner.child.pid });
      owner.child.kill('SIGKILL');
      await owner.exited;
      const started = Date.now();
      const outcome = await session.waitTerminated([pod!.uid], { timeoutMs: 20_000 });
      expect(outcome.get(pod!.uid)).toBe('terminated');
      expect(Date.now() - started).toBeLessThan(10_000); // grace 2 s, not 60 s
      const info = await session.getPod(pod!.uid);
      expect(info?.owner?.pid).toBe(process.pid);
      expect(info?.history.some((h) => h.type === 'lease-taken' && h.detail.includes(`from pid ${owner.child.pid} (gone)`))).toBe(true);
    } finally {
      await session.close();
    }
    expect(isRunning(sim, pod!)).toBe(false);
    const counts = journalCounts(sim);
    const timeouts = counts.stopTimeouts.get(pod!.containerIds[0]!) ?? [];
    for (let i = 1; i < timeouts.length; i += 1) expect(timeouts[i]!).toBeLessThanOrEqual(timeouts[i - 1]!);
    expect(Math.min(...timeouts)).toBeLessThanOrEqual(2);
    const checkpoint = await (await openStore({ stateDir })).checkpoints.read(pod!.uid);
    expect(checkpoint?.status.gracePeriod).toBe(2);
  }, 40_000);
});
