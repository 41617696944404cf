/**
 * `podctl drain` relists the runtime about once a relist period while its pods' stops are in flight,
 * not once or twice per pod: on a real node the runtime serves every relist (two listings of the
 * whole node) beside the stops it is working through. Through the built CLI against the embedded
 * simulator, whose journal records every call: sixteen pods whose containers exit one after another
 * over ~3 s after SIGTERM. Each pod's check after its stops and the engine's next phase share the
 * relist due next; the last pod's check (no other stop in flight) is not deferred.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import type { SimRecord } from '../../src/cri/simulator/types.js';
import { requireBuilt, runPodctl as podctl } from '../support/cli.js';

const PODS = 16;
/** The simulator's clock runs at a tenth: pod i's container exits 0.2·i s (real) after its SIGTERM. */
const TIME_SCALE = 0.1;

describe('podctl drain while stops are in flight', { timeout: 90_000 }, () => {
  let sim: RunningSimulator;
  let common: string[];

  beforeAll(async () => {
    requireBuilt('drain');
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-drain-relists-'));
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: TIME_SCALE,
      pods: Array.from({ length: PODS }, (_, i) => ({
        name: `spread-${i + 1}`,
        namespace: 'web',
        terminationGracePeriodSeconds: 60,
        containers: [{ name: 'c', onSigterm: { exitAfterSeconds: 2 * (i + 1) } }],
      })),
    });
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
  });

  afterAll(async () => {
    await sim?.close();
  });

  it('terminates every pod with about one relist a period while their stops end one after another, not one or more per pod', async () => {
    const run = await podctl(['drain', '--group', '0:120', '--yes', '--json', ...common]);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { status: string; summary: { planned: number; terminated: number } };
    expect(result.status).toBe('done');
    expect(result.summary).toMatchObject({ planned: PODS, terminated: PODS });

    const journal = sim.state.journal();
    const rpcs = (method: string): SimRecord[] => journal.filter((r) => r.kind === 'rpc' && r.method === method);
    const firstStop = rpcs('StopContainer')[0]!.at;
    const lastSandboxStop = rpcs('StopPodSandbox').at(-1)!.at;
    expect(rpcs('StopPodSandbox')).toHaveLength(PODS);
    // the stops end over ~3 s (the journal's clock is real time); before, every pod's end started a
    // relist for its check and another for the engine's next phase (over 30 listings)
    const during = rpcs('ListContainers').filter((r) => r.at > firstStop && r.at < lastSandboxStop);
    expect(lastSandboxStop - firstStop).toBeGreaterThan(2_000);
    expect(during.length, `${during.length} listings in ${lastSandboxStop - firstStop} ms`).toBeLessThanOrEqual(12);
    // nothing of the pods runs any more
    const status = JSON.parse((await podctl(['status', '--json', ...common])).stdout) as { pods: { containersRunning: number }[] };
    expect(status.pods.every((p) => p.containersRunning === 0)).toBe(true);
  });
});
