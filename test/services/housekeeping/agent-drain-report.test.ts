/**
 * The agent's maintenance drain keeps its report: the drain asked by the Node's annotation (the
 * local API server; the CRI simulator; the kubelet down, so over CRI) ends with a Node Event that
 * names the report kept in the state dir, and `podctl report --last-drain` draws that drain.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/cri/simulator/index.js';
import { runAgent } from '../../../src/services/housekeeping/agent.js';
import { ApiNode } from '../../../src/services/api/api-node.js';
import type { DrainReport } from '../../../src/services/drain/report/model.js';
import type { NodeSession } from '../../../src/domain/session-api.js';
import { startKubeApiServer, type KubeApiServer } from '../../support/kube-api-server.js';
import { addRunningPods, agentOptions, openAgentNode } from '../../support/agent-node.js';
import { requireBuilt, runPodctl as podctl } from '../../support/cli.js';

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
  requireBuilt('report');
  server = await startKubeApiServer();
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-agent-report-'));
  sim = await startSimulator({
    socketPath: path.join(dir, 'cri.sock'),
    timeScale: 0.1,
    pods: PODS.map(({ name, onSigterm }) => ({ name, namespace: 'app', uid: `uid-${name}`, terminationGracePeriodSeconds: 10, containers: [{ name: 'c', onSigterm }] })),
  });
  server.addNode('node-1');
  server.installNodeRestriction(); // the agent writes only with its node restriction in force
  addRunningPods(
    server,
    PODS.map((p) => p.name),
    10,
  );
  ({ session, api } = await openAgentNode(server, dir, sim));
});
afterAll(async () => {
  await session?.close();
  api?.close();
  await sim?.close();
  await server?.stop();
});

describe("the agent's maintenance drain", () => {
  it('names its report in its final Node Event; podctl report --last-drain draws it', async () => {
    const controller = new AbortController();
    const running = runAgent(agentOptions({ session, api }, controller.signal));
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
