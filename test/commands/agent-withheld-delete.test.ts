/**
 * `podctl agent` says in its log, once per pod and reason, whose final delete it withholds and why
 * (the built CLI in a child process, the local API server with the RBAC of deploy/, the CRI
 * simulator, no kubelet): API writes withheld (the node restriction not in force), and the pod's
 * volumes unknown (a --kubelet-root that cannot be read). The pod deleted in the API is stopped on
 * the node either way; its final delete is not sent, and the line is not repeated by later steps.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ContainerStateCode } from '../../src/cri/client/codes.js';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { writeAgentKubeconfig } from '../kube/support.js';
import { requireBuilt, BIN, ROOT } from '../support/cli.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';
import { until } from '../support/wait.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

interface World {
  server: KubeApiServer;
  sim: RunningSimulator;
  dir: string;
}

/** node-1 with pod app/gone running in the simulator, deleted in the API (grace 1); `restricted`: the node restriction is in force. */
async function world(restricted: boolean): Promise<World> {
  requireBuilt('agent');
  const dir = mkdtempSync(path.join(tmpdir(), 'podctl-agent-withheld-'));
  const server = await startKubeApiServer();
  server.addNode('node-1');
  if (restricted) server.installNodeRestriction();
  const sim = await startSimulator({
    socketPath: path.join(dir, 'cri.sock'),
    timeScale: 1,
    pods: [{ name: 'gone', namespace: 'app', uid: 'uid-gone', containers: [{ name: 'c', onSigterm: 'exit' }] }],
  });
  server.addPod({
    metadata: { name: 'gone', namespace: 'app', uid: 'uid-gone' },
    spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 30, containers: [{ name: 'c' }] },
    status: { phase: 'Running' },
  });
  server.deletePod('app', 'gone', 1);
  cleanups.push(async () => {
    await sim.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { server, sim, dir };
}

/** `podctl agent` on node-1 (debug log: each full step is said), its output as it comes. */
function startAgent(w: World, extra: string[] = []): { child: ChildProcess; output: () => string } {
  const args = ['agent', '--kubeconfig', writeAgentKubeconfig(w.dir, w.server), '--node', 'node-1', '--runtime-endpoint', w.sim.endpoint, '--state-dir', path.join(w.dir, 'state')];
  args.push('--metrics-addr', 'none', '--interval', '200ms', '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--log-level', 'debug', ...extra);
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, output: () => text };
}

const count = (text: string, re: RegExp): number => text.match(new RegExp(re.source, 'g'))?.length ?? 0;

/** Is a container of the pod running in the simulator? */
function running(sim: RunningSimulator, uid: string): boolean {
  const sandboxes = sim.state.listPodSandbox(undefined).filter((s) => s.metadata?.uid === uid);
  return sandboxes.some((s) => sim.state.listContainers({ podSandboxId: s.id } as never).some((c) => c.state === ContainerStateCode.RUNNING));
}

/**
 * Runs the agent until it has stopped the pod and withheld its final delete, then for three more
 * full steps (each made to happen by a new pod of the node in the API); returns its log.
 */
async function withheldLog(w: World, extra: string[] = []): Promise<string> {
  const agent = startAgent(w, extra);
  await until('the withheld final delete said', () => /agent: final delete of app\/gone withheld: /.test(agent.output()), { timeoutMs: 30_000, detail: agent.output });
  expect(running(w.sim, 'uid-gone')).toBe(false);
  for (let i = 0; i < 3; i += 1) {
    const steps = count(agent.output(), /step sync done/);
    // an unrelated pod of the node appears in the API: the agent takes a full step for it
    w.server.addPod({ metadata: { name: `other-${i}`, namespace: 'app', uid: `uid-other-${i}` }, spec: { nodeName: 'node-1', containers: [{ name: 'c' }] }, status: { phase: 'Pending' } });
    await until(`full step after other-${i}`, () => count(agent.output(), /step sync done/) > steps, { timeoutMs: 30_000, detail: agent.output });
  }
  agent.child.kill('SIGTERM');
  await new Promise((resolve) => agent.child.once('exit', resolve));
  expect(w.server.getPod('app', 'gone'), 'the final delete was not sent').toBeDefined();
  return agent.output();
}

describe('podctl agent: a withheld final delete is said once', { timeout: 90_000 }, () => {
  it('API writes withheld (no node restriction): which pod, and why, once', async () => {
    const log = await withheldLog(await world(false));
    const lines = log.split('\n').filter((l) => l.includes('agent: final delete of app/gone'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/final delete of app\/gone withheld: API writes are withheld \(.*node restriction/);
  });

  it('volumes unknown (the kubelet root cannot be read): which pod, and why, once', async () => {
    const w = await world(true);
    const log = await withheldLog(w, ['--kubelet-root', path.join(w.dir, 'no-kubelet')]);
    const lines = log.split('\n').filter((l) => l.includes('agent: final delete of app/gone'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/final delete of app\/gone withheld: volumes unknown: the kubelet's pods directory .*no-kubelet\/pods cannot be read \(ENOENT/);
  });
});
