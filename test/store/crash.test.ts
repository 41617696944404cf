/**
 * Crash injection: driver processes killing pods are SIGKILLed at random instants; then one
 * sync-known (in a fresh session) must leave no pod running or stuck terminating, every checkpoint
 * valid, and nothing that the dead process had reported done lost.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import type { RunningSimulator, SimPodSpec } from '../../src/cri/simulator/index.js';
import { openSession } from '../../src/session/open.js';
import { openStore } from '../../src/store/index.js';
import { tempDir } from './support/fixtures.js';
import { auditCheckpoints, desiredOf, isRunning, journalCounts, runDriver, seed, startNode, type DriverRun, type SeededPod } from './support/harness.js';

// The suite runs 5 × 10 = 50 trials; scripts/soak-store.sh raises these for 200+.
const LANES = Number(process.env.PODCTL_CRASH_LANES ?? 5);
const TRIALS_PER_LANE = Number(process.env.PODCTL_CRASH_TRIALS ?? 10);
const PODS_PER_TRIAL = 4;
const TIME_SCALE = 0.02; // 30 s of grace = 0.6 s

/** A small deterministic PRNG so a failing trial can be replayed from its seed. */
function prng(seedValue: number): () => number {
  let s = seedValue >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

interface TrialReport {
  lane: number;
  trial: number;
  killAfterMs: number;
  reportedDone: string[];
  resumed: string[];
  orphaned: string[];
}

let dir: { path: string; cleanup: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir('podctl-crash-');
});
afterAll(async () => {
  await dir.cleanup();
});

async function waitForStep(run: DriverRun, step: string): Promise<void> {
  while (!run.lines.some((l) => l.step === step)) await new Promise((r) => setTimeout(r, 5));
}

async function runLane(lane: number, random: () => number): Promise<TrialReport[]> {
  const stateDir = join(dir.path, `lane-${lane}`);
  const sim: RunningSimulator = await startNode(join(dir.path, `sim-${lane}.sock`), TIME_SCALE);
  const reports: TrialReport[] = [];
  try {
    for (let trial = 0; trial < TRIALS_PER_LANE; trial += 1) {
      const specs: SimPodSpec[] = Array.from({ length: PODS_PER_TRIAL }, (_, i) => ({
        name: `crash-${lane}-${trial}-${i}`,
        namespace: 'crash',
        terminationGracePeriodSeconds: 30,
        containers: [{ name: 'main', onSigterm: i % 3 === 0 ? 'ignore' : i % 3 === 1 ? { exitAfterSeconds: 10 } : 'exit' }],
      }));
      const pods: SeededPod[] = seed(sim, specs);
      const graces = pods.map(() => 1 + Math.floor(random() * 30));
      const args = pods.map((p, i) => `${p.uid}:${graces[i]}`);
      const run = runDriver([stateDir, sim.endpoint, '20000', ...args]);
      // Some kills land during start-up; most after the session opened, anywhere in the kill.
      const early = random() < 0.15;
      const killAfterMs = Math.floor(random() * (early ? 500 : 900));
      if (!early) await Promise.race([waitForStep(run, 'open'), run.exited]);
      await Promise.race([new Promise((r) => setTimeout(r, killAfterMs)), run.exited]);
      run.child.kill('SIGKILL');
      await run.exited;
      const reportedDone = run.lines.filter((l) => l.step === 'requested').map((l) => l.uid as string);

      // One sync-known in a fresh session; the trial's pods are desired (not orphans).
      const desired = desiredOf(pods);
      const session = await openSession({ stateDir, runtimeEndpoint: sim.endpoint, rpcTimeoutMs: 5_000 });
      let resumed: string[] = [];
      let orphaned: string[] = [];
      try {
        const result = await session.syncKnown(desired);
        resumed = result.resumed;
        orphaned = result.orphanedRuntimePods;
      } finally {
        await session.close();
      }
      reports.push({ lane, trial, killAfterMs, reportedDone, resumed, orphaned });

      const store = await openStore({ stateDir });
      const counts = journalCounts(sim);
      for (const [i, pod] of pods.entries()) {
        const checkpoint = await store.checkpoints.read(pod.uid);
        const where = `lane ${lane} trial ${trial} pod ${pod.uid} (killed after ${killAfterMs} ms)`;
        if (reportedDone.includes(pod.uid)) {
          // A kill reported done survives the crash: the pod was driven to termination.
          expect(checkpoint?.status.terminatingAt, where).toBeDefined();
        }
        // Write-ahead: the runtime never saw a stop the store does not know about, and the grace it
        // saw never exceeded the requested one nor grew, across the crash and the resume.
        const timeouts = pod.containerIds.flatMap((id) => counts.stopTimeouts.get(id) ?? []);
        if (timeouts.length > 0) expect(checkpoint?.status.terminatingAt, `${where}: stopped without a checkpoint`).toBeDefined();
        for (const id of pod.containerIds) {
          const seen = counts.stopTimeouts.get(id) ?? [];
          for (const [k, t] of seen.entries()) {
            expect(t, `${where}: StopContainer timeouts ${seen.join(',')} (grace ${graces[i]})`).toBeLessThanOrEqual(graces[i]!);
            if (k > 0) expect(t, `${where}: StopContainer timeouts ${seen.join(',')}`).toBeLessThanOrEqual(seen[k - 1]!);
          }
        }
        if (checkpoint) {
          expect(checkpoint.status.terminatedAt, `${where}: stuck terminating`).toBeDefined();
          expect(checkpoint.status.gracePeriod, where).toBeLessThanOrEqual(graces[i]!);
          expect(isRunning(sim, pod), `${where}: still running after sync-known`).toBe(false);
        } else {
          // Never requested (the driver died first): untouched, still running as desired.
          expect(reportedDone.includes(pod.uid), where).toBe(false);
        }
      }
      const audit = await auditCheckpoints(stateDir);
      expect(audit.invalid, `lane ${lane} trial ${trial}`).toEqual([]);
      expect(audit.quarantined, `lane ${lane} trial ${trial}`).toEqual([]);
    }
  } finally {
    await sim.close();
  }
  return reports;
}

describe('crash injection', () => {
  it(
    `${LANES * TRIALS_PER_LANE} SIGKILLs at random instants: sync-known recovers every pod, no checkpoint is corrupt`,
    async () => {
      const base = Number(process.env.PODCTL_CRASH_SEED ?? Date.now() % 100_000);
      const lanes = await Promise.all(Array.from({ length: LANES }, (_, lane) => runLane(lane, prng(base + lane))));
      const reports = lanes.flat();
      expect(reports).toHaveLength(LANES * TRIALS_PER_LANE);
      // The random instants must have hit both sides of the first request, or the test proves little.
      // A driver killed after an intent was durable but before it said so has a pod to resume: that
      // is mid-termination (the intent is written ahead), not "before any request".
      const killedBeforeAnyRequest = reports.filter((r) => r.reportedDone.length === 0 && r.resumed.length === 0).length;
      const killedMidTermination = reports.filter((r) => r.resumed.length > 0).length;
      await writeFile(join(dir.path, 'report.json'), JSON.stringify({ seed: base, reports }, null, 1));
      if (process.env.PODCTL_CRASH_REPORT) console.info(JSON.stringify({ seed: base, killedBeforeAnyRequest, killedMidTermination, orphans: reports.filter((r) => r.orphaned.length > 0).length }));
      expect(killedMidTermination, `seed ${base}`).toBeGreaterThan(0);
      expect(killedBeforeAnyRequest, `seed ${base}`).toBeGreaterThan(0);
    },
    120_000 + LANES * TRIALS_PER_LANE * 3_000,
  );
});
