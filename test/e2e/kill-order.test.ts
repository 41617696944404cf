/**
 * The container kill as the kubelet's runtime manager does it, on a real containerd with the built
 * CLI:
 * - sidecars last: with the API's spec (initContainers[].restartPolicy: Always), a sidecar that
 *   exits at once on SIGTERM gets it only after the main container (2 s to exit) has exited;
 * - an httpGet preStop hook of a host-network pod reaches a test HTTP server on the node before
 *   the container's SIGTERM, and the kill's JSON result carries the hook's outcome.
 *
 * The sidecar test runs on a node of its own: sync-known acts on every pod of the runtime.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { useKubeApiServer } from '../support/use-kube-api-server.js';
import { requireBuild, runPodctl } from './support/cli.js';
import { useContainerd, usePrivateNode } from './support/context.js';
import { describeContainerd } from './support/env.js';
import { exitInfo, firstSigterm } from './support/observe.js';

const NODE = 'podctl-e2e-order';

describeContainerd(import.meta.url, 'httpGet preStop hooks on containerd', () => {
  const node = useContainerd();
  let stateDir: string;
  let server: http.Server;
  let port: number;
  const requests: { at: number; url: string; header: string | undefined }[] = [];

  beforeAll(async () => {
    requireBuild();
    server = http.createServer((req, res) => {
      requests.push({ at: Date.now(), url: req.url ?? '', header: req.headers['x-podctl-test'] as string | undefined });
      res.end('drained');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
  });
  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-hook-'));
    requests.length = 0;
  });
  afterEach(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  it("a host-network pod's httpGet hook reaches the node's server before SIGTERM; the result says so", async () => {
    const real = await node.pods.create({
      name: 'hook',
      hostNetwork: true,
      containers: [{ name: 'web', mode: 'default', preStop: { httpGet: { path: '/drain', port, httpHeaders: [{ name: 'X-Podctl-Test', value: 'yes' }] } } }],
    });
    const run = await runPodctl(['kill', `${real.namespace}/${real.name}`, '--grace', '5', '--json'], { endpoint: `unix://${node.socket}`, stateDir, timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { hooks: { container: string; type: string; outcome: string; ms: number }[]; warnings: string[] };
    expect(result.hooks).toEqual([expect.objectContaining({ container: 'web', type: 'httpGet', outcome: 'succeeded' })]);
    expect(result.warnings).toEqual([]);
    expect(requests).toEqual([expect.objectContaining({ url: '/drain', header: 'yes' })]);
    const term = await firstSigterm(real.containers[0]!);
    expect(term).toBeDefined();
    expect(requests[0]!.at).toBeLessThanOrEqual(term!.time);
  }, 90_000);

  it('a hook that cannot run is a warning in the result, and the container is still stopped', async () => {
    const real = await node.pods.create({ name: 'hook-bad', hostNetwork: true, containers: [{ name: 'web', mode: 'default', preStop: { httpGet: { path: '/x', port: 'admin' } } }] });
    const run = await runPodctl(['kill', `${real.namespace}/${real.name}`, '--grace', '3', '--json'], { endpoint: `unix://${node.socket}`, stateDir, timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { hooks: { outcome: string }[]; warnings: string[] };
    expect(result.hooks).toEqual([expect.objectContaining({ type: 'httpGet', outcome: 'not-run', message: 'no container port named "admin"' })]);
    expect(result.warnings).toEqual([expect.stringContaining('did not run: no container port named "admin"')]);
    expect(await exitInfo(node.cri, real.containers[0]!.id)).toMatchObject({ state: 'exited', exitCode: 0 });
  }, 90_000);
});

describeContainerd(import.meta.url, "sidecars last on containerd, with the API server's spec", () => {
  beforeAll(() => requireBuild());
  const node = usePrivateNode('order');
  const cluster = useKubeApiServer('podctl-e2e-order-kubeconfig-');
  let stateDir: string;

  beforeAll(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-order-state-'));
  });
  afterAll(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  it('the sidecar (exits at once) is stopped only after the main container (2 s after SIGTERM) has exited', async () => {
    const real = await node.pods.create({
      name: 'sidecar',
      terminationGracePeriodSeconds: 30,
      containers: [
        { name: 'main', mode: { graceful: 2 } },
        { name: 'proxy', mode: 'default' },
      ],
    });
    const spec = structuredClone(real.pod) as Record<string, any>;
    const [main, proxy] = spec.spec.containers;
    spec.spec.containers = [main];
    spec.spec.initContainers = [{ ...proxy, restartPolicy: 'Always' }];
    spec.spec.nodeName = NODE;
    cluster.api.addPod(spec);
    cluster.api.deletePod(real.namespace, real.name, 10);

    const run = await runPodctl(['sync-known', '--json', '--log-level', 'debug', '--kubeconfig', cluster.kubeconfig, '--node', NODE], {
      endpoint: `unix://${node.socket}`,
      stateDir,
      timeoutMs: 90_000,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('sidecars proxy stop after the main containers');

    const mainExit = await exitInfo(node.cri, real.containers[0]!.id);
    const proxyExit = await exitInfo(node.cri, real.containers[1]!.id);
    expect(mainExit).toMatchObject({ state: 'exited', exitCode: 0 });
    expect(proxyExit).toMatchObject({ state: 'exited', exitCode: 0 });
    const mainTerm = (await firstSigterm(real.containers[0]!))!.time;
    const proxyTerm = (await firstSigterm(real.containers[1]!))!.time;
    // main took its ~2 s; the sidecar got its SIGTERM only once main had exited
    expect(mainExit.finishedAt! - mainTerm).toBeGreaterThanOrEqual(1_800);
    expect(proxyTerm).toBeGreaterThanOrEqual(mainExit.finishedAt! - 50);
    expect(proxyExit.finishedAt!).toBeGreaterThanOrEqual(mainExit.finishedAt!);
  }, 120_000);
});
