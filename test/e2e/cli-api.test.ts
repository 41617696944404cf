/**
 * podctl with an API server, end to end: the built CLI, the local API server the tests start (no
 * kube-apiserver can be installed on these machines; test/support/kube-api-server.ts follows the
 * real REST conventions) and a real containerd.
 *
 * - a pod deleted in the API is terminated with the API's grace, then finally deleted;
 * - a static pod with its mirror pod survives sync-known; an orphan is terminated;
 * - evict writes the kubelet's eviction status and one Evicted Event;
 * - the API server down mid-kill does not stop the kill, and the next run catches the API side up;
 * - beside a (stand-in) running kubelet, kill warns, and --via-api deletes through the API.
 *
 * Runs on a node of its own: sync-known acts on every pod of the runtime it is pointed at.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { useKubeApiServer } from '../support/use-kube-api-server.js';
import { requireBuild, runPodctl, spawnPodctl, collect } from './support/cli.js';
import { describeContainerd } from './support/env.js';
import { usePrivateNode } from './support/context.js';
import { exitInfo, firstSigterm } from './support/observe.js';
import type { RealPod } from './support/pods.js';
import { waitFor } from '../support/wait.js';

const NODE = 'podctl-e2e-node';

describeContainerd(import.meta.url, 'podctl with an API server against containerd', () => {
  beforeAll(() => requireBuild());
  const node = usePrivateNode('api');
  const cluster = useKubeApiServer('podctl-e2e-kubeconfig-');
  let stateDir: string;

  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-api-state-'));
    cluster.api.pods.clear();
    cluster.api.events.clear();
    cluster.api.requests.length = 0;
  });
  afterEach(async () => {
    await node.pods.removeAll();
    await rm(stateDir, { recursive: true, force: true });
  });

  const podctl = (args: string[], timeoutMs = 60_000) => runPodctl([...args, '--kubeconfig', cluster.kubeconfig, '--node', NODE], { endpoint: `unix://${node.socket}`, stateDir, timeoutMs });
  const inApi = (real: RealPod, extra: (pod: Record<string, any>) => void = () => {}) => {
    const pod = structuredClone(real.pod) as Record<string, any>;
    extra(pod);
    return cluster.api.addPod(pod);
  };

  it("a pod deleted in the API is terminated with the API's grace (3 s, not its own 30 s), then finally deleted", async () => {
    const real = await node.pods.create({ name: 'deleted', terminationGracePeriodSeconds: 30, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const bystander = await node.pods.create({ name: 'bystander' });
    inApi(real);
    inApi(bystander);
    cluster.api.deletePod(real.namespace, real.name, 3);

    const run = await podctl(['sync-known', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { api: { deleting: { uid: string; gracePeriodSeconds: number }[]; finallyDeleted: { uid: string }[] }; orphanedRuntimePods: unknown[] };
    expect(result.api.deleting).toEqual([expect.objectContaining({ uid: real.uid, gracePeriodSeconds: 3 })]);
    expect(result.api.finallyDeleted.map((p) => p.uid)).toEqual([real.uid]);
    expect(result.orphanedRuntimePods).toEqual([]);

    const exit = await exitInfo(node.cri, real.containers[0]!.id);
    expect(exit).toMatchObject({ state: 'exited', exitCode: 137 });
    const termToKill = exit.finishedAt! - (await firstSigterm(real.containers[0]!))!.time;
    expect(termToKill).toBeGreaterThanOrEqual(2_700);
    expect(termToKill).toBeLessThan(6_000);
    expect(await exitInfo(node.cri, bystander.containers[0]!.id)).toMatchObject({ state: 'running' });

    // the kubelet's final delete: grace 0 and the UID as precondition, after the kill
    expect(cluster.api.getPod(real.namespace, real.name)).toBeUndefined();
    const finalDelete = cluster.api.requests.find((r) => r.method === 'DELETE');
    expect(finalDelete?.body).toEqual({ kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0, preconditions: { uid: real.uid } });
    const killing = cluster.api.eventsFor(real.namespace, real.name).find((e) => e.reason === 'Killing');
    expect(killing).toMatchObject({ type: 'Normal', message: "Stopping pod's containers with a grace period of 3s", source: { component: 'podctl' } });
    expect(cluster.api.getPod(bystander.namespace, bystander.name)?.metadata?.deletionTimestamp).toBeUndefined();
  }, 90_000);

  it('a static pod with its mirror pod survives sync-known; an orphan is terminated; the mirror pod is never driven', async () => {
    const staticPod = await node.pods.create({ name: 'etcd', namespace: 'kube-system', configSource: 'file' });
    const desired = await node.pods.create({ name: 'desired' });
    const orphan = await node.pods.create({ name: 'orphan' });
    inApi(desired);
    // the mirror pod: same name and namespace, its own UID, the config.mirror annotation
    cluster.api.addPod({
      metadata: { name: staticPod.name, namespace: staticPod.namespace, annotations: { 'kubernetes.io/config.mirror': staticPod.uid.replace(/-/g, ''), 'kubernetes.io/config.source': 'file' } },
      spec: { nodeName: NODE, containers: staticPod.pod.spec!.containers },
      status: { phase: 'Running' },
    });

    const run = await podctl(['sync-known', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { orphanedRuntimePods: { uid: string }[]; api: { mirrors: { name: string; staticUid: string | null }[] } };
    expect(result.orphanedRuntimePods.map((p) => p.uid)).toEqual([orphan.uid]);
    expect(result.api.mirrors).toEqual([{ namespace: staticPod.namespace, name: staticPod.name, staticUid: staticPod.uid }]);
    expect(await exitInfo(node.cri, staticPod.containers[0]!.id)).toMatchObject({ state: 'running' });
    expect(await exitInfo(node.cri, desired.containers[0]!.id)).toMatchObject({ state: 'running' });
    expect(await exitInfo(node.cri, orphan.containers[0]!.id)).toMatchObject({ state: 'exited' });
    expect(cluster.api.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  }, 90_000);

  it("evict: the kubelet's eviction status (Failed, Evicted, DisruptionTarget) and one Evicted Event per pod", async () => {
    const real = await node.pods.create({ name: 'evicted' });
    inApi(real);
    const message = 'The node was low on resource: memory.';
    const run = await podctl(['evict', `${real.namespace}/${real.name}`, '--message', message, '--grace', '2', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ apiServer: { statusPatched: 1, eventsPosted: 1, errors: [] } });
    const status = cluster.api.getPod(real.namespace, real.name)?.status;
    expect(status).toMatchObject({ phase: 'Failed', reason: 'Evicted', message });
    expect(status?.conditions).toEqual([expect.objectContaining({ type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', message })]);
    const patch = cluster.api.requests.find((r) => r.method === 'PATCH');
    expect(patch?.contentType).toBe('application/strategic-merge-patch+json');
    const events = cluster.api.eventsFor(real.namespace, real.name);
    expect(events).toEqual([
      expect.objectContaining({
        type: 'Warning',
        reason: 'Evicted',
        message,
        count: 1,
        source: { component: 'podctl', host: NODE },
        involvedObject: expect.objectContaining({ kind: 'Pod', uid: real.uid }),
      }),
    ]);
    // evicted: stopped, then its containers removed from the runtime
    await expect(exitInfo(node.cri, real.containers[0]!.id)).rejects.toThrow(/not found/i);
  }, 90_000);

  it('the API server down mid-kill does not stop the kill; the next run with a kubeconfig sends the final delete', async () => {
    const real = await node.pods.create({ name: 'apidown', terminationGracePeriodSeconds: 30, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    inApi(real);
    cluster.api.deletePod(real.namespace, real.name, 3);

    const sync = spawnPodctl(['sync-known', '--json', '--kubeconfig', cluster.kubeconfig, '--node', NODE], { endpoint: `unix://${node.socket}`, stateDir });
    const done = collect(sync, 60_000);
    await waitFor('the SIGTERM', () => firstSigterm(real.containers[0]!), { timeoutMs: 10_000, everyMs: 25 });
    await cluster.api.stop();
    let run;
    try {
      run = await done;
    } finally {
      await cluster.api.start();
    }
    expect(run.code, run.stderr).toBe(0);
    expect(await exitInfo(node.cri, real.containers[0]!.id)).toMatchObject({ state: 'exited', exitCode: 137 });
    const result = JSON.parse(run.stdout) as { api: { finallyDeleted: unknown[]; pendingRecorded: number } };
    expect(result.api.finallyDeleted).toEqual([]);
    expect(result.api.pendingRecorded).toBe(1);
    expect(run.stderr).toMatch(/cannot reach the API server.*recorded; the next podctl run with a kubeconfig sends it/);
    expect(readdirSync(join(stateDir, 'api-pending'))).toHaveLength(1);
    expect(cluster.api.getPod(real.namespace, real.name)?.metadata?.deletionTimestamp).toBeDefined();

    const next = await podctl(['sync-known', '--json']);
    expect(next.code, next.stderr).toBe(0);
    expect((JSON.parse(next.stdout) as { api: { pendingSent: number } }).api.pendingSent).toBe(1);
    expect(cluster.api.getPod(real.namespace, real.name)).toBeUndefined();
    expect(cluster.api.requests.find((r) => r.method === 'DELETE')?.body).toMatchObject({ gracePeriodSeconds: 0, preconditions: { uid: real.uid } });
    expect(existsSync(join(stateDir, 'api-pending')) ? readdirSync(join(stateDir, 'api-pending')) : []).toEqual([]);
  }, 90_000);

  it('beside a running kubelet: kill of a pod it desires goes through the API (delete with the grace) and waits, bounded; --via-api too', async () => {
    const healthz = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => healthz.listen(0, '127.0.0.1', r));
    const kubeletHealthz = `127.0.0.1:${(healthz.address() as AddressInfo).port}`;
    try {
      const warned = await node.pods.create({ name: 'warned' });
      inApi(warned);
      // nobody plays the kubelet here: the wait ends at its bound, and the pod is the kubelet's
      const run = await podctl(['kill', `${warned.namespace}/${warned.name}`, '--grace', '1', '--timeout', '2s', '--kubelet-healthz', kubeletHealthz, '--json']);
      expect(run.code, run.stderr).toBe(3);
      expect(JSON.parse(run.stdout)).toMatchObject({ kubelet: { state: 'running', action: 'via-api' }, pods: [expect.objectContaining({ uid: warned.uid, outcome: 'timeout', handledBy: 'api' })] });
      expect(cluster.api.requests.filter((r) => r.method === 'DELETE' && r.path.endsWith(`/pods/${warned.name}`))[0]?.body).toMatchObject({
        gracePeriodSeconds: 1,
        preconditions: { uid: warned.uid },
      });
      expect(await exitInfo(node.cri, warned.containers[0]!.id)).toMatchObject({ state: 'running' });
      // finish it as a kubelet would, so later tests do not see a deleted pod
      await node.pods.remove(warned.uid);
      cluster.api.deletePod(warned.namespace, warned.name, 0);
      cluster.api.requests.length = 0;

      const real = await node.pods.create({ name: 'viaapi' });
      inApi(real);
      const kill = spawnPodctl(
        ['kill', `${real.namespace}/${real.name}`, '--grace', '2', '--via-api', '--kubelet-healthz', kubeletHealthz, '--json', '--kubeconfig', cluster.kubeconfig, '--node', NODE],
        {
          endpoint: `unix://${node.socket}`,
          stateDir,
        },
      );
      const killed = collect(kill, 60_000);
      // the stand-in kubelet: once the pod is deleted in the API, finish it as the kubelet would
      // bounded by the kill's own start-up on a loaded machine, not by a speed goal
      await waitFor('the API delete', async () => cluster.api.getPod(real.namespace, real.name)?.metadata?.deletionTimestamp, { timeoutMs: 45_000, everyMs: 25 });
      const finisher = await podctl(['sync-known', '--json']);
      expect(finisher.code, finisher.stderr).toBe(0);
      const result = await killed;
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({
        status: 'done',
        kubelet: { action: 'via-api' },
        pods: [expect.objectContaining({ uid: real.uid, outcome: 'terminated', gracePeriodSeconds: 2 })],
      });
      const deletes = cluster.api.requests.filter((r) => r.method === 'DELETE');
      expect(deletes[0]?.body).toEqual({ kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 2, preconditions: { uid: real.uid } });
      expect(deletes[1]?.body).toMatchObject({ gracePeriodSeconds: 0 });
      expect(await exitInfo(node.cri, real.containers[0]!.id)).toMatchObject({ state: 'exited' });
    } finally {
      healthz.close();
    }
  }, 120_000);

  it("drain follows the API: a pod deleted there during the drain is killed with the API's grace (2 s, not the drain's 15 s) and finally deleted", async () => {
    const real = await node.pods.create({ name: 'draindel', terminationGracePeriodSeconds: 30, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    inApi(real);
    cluster.api.deletePod(real.namespace, real.name, 2);
    const run = await podctl(['drain', '--grace-period', '20', '--critical-grace-period', '5', '--yes', '--json'], 90_000);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { apiServer: { lists: number; deletionsHonoured: { uid: string; gracePeriodSeconds: number }[]; finallyDeleted: { uid: string }[] } };
    expect(result.apiServer.lists).toBe(1);
    expect(result.apiServer.deletionsHonoured).toEqual([expect.objectContaining({ uid: real.uid, gracePeriodSeconds: 2 })]);
    expect(result.apiServer.finallyDeleted.map((p) => p.uid)).toEqual([real.uid]);
    const exit = await exitInfo(node.cri, real.containers[0]!.id);
    expect(exit).toMatchObject({ state: 'exited', exitCode: 137 });
    const termToKill = exit.finishedAt! - (await firstSigterm(real.containers[0]!))!.time;
    expect(termToKill).toBeGreaterThanOrEqual(1_700);
    expect(termToKill).toBeLessThan(5_000);
    expect(cluster.api.getPod(real.namespace, real.name)).toBeUndefined();
    const watch = cluster.api.requests.find((r) => r.query.get('watch') === '1');
    expect(watch?.query.get('allowWatchBookmarks')).toBe('true');
  }, 120_000);
});
