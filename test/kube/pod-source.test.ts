/** This node's pods listed and watched as the kubelet's config source: bookmarks, resume, relist on 410. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeAgentKubeconfig } from './support.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';
import { connectKube } from '../../src/kube/index.js';
import { NodePodSource, type PodSourceEvent } from '../../src/kube/pod-source.js';
import { until } from '../support/wait.js';

/** The bound of a wait here (for a loaded machine, not a speed goal) and its pace. */
const WAIT = { timeoutMs: 5_000, everyMs: 20 };

let server: KubeApiServer;
let kubeconfig: string;
beforeAll(async () => {
  server = await startKubeApiServer();
  kubeconfig = writeAgentKubeconfig(mkdtempSync(path.join(tmpdir(), 'podctl-source-')), server);
});
afterAll(() => server.stop());
// every request podctl made as the agent is one the shipped RBAC grants
afterEach(() => expect(server.denied().map((r) => `${r.method} ${r.path}`)).toEqual([]));

const pod = (name: string, node = 'node-1') => ({ metadata: { name, namespace: 'web' }, spec: { nodeName: node, containers: [] }, status: { phase: 'Running' } });

describe('NodePodSource', () => {
  it('lists, follows the watch, advances on bookmarks, resumes a closed watch, relists after 410 Gone', async () => {
    server.addPod(pod('a'));
    server.addPod(pod('elsewhere', 'node-2'));
    const kube = await connectKube({ kind: 'kubeconfig', path: kubeconfig }, { node: 'node-1', timeoutMs: 2_000 });
    const events: PodSourceEvent[] = [];
    const source = new NodePodSource(kube, { onChange: (e) => events.push(e), baseBackoffMs: 20 });
    const controller = new AbortController();
    const running = source.run(controller.signal);
    try {
      await source.synced();
      const names = (): string[] =>
        source
          .pods()
          .map((p) => p.metadata?.name ?? '')
          .sort();
      expect(names()).toEqual(['a']);

      server.addPod(pod('b'));
      server.deletePod('web', 'a', 5); // graceful: MODIFIED with deletionTimestamp
      await until("b and a's deletion", () => names().join() === 'a,b' && source.pods().some((p) => p.metadata?.deletionGracePeriodSeconds === 5), WAIT);

      server.bookmark();
      await until('a bookmark', () => events.some((e) => e.kind === 'bookmark'), WAIT);
      expect(source.resourceVersion).toBe(server.resourceVersion);

      // the server ends the watch: the source resumes from the last resourceVersion, replaying nothing
      const watchesBefore = server.requests.filter((r) => r.query.get('watch') === '1').length;
      server.closeWatches();
      await until('a new watch', () => server.requests.filter((r) => r.query.get('watch') === '1').length > watchesBefore, WAIT);
      const resumed = server.requests.filter((r) => r.query.get('watch') === '1').at(-1);
      expect(resumed?.query.get('resourceVersion')).toBe(source.resourceVersion);
      expect(resumed?.query.get('allowWatchBookmarks')).toBe('true');
      expect(source.lists).toBe(1);

      // the server goes away; meanwhile b is deleted, c added, and the history compacted: the resumed
      // watch gets 410 Expired and the source relists (backing off while the server is down)
      await server.stop();
      server.deletePod('web', 'b', 0);
      server.addPod(pod('c'));
      server.compact();
      await new Promise((r) => setTimeout(r, 100));
      await server.start();
      await until('a relist', () => source.lists === 2, { ...WAIT, timeoutMs: 10_000 });
      expect(events.some((e) => e.kind === 'error')).toBe(true);
      expect(events.some((e) => e.kind === 'relist')).toBe(true);
      await until('c listed', () => names().join() === 'a,c', WAIT);
    } finally {
      controller.abort();
      await running;
    }
  });
});
