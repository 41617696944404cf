/**
 * The agent's maintenance drain keeps its report: the drain asked by the Node's annotation (the
 * local API server; the CRI simulator; the kubelet down, so over CRI) ends with a Node Event that
 * names the report kept in the state dir, and `podctl report --last-drain` draws that drain.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/cri/simulator/index.js';
import { connectKube } from '../../../src/kube/index.js';
import { createMetrics } from '../../../src/metrics/registry.js';
import { runAgent } from '../../../src/services/housekeeping/agent.js';
import { ApiNode } from '../../../src/services/api/api-node.js';
import type { DrainReport } from '../../../src/services/drain/report/model.js';
import { openSession } from '../../../src/session/open.js';
import type { NodeSession } from '../../../src/domain/session-api.js';
import { writeAgentKubeconfig } from '../../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../../support/kube-api-server.js';

const ROOT = process.cwd();
let server: KubeApiServer;
let sim: RunningSimulator;
let dir: string;
let session: NodeSession;
let api: ApiNode;

const PODS = [
  { name: 'web', onSigterm: 'exit' as const },
  { name: 'stubborn', onSigterm: 'ignore' as const },
];

beforeAll(async () => {
  if (!existsSync(path.join(ROOT, 'dist', 'commands', 'report.js'))) throw new Error('dist/ is missing or old: run `npm run build` first');
  server = await startKubeApiServer();
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-agent-report-'));
  sim = await startSimulator({
    socketPath: path.join(dir, 'cri.sock'),
    timeScale: 0.1,
    pods: PODS.map(({ name, onSigterm }) => ({ name, namespace: 'app', uid: `uid-${name}`, terminationGracePeriodSeconds: 10, containers: [{ name: 'c', onSigterm }] })),
  });
  server.addNode('node-1');
  server.installNodeRestriction(); // the agent writes only with its node restriction in force
  for (const { name } of PODS) {
    server.addPod({
      metadata: { name, namespace: 'app', uid: `uid-${name}` },
      spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 10, containers: [{ name: 'c' }] },
      status: { phase: 'Running' },
    });
  }
  const kube = await connectKube({ kind: 'kubeconfig', path: writeAgentKubeconfig(dir, server) }, { node: 'node-1', timeoutMs: 2_000 });
  api = new ApiNode(kube, { node: 'node-1', stateDir: path.join(dir, 'state') });
  session = await openSession({ stateDir: path.join(dir, 'state'), runtimeEndpoint: sim.endpoint, rpcTimeoutMs: 5_000 });
});
afterAll(async () => {
  await session?.close();
  api?.close();
  await sim?.close();
  await server?.stop();
});

function podctl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(ROOT, 'bin', 'run.js'), ...args],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe("the agent's maintenance drain", () => {
  it('names its report in its final Node Event; podctl report --last-drain draws it', async () => {
    const controller = new AbortController();
    const running = runAgent({
      session,
      source: { kind: 'api' },
      api,
      node: 'node-1',
      intervalMs: 100,
      stuckAfterMs: 60_000,
      metrics: createMetrics(),
      kubeletState: async () => ({ state: 'down', via: 'none', detail: 'test' }),
      signal: controller.signal,
    });
    server.updateNode('node-1', (n) => (n.metadata.annotations = { 'podctl.io/drain': 'requested' }));
    const end = Date.now() + 40_000;
    const annotation = (): string | undefined => server.nodes.get('node-1')?.metadata.annotations?.['podctl.io/drain'];
    while (annotation() !== 'done' && annotation() !== 'failed' && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    controller.abort(new DOMException('test done', 'AbortError'));
    await running;
    expect(annotation()).toBe('done');
    const events = [...server.events.values()].filter((e) => e.involvedObject?.kind === 'Node');
    const completed = events.find((e) => e.reason === 'DrainCompleted');
    expect(completed?.message).toMatch(/report \/\S+\/reports\/drain-\d{8}T\d{9}Z-\d+\.json \(podctl report --last-drain\)/);
    const file = /report (\S+\.json)/.exec(String(completed?.message))![1]!;
    expect(existsSync(file)).toBe(true);
    expect(path.dirname(path.dirname(file))).toBe(session.stateDir);

    const run = await podctl(['report', '--last-drain', '-o', 'json', '--state-dir', path.join(dir, 'state')]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(file);
    const report = JSON.parse(run.stdout) as DrainReport;
    expect(report.source).toBe('agent');
    expect(report.node).toBe('node-1');
    expect(report.pods.map((p) => [p.name, p.killedAtDeadline]).sort()).toEqual([
      ['stubborn', ['c']],
      ['web', []],
    ]);
  }, 60_000);
});
