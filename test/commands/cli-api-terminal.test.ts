/**
 * The built CLI with an API server as the source of desired pods: a pod whose phase in the API is
 * Failed while its container still runs on the node is stopped as the kubelet stops a terminal pod
 * (its grace, a Killing Event) and never deleted by podctl; `status --explain` says why.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/cri/simulator/index.js';
import type { KubeApiServer } from '../support/kube-api-server.js';
import { requireBuilt, runPodctl, type CliRun, startCliApiNode } from '../support/cli.js';

describe('podctl sync-known with a pod terminal in the API', { timeout: 90_000 }, () => {
  let server: KubeApiServer;
  let sim: RunningSimulator;
  let common: string[];

  const podctl = (args: string[]): Promise<CliRun> => runPodctl([...args, ...common]);

  beforeAll(async () => {
    requireBuilt('sync-known');
    ({ server, sim, common } = await startCliApiNode('podctl-cli-terminal-', [
      { name: 'keep', namespace: 'web', uid: 'uid-keep', containers: [{ name: 'c', onSigterm: 'exit' }] },
      { name: 'done', namespace: 'batch', uid: 'uid-done', containers: [{ name: 'c', onSigterm: 'exit' }] },
    ]));
  });

  afterAll(async () => {
    await sim?.close();
    await server?.stop();
  });

  it('a Failed pod whose container runs is terminated with its grace (a Killing Event), never deleted; status --explain names the reason', async () => {
    server.addPod({ metadata: { name: 'keep', namespace: 'web', uid: 'uid-keep' }, spec: { nodeName: 'node-7', containers: [{ name: 'c' }] }, status: { phase: 'Running' } });
    server.addPod({
      metadata: { name: 'done', namespace: 'batch', uid: 'uid-done' },
      spec: { nodeName: 'node-7', terminationGracePeriodSeconds: 7, containers: [{ name: 'c' }] },
      status: { phase: 'Failed' },
    });
    const run = await podctl(['sync-known', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result.api.terminalStopped).toEqual([{ uid: 'uid-done', namespace: 'batch', name: 'done', phase: 'Failed', gracePeriodSeconds: 7 }]);
    expect(result.orphanedRuntimePods).toEqual([]);
    // stopped on the node; the running pod beside it is untouched
    const status = await podctl(['status', '--json']);
    const pods = JSON.parse(status.stdout).pods as { name: string; state: string; containersRunning?: number }[];
    expect(pods.find((p) => p.name === 'done')?.state).toMatch(/^(terminated|finished)$/);
    expect(pods.find((p) => p.name === 'keep')?.state).toMatch(/^(runtime|sync)$/);
    // a Killing Event with the pod's grace, as the kubelet posts; the pod object is left to the API
    const events = server.eventsFor('batch', 'done') as { type: string; reason: string; message: string }[];
    expect(events).toEqual([expect.objectContaining({ type: 'Normal', reason: 'Killing', message: "Stopping pod's containers with a grace period of 7s" })]);
    expect(server.requests.filter((r) => r.method === 'DELETE')).toEqual([]);
    expect(server.getPod('batch', 'done')).toBeDefined();

    const explain = await podctl(['status', 'batch/done', '--explain', '--json']);
    expect(explain.code, explain.stderr).toBe(0);
    const [e] = JSON.parse(explain.stdout).explain;
    expect(e.timeline.map((t: { detail: string }) => t.detail).join('\n')).toContain('its phase in the API is Failed: the kubelet stops the containers of a terminal pod');

    // a second run finds it stopped: no second Event, still no DELETE
    const again = await podctl(['sync-known', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).api.terminalStopped).toEqual([]);
    expect(server.eventsFor('batch', 'done')).toHaveLength(1);
    expect(server.requests.filter((r) => r.method === 'DELETE')).toEqual([]);
  });
});
