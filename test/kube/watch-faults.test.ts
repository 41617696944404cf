/**
 * A watch that cannot hang, and one that backs off as the server asks: against the local API server,
 * a watch that goes silent (a half-open connection: no event, no bookmark) is cut after the idle
 * bound and resumed from its last resourceVersion, missing nothing; a watch answered 429 or 503 with
 * Retry-After waits at least that long before it asks again; a server that accepts connections and
 * never answers fails a list within the client's deadline.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeKubeconfig } from './support.js';
import { startKubeApiServer, type KubeApiServer, type RecordedRequest } from '../support/kube-api-server.js';
import { connectKube, KubeError } from '../../src/kube/index.js';
import { NodePodSource, type PodSourceEvent } from '../../src/kube/pod-source.js';
import { until } from '../support/wait.js';

/** The bound of a wait here (for a loaded machine, not a speed goal) and its pace. */
const WAIT = { timeoutMs: 10_000, everyMs: 20 };

let server: KubeApiServer;
let kubeconfig: string;
beforeAll(async () => {
  server = await startKubeApiServer();
  kubeconfig = writeKubeconfig(mkdtempSync(path.join(tmpdir(), 'podctl-watch-faults-')), server.port);
});
afterAll(() => server.stop());

const pod = (name: string) => ({ metadata: { name, namespace: 'web' }, spec: { nodeName: 'node-1', containers: [] }, status: { phase: 'Running' } });
const isPodWatch = (r: RecordedRequest): boolean => r.path === '/api/v1/pods' && r.query.get('watch') === '1';

describe('watch faults', () => {
  it('a watch gone silent is cut after the idle bound and resumed from its resourceVersion; nothing is missed', async () => {
    server.addPod(pod('a'));
    const kube = await connectKube({ kind: 'kubeconfig', path: kubeconfig }, { node: 'node-1', timeoutMs: 2_000, watchIdleMs: 600 });
    const events: PodSourceEvent[] = [];
    const source = new NodePodSource(kube, { onChange: (e) => events.push(e), baseBackoffMs: 20, maxBackoffMs: 50 });
    const controller = new AbortController();
    const running = source.run(controller.signal);
    try {
      await source.synced();
      await until('the watch', () => server.openWatches === 1, WAIT);
      const watchesBefore = server.requests.filter(isPodWatch).length;
      const rvBefore = source.resourceVersion;
      server.silence(); // the connection stays open, nothing more comes through it
      server.addPod(pod('b')); // lost on the silent stream
      await until('a resumed watch', () => server.requests.filter(isPodWatch).length > watchesBefore, WAIT);
      const resumed = server.requests.filter(isPodWatch).at(-1);
      expect(resumed?.query.get('resourceVersion')).toBe(rvBefore);
      await until('b, replayed by the resumed watch', () => source.pods().some((p) => p.metadata?.name === 'b'), WAIT);
      expect(source.lists).toBe(1);
      const cut = events.find((e) => e.kind === 'error');
      expect(cut?.kind === 'error' && cut.message).toMatch(/nothing from the API server http:\/\/127\.0\.0\.1:\d+ for 600ms/);
    } finally {
      controller.abort();
      await running;
    }
  }, 30_000);

  it.each([429, 503])(
    'a watch answered %i with Retry-After waits it before it asks again',
    async (code) => {
      const kube = await connectKube({ kind: 'kubeconfig', path: kubeconfig }, { node: 'node-1', timeoutMs: 2_000 });
      const source = new NodePodSource(kube, { baseBackoffMs: 20, maxBackoffMs: 50 });
      const controller = new AbortController();
      const running = source.run(controller.signal);
      try {
        await source.synced();
        await until('the watch', () => server.openWatches >= 1, WAIT);
        server.inject({ method: 'GET', path: /^\/api\/v1\/pods$/, watch: true, status: code, retryAfter: 1 });
        const before = server.requests.length;
        server.closeWatches();
        await until('the watch after the 429', () => server.requests.slice(before).filter(isPodWatch).length >= 2, WAIT);
        const [limited, next] = server.requests.slice(before).filter(isPodWatch);
        expect(limited?.status).toBe(code);
        expect(next!.at - limited!.at).toBeGreaterThanOrEqual(1_000); // the backoff alone is ≤ 50 ms
        expect(source.lists).toBe(1);
      } finally {
        controller.abort();
        await running;
      }
    },
    30_000,
  );

  it('a server that accepts connections and never answers fails a list within the deadline', async () => {
    const kube = await connectKube({ kind: 'kubeconfig', path: kubeconfig }, { node: 'node-1', timeoutMs: 300, retry: { attempts: 2, baseMs: 10, maxMs: 10 } });
    server.stall = true;
    try {
      const started = Date.now();
      const error = await kube.listNodePodsVersioned().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(KubeError);
      expect((error as KubeError).message).toMatch(/no answer from the API server http:\/\/127\.0\.0\.1:\d+ in 2 attempts of 300ms each \(\d+ms in all\)/);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      server.unstall();
    }
  }, 30_000);
});
