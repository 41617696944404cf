/**
 * `podctl kill` with and without the API server's spec, on a real containerd, timed per container:
 * - with an API server (the local one the tests use) the kill hands the API's spec to the syncer:
 *   the sidecar (a restartable init container that exits at once on SIGTERM) gets its SIGTERM only
 *   after the main container (2 s to exit) has exited;
 * - without one the same pod is stopped in parallel (both SIGTERMs together), and the result says
 *   `ordering: parallel, no pod spec`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { useKubeApiServer } from '../support/use-kube-api-server.js';
import { requireBuild, runPodctl } from './support/cli.js';
import { useContainerd } from './support/context.js';
import { describeContainerd } from './support/env.js';
import { exitInfo, firstSigterm } from './support/observe.js';

const NODE = 'podctl-e2e-kill-spec';

describeContainerd(import.meta.url, "kill with and without the API server's spec on containerd", () => {
  beforeAll(() => requireBuild());
  const node = useContainerd();
  const cluster = useKubeApiServer('podctl-e2e-kill-spec-kubeconfig-');
  let stateDir: string;

  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-kill-spec-'));
  });
  afterEach(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  const sidecarPod = (name: string) =>
    node.pods.create({
      name,
      terminationGracePeriodSeconds: 30,
      containers: [
        { name: 'main', mode: { graceful: 2 } },
        { name: 'proxy', mode: 'default' },
      ],
    });

  it('with the API server: the sidecar is signalled only after the main container exited', async () => {
    const real = await sidecarPod('spec-sidecar');
    const spec = structuredClone(real.pod) as Record<string, any>;
    const [main, proxy] = spec.spec.containers;
    spec.spec.containers = [main];
    spec.spec.initContainers = [{ ...proxy, restartPolicy: 'Always' }];
    spec.spec.nodeName = NODE;
    cluster.api.addPod(spec);

    const run = await runPodctl(['kill', `${real.namespace}/${real.name}`, '--json', '--kubeconfig', cluster.kubeconfig, '--node', NODE], {
      endpoint: `unix://${node.socket}`,
      stateDir,
      timeoutMs: 90_000,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ pods: [{ uid: real.uid, outcome: 'terminated', ordering: 'sidecars last' }] });

    const mainExit = await exitInfo(node.cri, real.containers[0]!.id);
    const mainTerm = (await firstSigterm(real.containers[0]!))!.time;
    const proxyTerm = (await firstSigterm(real.containers[1]!))!.time;
    // main took its ~2 s; the sidecar got its SIGTERM only once main had exited
    expect(mainExit.finishedAt! - mainTerm).toBeGreaterThanOrEqual(1_800);
    expect(proxyTerm).toBeGreaterThanOrEqual(mainExit.finishedAt! - 50);
    console.log(`kill --kubeconfig: main SIGTERM→exit ${mainExit.finishedAt! - mainTerm} ms; sidecar SIGTERM ${proxyTerm - mainExit.finishedAt!} ms after main's exit`);
  }, 120_000);

  it('without one: both containers are signalled together, and the result says ordering: parallel, no pod spec', async () => {
    const real = await sidecarPod('blind-sidecar');
    const run = await runPodctl(['kill', `${real.namespace}/${real.name}`, '--json'], { endpoint: `unix://${node.socket}`, stateDir, timeoutMs: 90_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ pods: [{ uid: real.uid, outcome: 'terminated', ordering: 'parallel, no pod spec' }] });
    const mainExit = await exitInfo(node.cri, real.containers[0]!.id);
    const proxyTerm = (await firstSigterm(real.containers[1]!))!.time;
    // the proxy was signalled before main had exited (no spec: no order)
    expect(proxyTerm).toBeLessThan(mainExit.finishedAt!);
    console.log(`kill without an API server: sidecar SIGTERM ${mainExit.finishedAt! - proxyTerm} ms before main's exit`);
  }, 120_000);
});
