/**
 * What `podctl kill` of one pod asks the runtime after its stops: the check that nothing of the pod
 * runs (one relist started after StopPodSandbox answered) and the relist the pod's terminated phase
 * waits for (started after the terminating sync ended: the kubelet's "newer than" rule), and nothing
 * more before it exits. Through the built CLI against the embedded simulator, whose journal records
 * every call, as containerd 1.6 answers (no container events: no event-driven relists). Needs
 * `npm run build`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import type { SimRecord } from '../../src/cri/simulator/types.js';
import { requireBuilt, runPodctl as podctl } from '../support/cli.js';

let sim: RunningSimulator;
let dir: string;

beforeAll(async () => {
  requireBuilt('kill');
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-kill-relists-'));
  sim = await startSimulator({
    socketPath: path.join(dir, 'cri.sock'),
    timeScale: 0.05,
    events: false,
    pods: [{ name: 'web-1', namespace: 'web', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] }],
  });
});
afterAll(async () => {
  await sim?.close();
});

describe('podctl kill of one pod', { timeout: 60_000 }, () => {
  it('relists twice after StopPodSandbox answered (the check, then the terminated phase), and records the pod finished', async () => {
    const state = path.join(dir, 'state');
    const run = await podctl(['kill', 'web/web-1', '--json', '--runtime-endpoint', sim.endpoint, '--state-dir', state]);
    expect(run.code, run.stderr).toBe(0);
    const json = JSON.parse(run.stdout) as { pods: { name: string; outcome: string }[] };
    expect(json.pods).toEqual([expect.objectContaining({ name: 'web-1', outcome: 'terminated' })]);
    const rpcs = sim.state.journal().filter((r): r is Extract<SimRecord, { kind: 'rpc' }> => r.kind === 'rpc');
    const sandboxStop = rpcs.findIndex((r) => r.method === 'StopPodSandbox');
    expect(sandboxStop).toBeGreaterThan(0);
    // the status cache's poll (containerd 1.6 streams no events) relists a relist period after the
    // last relist, the check's, which started after StopPodSandbox was sent: none before this
    const before = rpcs[sandboxStop]!.at + 1_000;
    const after = rpcs
      .slice(sandboxStop + 1)
      .filter((r) => r.at < before)
      .map((r) => r.method);
    expect(after.filter((m) => m === 'ListPodSandbox')).toHaveLength(2);
    expect(after.filter((m) => m === 'ListContainers')).toHaveLength(2);
    const status = await podctl(['status', 'web/web-1', '--json', '--runtime-endpoint', sim.endpoint, '--state-dir', state]);
    expect(status.code, status.stderr).toBe(0);
    // the close still waited for the terminated phase: the record says the pod's worker finished
    expect((JSON.parse(status.stdout) as { pods: { state: string }[] }).pods).toEqual([expect.objectContaining({ state: 'finished' })]);
  });
});
