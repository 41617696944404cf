/**
 * A drain that survives its agent, through `podctl agent` itself (the built CLI in child processes,
 * the local API server with the RBAC of deploy/, the CRI simulator, no kubelet: the drain goes over
 * CRI). An agent SIGKILLed mid-drain leaves its Node `draining`; the agent started after it resumes
 * the drain (DrainResumed) and ends it `done`, the pods stopped. An agent stopped by SIGTERM
 * mid-drain exits 0, says it handed the drain on (DrainHandedOn) and never writes `failed`. The
 * agent knows its own pod from POD_UID, as the DaemonSet gives it, and never stops it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ContainerStateCode } from '../../src/cri/client/codes.js';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { writeAgentKubeconfig } from '../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';
import { until } from '../support/wait.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');

let server: KubeApiServer;
let sim: RunningSimulator;
let dir: string;
let kubeconfig: string;
const agents: ChildProcess[] = [];

const PODS = [
  { namespace: 'app', name: 'web', uid: 'uid-web', onSigterm: 'exit' as const },
  // ignores SIGTERM: the drain stops it only at the end of its grace (the drain lasts that long)
  { namespace: 'app', name: 'stubborn', uid: 'uid-stubborn', onSigterm: 'ignore' as const },
  { namespace: 'podctl-system', name: 'podctl-agent-x', uid: 'uid-agent', onSigterm: 'exit' as const },
];

beforeEach(async () => {
  if (!existsSync(path.join(ROOT, 'dist', 'commands', 'agent.js'))) throw new Error('dist/ is missing: run `npm run build` before the CLI tests');
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-agent-resume-'));
  server = await startKubeApiServer();
  server.addNode('node-1');
  server.installNodeRestriction();
  sim = await startSimulator({
    socketPath: path.join(dir, 'cri.sock'),
    timeScale: 1,
    pods: PODS.map(({ namespace, name, uid, onSigterm }) => ({ namespace, name, uid, terminationGracePeriodSeconds: 8, containers: [{ name: 'c', onSigterm }] })),
  });
  for (const { namespace, name, uid } of PODS) {
    server.addPod({
      metadata: { name, namespace, uid, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'uid-rs', controller: true }] },
      spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 8, containers: [{ name: 'c' }] },
      status: { phase: 'Running' },
    });
  }
  kubeconfig = writeAgentKubeconfig(dir, server);
});
afterEach(async () => {
  for (const agent of agents.splice(0)) if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
  await sim.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** `podctl agent` on node-1 as the DaemonSet runs it (POD_UID from the downward API); no kubelet answers its healthz. */
function startAgent(): { child: ChildProcess; exited: Promise<number | null>; output: () => string } {
  const child = spawn(
    process.execPath,
    [
      BIN,
      'agent',
      '--kubeconfig',
      kubeconfig,
      '--node',
      'node-1',
      '--runtime-endpoint',
      sim.endpoint,
      '--state-dir',
      path.join(dir, 'state'),
      '--metrics-addr',
      'none',
      '--interval',
      '200ms',
      '--kubelet-healthz',
      'http://127.0.0.1:1/healthz',
    ],
    { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '', POD_UID: 'uid-agent' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  agents.push(child);
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => text };
}

const drainAnnotation = (): string | undefined => server.nodes.get('node-1')?.metadata.annotations?.['podctl.io/drain'];
const nodeEvents = (reason: string): string[] => [...server.events.values()].filter((e) => e.involvedObject?.kind === 'Node' && e.reason === reason).map((e) => String(e.message));

/** Is a container of the pod running in the runtime? */
function running(uid: string): boolean {
  const sandboxes = sim.state.listPodSandbox(undefined).filter((s) => s.metadata?.uid === uid);
  return sandboxes.some((s) => sim.state.listContainers({ podSandboxId: s.id } as never).some((c) => c.state === ContainerStateCode.RUNNING));
}

describe('podctl agent: a drain that survives its agent', () => {
  it('an agent SIGKILLed mid-drain and restarted finishes the drain (done); its own pod keeps running', { timeout: 90_000 }, async () => {
    const first = startAgent();
    server.updateNode('node-1', (n) => (n.metadata.annotations = { 'podctl.io/drain': 'requested' }));
    await until('the first agent draining', () => drainAnnotation() === 'draining' && nodeEvents('DrainStarted').length === 1, { timeoutMs: 30_000, detail: first.output });
    await until('the stubborn pod signalled', () => !running('uid-web'), { timeoutMs: 20_000, detail: first.output });
    expect(running('uid-stubborn')).toBe(true);
    first.child.kill('SIGKILL');
    await first.exited;
    expect(drainAnnotation()).toBe('draining');

    const second = startAgent();
    await until('the resumed drain ends', () => drainAnnotation() === 'done' || drainAnnotation() === 'failed', { timeoutMs: 60_000, detail: second.output });
    expect(drainAnnotation(), second.output()).toBe('done');
    expect(nodeEvents('DrainResumed'), second.output()).toEqual([expect.stringMatching(/resumes the drain of node node-1, left podctl.io\/drain=draining/)]);
    expect(nodeEvents('DrainFailed')).toEqual([]);
    expect(running('uid-stubborn')).toBe(false);
    expect(running('uid-agent'), 'the agent never drains its own pod (POD_UID)').toBe(true);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('an agent stopped by SIGTERM mid-drain exits 0, hands the drain on in an Event and leaves the node draining, never failed', { timeout: 60_000 }, async () => {
    const agent = startAgent();
    server.updateNode('node-1', (n) => (n.metadata.annotations = { 'podctl.io/drain': 'requested' }));
    await until('the agent draining', () => drainAnnotation() === 'draining' && nodeEvents('DrainStarted').length === 1, { timeoutMs: 30_000, detail: agent.output });
    agent.child.kill('SIGTERM');
    expect(await agent.exited, agent.output()).toBe(0);
    expect(drainAnnotation()).toBe('draining');
    expect(nodeEvents('DrainHandedOn'), agent.output()).toEqual([expect.stringMatching(/stopped mid-drain of node node-1: the node stays podctl.io\/drain=draining/)]);
    expect(nodeEvents('DrainFailed')).toEqual([]);
    expect(agent.output()).toMatch(/the agent that starts next on it resumes the drain/);
  });
});
