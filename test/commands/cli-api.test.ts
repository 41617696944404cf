/**
 * The built CLI with an API server: `evict` reports to it and `sync-known` takes desired pods from
 * it. The API server is the local one the tests use (test/support/kube-api-server.ts); the node is
 * the embedded simulator.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/cri/simulator/index.js';
import { writeKubeconfig } from '../kube/support.js';
import type { KubeApiServer } from '../support/kube-api-server.js';
import { requireBuilt, runPodctl, type CliRun, BIN, ROOT, startCliApiNode } from '../support/cli.js';

describe('podctl with an API server', { timeout: 90_000 }, () => {
  let server: KubeApiServer;
  let sim: RunningSimulator;
  let common: string[];
  let dir: string;

  const podctl = (args: string[]): Promise<CliRun> => runPodctl([...args, ...common]);

  beforeAll(async () => {
    requireBuilt('evict');
    ({ server, sim, dir, common } = await startCliApiNode('podctl-cli-api-', [
      { name: 'keep', namespace: 'web', uid: 'uid-keep', containers: [{ name: 'c', onSigterm: 'exit' }] },
      { name: 'stray', namespace: 'web', uid: 'uid-stray', containers: [{ name: 'c', onSigterm: 'exit' }] },
      { name: 'evictee', namespace: 'batch', uid: 'uid-evictee', containers: [{ name: 'c', onSigterm: 'exit' }] },
      { name: 'late', namespace: 'batch', uid: 'uid-late', containers: [{ name: 'c', onSigterm: 'exit' }] },
    ]));
  });

  afterAll(async () => {
    await sim?.close();
    await server?.stop();
  });

  it("evict writes what the kubelet's eviction manager writes, field by field: Failed, Evicted, the message with the operator's reason, DisruptionTarget, an Evicted Warning Event", async () => {
    server.addPod({ metadata: { name: 'evictee', namespace: 'batch', uid: 'uid-evictee', generation: 3 }, spec: { nodeName: 'node-7', containers: [{ name: 'c' }] }, status: { phase: 'Running' } });
    const run = await podctl(['evict', 'batch/evictee', '--reason', 'DiskPressure', '--message', 'node is low on disk', '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ action: 'evict', apiServer: { eventsPosted: 1, statusPatched: 1, errors: [] }, pods: [{ outcome: 'terminated' }] });
    // What the kubelet's eviction manager writes for an eviction with this message (its evictPod and
    // the status manager's update): the reason is always Evicted (the why is in the message).
    const message = 'DiskPressure: node is low on disk';
    const kubelet = {
      status: { phase: 'Failed', reason: 'Evicted', message },
      condition: { type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', message, observedGeneration: 3 },
      event: { type: 'Warning', reason: 'Evicted', message, involvedObject: { kind: 'Pod', namespace: 'batch', name: 'evictee', uid: 'uid-evictee' }, host: 'node-7' },
    };
    const status = server.getPod('batch', 'evictee')?.status as Record<string, any>;
    for (const [field, value] of Object.entries(kubelet.status)) expect(status[field], `status.${field}`).toEqual(value);
    const conditions = (status.conditions as Record<string, any>[]).filter((c) => c.type === 'DisruptionTarget');
    expect(conditions).toHaveLength(1);
    for (const [field, value] of Object.entries(kubelet.condition)) expect(conditions[0]![field], `condition.${field}`).toEqual(value);
    expect(Date.parse(conditions[0]!.lastTransitionTime)).not.toBeNaN();
    const events = server.eventsFor('batch', 'evictee');
    expect(events).toHaveLength(1);
    const event = events[0] as Record<string, any>;
    for (const field of ['type', 'reason', 'message'] as const) expect(event[field], `event.${field}`).toEqual(kubelet.event[field]);
    for (const [field, value] of Object.entries(kubelet.event.involvedObject)) expect(event.involvedObject[field], `event.involvedObject.${field}`).toEqual(value);
    // the reporter names itself (podctl, not the kubelet) on the kubelet's host
    expect(event.source).toEqual({ component: 'podctl', host: kubelet.event.host });
  });

  it('sync-known takes desired pods from the API server (this node only) and terminates the undesired runtime pod', async () => {
    server.addPod({ metadata: { name: 'keep', namespace: 'web', uid: 'uid-keep' }, spec: { nodeName: 'node-7', containers: [{ name: 'c' }] }, status: { phase: 'Running' } });
    // batch/late stays desired: the next test evicts it, and a pod sync-known stopped counts as already terminated
    server.addPod({ metadata: { name: 'late', namespace: 'batch', uid: 'uid-late' }, spec: { nodeName: 'node-7', containers: [{ name: 'c' }] }, status: { phase: 'Running' } });
    const run = await podctl(['sync-known', '--json']);
    expect(run.stderr).toContain('desired pod(s) from the API server');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result.source).toBe('api');
    expect(server.requests.some((r) => r.method === 'GET' && r.query.get('fieldSelector') === 'spec.nodeName=node-7')).toBe(true);
    expect(result.orphanedRuntimePods.map((p: { name: string }) => p.name)).toContain('stray');
    expect(result.orphanedRuntimePods.map((p: { name: string }) => p.name)).not.toContain('keep');
    expect(result.orphanedRuntimePods.map((p: { name: string }) => p.name)).not.toContain('late');
  });

  it('evict beside an API server that does not answer: the kill goes on, the writes are recorded, the command does not linger', async () => {
    const silent = http.createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const blackHole = writeKubeconfig(mkdtempSync(path.join(tmpdir(), 'podctl-cli-api-silent-')), (silent.address() as AddressInfo).port, 't', 'x');
      const started = Date.now();
      const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        const args = ['evict', 'batch/late', '--grace', '1', '--json', '--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state'), '--kubeconfig', blackHole, '--node', 'node-7'];
        execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' }, timeout: 60_000 }, (error, stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
        );
      });
      const elapsed = Date.now() - started;
      expect(run.code, run.stderr).toBe(0);
      const result = JSON.parse(run.stdout);
      expect(result.pods).toEqual([expect.objectContaining({ uid: 'uid-late', outcome: 'terminated' })]);
      expect(result.apiServer).toMatchObject({ eventsPosted: 0, statusPatched: 0 });
      expect(result.apiServer.errors).toHaveLength(2);
      expect(run.stderr).toMatch(/post event for batch\/late: no answer from the API server http:\/\/127\.0\.0\.1:\d+ within 2s; recorded/);
      // the retry budget of a call is 20 s: neither the kill nor the exit waited for it
      expect(elapsed).toBeLessThan(15_000);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  it("drain --shutdown-status sets the kubelet's node-shutdown status on the pods it stopped", async () => {
    server.addPod({ metadata: { name: 'stray', namespace: 'web', uid: 'uid-stray' }, spec: { nodeName: 'node-7', containers: [{ name: 'c' }] }, status: { phase: 'Running' } });
    const patchesBefore = server.requests.filter((r) => r.method === 'PATCH').length;
    const run = await podctl(['drain', '--grace-period', '2', '--critical-grace-period', '1', '--shutdown-status', '--yes', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result.shutdownStatus).toMatchObject({ errors: [] });
    expect(result.shutdownStatus.statusPatched).toBeGreaterThanOrEqual(1);
    expect(server.getPod('web', 'keep')?.status).toMatchObject({
      phase: 'Failed',
      reason: 'Terminated',
      message: 'Pod was terminated in response to imminent node shutdown.',
      conditions: [expect.objectContaining({ type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet' })],
    });
    expect(server.requests.filter((r) => r.method === 'PATCH').length).toBeGreaterThan(patchesBefore);
  });

  it('status shows whether a kubelet runs: its header line and the JSON field', async () => {
    const healthz = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => healthz.listen(0, '127.0.0.1', r));
    try {
      const port = (healthz.address() as AddressInfo).port;
      const json = await podctl(['status', '-o', 'json', '--kubelet-healthz', `127.0.0.1:${port}`]);
      expect(json.code, json.stderr).toBe(0);
      expect(JSON.parse(json.stdout).kubelet).toEqual({ state: 'running', via: 'healthz', detail: `healthz 127.0.0.1:${port} answered ok` });
      healthz.close();
      const table = await podctl(['status', '--kubelet-healthz', `127.0.0.1:${port}`]);
      expect(table.code, table.stderr).toBe(0);
      expect(table.stderr.split('\n')[0]).toMatch(/^kubelet: down \(no kubelet process; healthz 127\.0\.0\.1:\d+ refused\)$/);
    } finally {
      healthz.close();
    }
  });
});
