/**
 * 8 podctl processes act on 50 overlapping pods at once: every pod is terminated exactly once (one
 * StopPodSandbox at the runtime), grace periods never grow (StopContainer timeouts per container
 * never increase), every checkpoint is valid and every request was consumed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readdir } from 'node:fs/promises';
import type { RunningSimulator, SimPodSpec } from '../../src/cri/simulator/index.js';
import { openStore } from '../../src/store/index.js';
import { tempDir } from './support/fixtures.js';
import { auditCheckpoints, isRunning, journalCounts, runDriver, seed, startNode, type SeededPod } from './support/harness.js';

const PROCESSES = 8;
const PODS = 50;
const PER_PROCESS = 25;

let dir: { path: string; cleanup: () => Promise<void> };
let sim: RunningSimulator;
beforeAll(async () => {
  dir = await tempDir('podctl-concurrency-');
  sim = await startNode(join(dir.path, 'sim.sock'), 0.05);
});
afterAll(async () => {
  await sim.close();
  await dir.cleanup();
});

describe('8 concurrent processes', () => {
  it('terminate 50 overlapping pods exactly once each, grace never grows, all checkpoints valid', async () => {
    const specs: SimPodSpec[] = Array.from({ length: PODS }, (_, i) => ({
      name: `shared-${i}`,
      namespace: 'conc',
      terminationGracePeriodSeconds: 20,
      containers: [{ name: 'main', onSigterm: i % 3 === 0 ? 'ignore' : i % 3 === 1 ? { exitAfterSeconds: 4 } : 'exit' }],
    }));
    const pods: SeededPod[] = seed(sim, specs);
    const stateDir = join(dir.path, 'state');
    const targeted = new Set<string>();
    const runs = Array.from({ length: PROCESSES }, () => {
      // Overlapping random subsets with random graces.
      const picks = [...pods].sort(() => Math.random() - 0.5).slice(0, PER_PROCESS);
      for (const pod of picks) targeted.add(pod.uid);
      return runDriver([stateDir, sim.endpoint, '30000', ...picks.map((pod) => `${pod.uid}:${1 + Math.floor(Math.random() * 20)}`)]);
    });
    const codes = await Promise.all(runs.map((r) => r.exited));
    for (const [i, run] of runs.entries()) {
      expect(codes[i], run.stderr.join('')).toBe(0);
      const waited = run.lines.find((l) => l.step === 'waited') as { outcomes: Record<string, string> } | undefined;
      expect(waited, run.stderr.join('')).toBeDefined();
      for (const [uid, outcome] of Object.entries(waited!.outcomes)) expect(outcome, uid).toBe('terminated');
    }
    const delegated = runs.flatMap((r) => r.lines.filter((l) => l.step === 'requested' && l.handledBy === 'delegated'));
    expect(delegated.length).toBeGreaterThan(0);

    const counts = journalCounts(sim);
    for (const pod of pods) {
      const stops = counts.stopSandbox.get(pod.sandboxId) ?? 0;
      if (targeted.has(pod.uid)) {
        expect(stops, `StopPodSandbox calls for ${pod.spec.name}`).toBe(1);
        expect(isRunning(sim, pod), pod.spec.name).toBe(false);
      } else {
        expect(stops).toBe(0);
        expect(isRunning(sim, pod)).toBe(true);
      }
      for (const id of pod.containerIds) {
        expect(counts.sigkill.get(id) ?? 0, `SIGKILLs of ${pod.spec.name}`).toBeLessThanOrEqual(1);
        const timeouts = counts.stopTimeouts.get(id) ?? [];
        for (let i = 1; i < timeouts.length; i += 1) {
          expect(timeouts[i]!, `StopContainer timeouts of ${pod.spec.name}: ${timeouts.join(',')}`).toBeLessThanOrEqual(timeouts[i - 1]!);
        }
      }
    }
    const audit = await auditCheckpoints(stateDir);
    expect(audit.invalid).toEqual([]);
    expect(audit.quarantined).toEqual([]);
    expect(audit.valid).toBe(targeted.size);
    const store = await openStore({ stateDir });
    for (const uid of targeted) expect((await store.checkpoints.read(uid))?.status.terminatedAt, uid).toBeDefined();
    expect((await readdir(join(stateDir, 'inbox'))).filter((n) => !n.startsWith('.'))).toEqual([]);
    const leases = await store.leases.inspectAll();
    for (const uid of targeted) expect(leases.get(uid)?.released, uid).toBe(true);
  }, 60_000);
});
