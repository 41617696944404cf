/**
 * `podctl drain` starts a group's pods terminating together, as the kubelet's node shutdown does:
 * every pod of a node's worth (100 here, the kubelet's default maxPods is 110) has its termination
 * requested, and its intent written ahead in one durable batch shared by all of them, before the
 * first container is sent SIGTERM. Before, 64 kill requests went out at a time and the first pod's
 * write-ahead was a batch of its own, so some pods were only requested after others' stops were
 * under way (their StopContainer calls going out hundreds of ms later on a real node).
 * Through the built CLI against the embedded simulator; the drain's kept report (`podctl report -o
 * json`) gives each pod's request time and its container's stop.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { requireBuilt, runPodctl as podctl } from '../support/cli.js';

const PODS = 100;

interface ReportJson {
  pods: { name: string; outcome: string; requestedAt: string | null; segments: { kind: string; start: string }[] }[];
}

describe('podctl drain of a node’s worth of pods', { timeout: 120_000 }, () => {
  let sim: RunningSimulator;
  let common: string[];

  beforeAll(async () => {
    requireBuilt('drain');
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-drain-together-'));
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.1,
      pods: Array.from({ length: PODS }, (_, i) => ({
        name: `p-${i + 1}`,
        namespace: 'web',
        terminationGracePeriodSeconds: 30,
        containers: [{ name: 'c', onSigterm: { exitAfterSeconds: 5 } }],
      })),
    });
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
  });

  afterAll(async () => {
    await sim?.close();
  });

  it('requests every pod of the group before the first StopContainer goes out', async () => {
    const run = await podctl(['drain', '--group', '0:120', '--yes', '--json', ...common]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'done', summary: { planned: PODS, terminated: PODS } });

    const report = await podctl(['report', '-o', 'json', ...common]);
    expect(report.code, report.stderr).toBe(0);
    const { pods } = JSON.parse(report.stdout) as ReportJson;
    expect(pods).toHaveLength(PODS);
    const requested = pods.map((p) => Date.parse(p.requestedAt ?? 'none'));
    const stops = pods.flatMap((p) => p.segments.filter((s) => s.kind === 'container').map((s) => Date.parse(s.start)));
    expect(requested.every(Number.isFinite)).toBe(true);
    expect(stops).toHaveLength(PODS);
    const lastRequest = Math.max(...requested);
    const firstStop = Math.min(...stops);
    const late = pods.filter((p) => Date.parse(p.requestedAt!) > firstStop).map((p) => p.name);
    expect(late, `${late.length} pod(s) requested after the first stop (last request ${lastRequest - firstStop} ms after it)`).toEqual([]);
    // every container was sent SIGTERM (the journal's StopContainer calls, one per pod)
    expect(sim.state.journal().filter((r) => r.kind === 'rpc' && r.method === 'StopContainer')).toHaveLength(PODS);
  });
});
