/**
 * The volume check before a final delete fails closed, through the CLI: when the kubelet's pods
 * directory (`--kubelet-root`/pods) cannot be read, what is mounted there is unknown, and
 * `sync-known` withholds the final delete (no DELETE reaches the API server) and says why, as
 * `status --explain` does; with a readable pods directory the same pod is finally deleted. The
 * API server is the local one, spoken to as the agent (the shipped RBAC); the node is the simulator.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { writeAgentKubeconfig } from '../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';
import { requireBuilt, runPodctl, type CliRun } from '../support/cli.js';

describe('the volume check fails closed when the kubelet root cannot be read', { timeout: 90_000 }, () => {
  let server: KubeApiServer;
  let sim: RunningSimulator;
  let common: string[];
  let dir: string;

  // each run names its kubelet root
  const podctl = (args: string[]): Promise<CliRun> => runPodctl([...args, ...common], { PODCTL_KUBELET_DIR: undefined });
  const deletes = () => server.requests.filter((r) => r.method === 'DELETE' && r.path.includes('/pods/'));

  beforeAll(async () => {
    requireBuilt('sync-known');
    server = await startKubeApiServer();
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-cli-volumes-'));
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.05,
      pods: [{ name: 'gone', namespace: 'app', uid: 'uid-gone', containers: [{ name: 'c', onSigterm: 'exit' }] }],
    });
    server.addPod({ metadata: { name: 'gone', namespace: 'app', uid: 'uid-gone' }, spec: { nodeName: 'node-1', containers: [{ name: 'c', image: 'x' }] }, status: { phase: 'Running' } });
    server.deletePod('app', 'gone', 1);
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state'), '--kubeconfig', writeAgentKubeconfig(dir, server), '--node', 'node-1'];
  });

  afterAll(async () => {
    await sim?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('no pods directory, or one that is not a directory: unknown, the final delete withheld and said; readable: deleted', async () => {
    const absent = path.join(dir, 'kubelet-elsewhere'); // a kubelet root that is not there
    const run = await podctl(['sync-known', '--json', '--kubelet-root', absent]);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { api: { deleting: { uid: string }[]; finallyDeleted: unknown[]; withheld: { uid: string; reason: string }[] } };
    expect(result.api.deleting.map((p) => p.uid)).toEqual(['uid-gone']); // the kill went on
    expect(result.api.finallyDeleted).toEqual([]);
    const podsDir = path.join(absent, 'pods');
    const reason = `withheld: volumes unknown: the kubelet's pods directory ${podsDir} cannot be read (ENOENT; is --kubelet-root its --root-dir, and is it mounted?)`;
    expect(result.api.withheld).toEqual([expect.objectContaining({ uid: 'uid-gone', reason })]);
    expect(run.stderr).toContain(`app/gone: final delete ${reason}`);
    expect(deletes()).toEqual([]);
    expect(server.getPod('app', 'gone')).toBeDefined();

    const explain = await podctl(['status', '--uid', 'uid-gone', '--explain', '--kubelet-root', absent]);
    expect(explain.stdout).toContain(`final delete: ${reason}`);

    // a pods "directory" that is a file
    const odd = path.join(dir, 'kubelet-odd');
    mkdirSync(odd);
    writeFileSync(path.join(odd, 'pods'), '');
    const again = JSON.parse((await podctl(['sync-known', '--json', '--kubelet-root', odd])).stdout) as typeof result;
    expect(again.api.withheld).toEqual([expect.objectContaining({ uid: 'uid-gone', reason: expect.stringContaining('cannot be read (ENOTDIR') })]);
    expect(deletes()).toEqual([]);

    // a readable pods directory with nothing mounted under the pod: the final delete goes out
    const kubelet = path.join(dir, 'kubelet');
    mkdirSync(path.join(kubelet, 'pods'), { recursive: true });
    const done = JSON.parse((await podctl(['sync-known', '--json', '--kubelet-root', kubelet])).stdout) as typeof result;
    expect(done.api.withheld).toEqual([]);
    expect(done.api.finallyDeleted).toEqual([expect.objectContaining({ uid: 'uid-gone' })]);
    expect(deletes()).toHaveLength(1);
    expect(server.getPod('app', 'gone')).toBeUndefined();
  });
});
