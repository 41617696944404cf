/**
 * `podctl kill` reads the store only for the pods the runtime shows (docs/store.md): the
 * checkpoints of other pods the state dir remembers are neither read nor judged, so a kill's cost
 * does not grow with them, and a damaged file of another pod is left where it is (the next command
 * that reads it quarantines it). Runs the built CLI against the embedded simulator.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { requireBuilt, runPodctl as podctl } from '../support/cli.js';

beforeAll(() => {
  requireBuilt('kill');
});

describe('kill and the checkpoints of other pods', { timeout: 90_000 }, () => {
  let sim: RunningSimulator;
  let dir: string;
  let state: string;
  let common: string[];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-kill-store-'));
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.05,
      pods: [
        { name: 'web-1', namespace: 'web', labels: { app: 'web' }, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] },
        { name: 'web-2', namespace: 'web', labels: { app: 'web' }, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] },
      ],
    });
    state = path.join(dir, 'state');
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', state, '--log-level', 'warn'];
  });

  afterAll(async () => {
    await sim?.close();
  });

  it('by name and by selector: the other pods’ checkpoints are not read (a damaged one stays in place, no warning)', async () => {
    mkdirSync(path.join(state, 'pods'), { recursive: true, mode: 0o700 });
    // a pod the runtime no longer shows, whose checkpoint is damaged
    const damaged = path.join(state, 'pods', 'gone-pod-uid.ckpt');
    writeFileSync(damaged, 'not a checkpoint\n', { mode: 0o600 });

    const byName = await podctl(['kill', 'web/web-1', '--grace', '1', ...common]);
    expect(byName.code, byName.stderr).toBe(0);
    expect(byName.stdout).toMatch(/web\/web-1\s+\S+\s+terminated/);
    const bySelector = await podctl(['kill', '-n', 'web', '-l', 'app=web', '--grace', '1', ...common]);
    expect(bySelector.code, bySelector.stderr).toBe(0);

    for (const run of [byName, bySelector]) expect(run.stderr).not.toContain('gone-pod-uid');
    expect(existsSync(damaged)).toBe(true);
    const quarantine = path.join(state, 'quarantine');
    expect(existsSync(quarantine) ? readdirSync(quarantine) : []).toEqual([]);
  });

  it('a name the runtime does not show is still looked up among the pods the store remembers', async () => {
    // web-1 was killed above and is finished: a second kill finds it in the store, already terminated
    const again = await podctl(['kill', 'web/web-1', '--json', ...common]);
    expect(again.code, again.stderr).toBe(0);
    const result = JSON.parse(again.stdout) as { pods: { name: string; outcome: string }[] };
    expect(result.pods).toEqual([expect.objectContaining({ name: 'web-1', outcome: 'already-terminated' })]);
  });
});
