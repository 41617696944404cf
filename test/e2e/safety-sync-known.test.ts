/**
 * sync-known's safety rules end to end, on a containerd node of this file's own (sync-known acts on
 * every pod of the runtime it is pointed at, so it must not meet other files' pods):
 * - a static pod (kubernetes.io/config.source=file) is never terminated because a list omits it:
 *   from a file, and from an API server that lists only its mirror pod;
 * - --dry-run changes nothing and predicts what the real run then does.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, beforeEach, afterEach, expect, it } from 'vitest';
import { writeKubeconfig } from '../kube/support.js';
import { describeContainerd } from './support/env.js';
import { requireBuild, runPodctl } from './support/cli.js';
import { usePrivateNode } from './support/context.js';
import { exitInfo } from './support/observe.js';
import type { RealPod } from './support/pods.js';
import { until } from '../support/wait.js';

interface PodName {
  uid: string;
  namespace: string;
  name: string;
}

interface SyncJson {
  dryRun: boolean;
  keptStatic: PodName[];
  orphanedRuntimePods: PodName[];
  workers: (PodName & { orphan: boolean })[];
}

describeContainerd(import.meta.url, 'sync-known safety against containerd', () => {
  beforeAll(() => requireBuild());
  const node = usePrivateNode('safe');
  let stateDir: string;

  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-safe-sync-'));
  });
  afterEach(async () => {
    await node.pods.removeAll();
    await rm(stateDir, { recursive: true, force: true });
  });

  const podctl = (args: string[]) => runPodctl(args, { endpoint: `unix://${node.socket}`, stateDir, timeoutMs: 60_000 });
  const running = async (pod: RealPod): Promise<boolean> => (await exitInfo(node.cri, pod.containers[0]!.id)).state === 'running';

  it('sync-known from a file keeps a static pod the file omits, terminates the api pod it omits, and predicts it with --dry-run', async () => {
    const app = `keep-${Date.now().toString(36)}`;
    const staticPod = await node.pods.create({ name: 'etcd', namespace: 'kube-system', configSource: 'file', labels: { app } });
    const wanted = await node.pods.create({ name: 'wanted', labels: { app } });
    const orphan = await node.pods.create({ name: 'orphan', labels: { app }, terminationGracePeriodSeconds: 2 });
    const desired = join(stateDir, '..', `${app}.json`);
    // every other pod on this shared node is desired too: only `orphan` is missing from the list
    const others = (await node.cri.listPodSandbox()).filter((s) => s.state === 0).map((s) => s.metadata?.uid ?? '');
    const items = [wanted].map((p) => p.pod);
    const keepOthers = others
      .filter((uid) => ![staticPod.uid, wanted.uid, orphan.uid].includes(uid))
      .map((uid) => ({ metadata: { uid, name: `other-${uid.slice(0, 8)}`, namespace: 'default' }, spec: { containers: [] } }));
    await writeFile(desired, JSON.stringify({ kind: 'PodList', items: [...items, ...keepOthers] }));
    try {
      const plan = await podctl(['sync-known', '--desired', desired, '--dry-run', '--json']);
      expect(plan.code, plan.stderr).toBe(0);
      const predicted = JSON.parse(plan.stdout) as SyncJson;
      expect(predicted.dryRun).toBe(true);
      expect(predicted.orphanedRuntimePods.map((p) => p.uid)).toEqual([orphan.uid]);
      expect(predicted.keptStatic.map((p) => p.uid)).toEqual([staticPod.uid]);
      // the dry run stopped nothing and wrote no checkpoint
      expect(await running(orphan)).toBe(true);
      for (const folder of ['pods', 'leases']) expect(existsSync(join(stateDir, folder)) ? readdirSync(join(stateDir, folder)).filter((n) => !n.startsWith('.')) : []).toEqual([]);

      const run = await podctl(['sync-known', '--desired', desired, '--json']);
      expect(run.code, run.stderr).toBe(0);
      const result = JSON.parse(run.stdout) as SyncJson;
      expect(result.dryRun).toBe(false);
      expect(result.orphanedRuntimePods.map((p) => p.uid)).toEqual(predicted.orphanedRuntimePods.map((p) => p.uid));
      expect(result.keptStatic.map((p) => p.uid)).toEqual([staticPod.uid]);
      await until('the orphan stopped', async () => !(await running(orphan)), { timeoutMs: 20_000, everyMs: 100 });
      // the folders the dry run was checked in are where the real run recorded its driving of the orphan
      expect(readdirSync(join(stateDir, 'leases')).some((n) => n.startsWith(`${orphan.uid}@`))).toBe(true);
      expect(await running(staticPod)).toBe(true);
      expect(await running(wanted)).toBe(true);
    } finally {
      await rm(desired, { force: true });
    }
  });

  it('sync-known from an API server keeps the static pod running, matched to its mirror pod or with no mirror pod at all', async () => {
    const staticPod = await node.pods.create({ name: 'kube-apiserver', namespace: 'kube-system', configSource: 'file' });
    await node.pods.create({ name: 'web-api', namespace: 'default' }); // the API's list is never empty here
    const others = (await node.cri.listPodSandbox()).filter((s) => s.state === 0 && s.metadata?.uid !== staticPod.uid);
    // the API holds the mirror pod: same full name, its own UID, the config.mirror annotation
    const mirror = {
      metadata: { name: staticPod.name, namespace: staticPod.namespace, uid: `mirror-${staticPod.uid}`, annotations: { 'kubernetes.io/config.mirror': 'hash', 'kubernetes.io/config.source': 'api' } },
      spec: { nodeName: 'node-1', containers: [{ name: 'main', image: 'x' }] },
    };
    const keep = others.map((s) => ({ metadata: { uid: s.metadata?.uid, name: s.metadata?.name, namespace: s.metadata?.namespace }, spec: { nodeName: 'node-1', containers: [] } }));
    let withMirror = true;
    const server = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET' && req.url?.startsWith('/api/v1/pods'))
        res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '7' }, items: withMirror ? [mirror, ...keep] : keep }));
      else {
        res.statusCode = 404;
        res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 }));
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const kubeconfig = writeKubeconfig(stateDir, (server.address() as AddressInfo).port);
      // the mirror pod stands for the static pod (matched by full name, as the kubelet does)
      const run = await podctl(['sync-known', '--kubeconfig', kubeconfig, '--node', 'node-1', '--json']);
      expect(run.code, run.stderr).toBe(0);
      const result = JSON.parse(run.stdout) as SyncJson & { api?: { mirrors: { namespace: string; name: string; staticUid: string | null }[] } };
      expect(result.api?.mirrors).toContainEqual({ namespace: staticPod.namespace, name: staticPod.name, staticUid: staticPod.uid });
      expect(result.orphanedRuntimePods.map((p) => p.uid)).not.toContain(staticPod.uid);
      expect(await running(staticPod)).toBe(true);
      // no mirror pod (not yet created, or deleted): the static pod is still desired by its manifest
      withMirror = false;
      const again = await podctl(['sync-known', '--kubeconfig', kubeconfig, '--node', 'node-1', '--json']);
      expect(again.code, again.stderr).toBe(0);
      const second = JSON.parse(again.stdout) as SyncJson;
      expect(second.keptStatic.map((p) => p.uid)).toContain(staticPod.uid);
      expect(second.orphanedRuntimePods.map((p) => p.uid)).not.toContain(staticPod.uid);
      expect(await running(staticPod)).toBe(true);
    } finally {
      server.close();
    }
  });
});
