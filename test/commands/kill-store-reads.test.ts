/**
 * `podctl kill` reads the store only for the pods the runtime shows (docs/store.md): the
 * checkpoints of other pods the state dir remembers are neither read nor judged, so a kill's cost
 * does not grow with them, and a damaged file of another pod is left where it is (the next command
 * that reads it quarantines it). Runs the built CLI against the embedded simulator.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { requireBuilt, runPodctl as podctl, useSimNode } from '../support/cli.js';

beforeAll(() => {
  requireBuilt('kill');
});

describe('kill and the checkpoints of other pods', { timeout: 90_000 }, () => {
  const node = useSimNode(
    'podctl-kill-store-',
    {
      timeScale: 0.05,
      pods: [
        { name: 'web-1', namespace: 'web', labels: { app: 'web' }, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] },
        { name: 'web-2', namespace: 'web', labels: { app: 'web' }, terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] },
      ],
    },
    ['--log-level', 'warn'],
  );

  it('by name and by selector: the other pods’ checkpoints are not read (a damaged one stays in place, no warning)', async () => {
    mkdirSync(path.join(node.stateDir, 'pods'), { recursive: true, mode: 0o700 });
    // a pod the runtime no longer shows, whose checkpoint is damaged
    const damaged = path.join(node.stateDir, 'pods', 'gone-pod-uid.ckpt');
    writeFileSync(damaged, 'not a checkpoint\n', { mode: 0o600 });

    const byName = await podctl(['kill', 'web/web-1', '--grace', '1', ...node.common]);
    expect(byName.code, byName.stderr).toBe(0);
    expect(byName.stdout).toMatch(/web\/web-1\s+\S+\s+terminated/);
    const bySelector = await podctl(['kill', '-n', 'web', '-l', 'app=web', '--grace', '1', ...node.common]);
    expect(bySelector.code, bySelector.stderr).toBe(0);

    for (const run of [byName, bySelector]) expect(run.stderr).not.toContain('gone-pod-uid');
    expect(existsSync(damaged)).toBe(true);
    const quarantine = path.join(node.stateDir, 'quarantine');
    expect(existsSync(quarantine) ? readdirSync(quarantine) : []).toEqual([]);
  });

  it('a name the runtime does not show is still looked up among the pods the store remembers', async () => {
    // web-1 was killed above and is finished: a second kill finds it in the store, already terminated
    const again = await podctl(['kill', 'web/web-1', '--json', ...node.common]);
    expect(again.code, again.stderr).toBe(0);
    const result = JSON.parse(again.stdout) as { pods: { name: string; outcome: string }[] };
    expect(result.pods).toEqual([expect.objectContaining({ name: 'web-1', outcome: 'already-terminated' })]);
  });
});
