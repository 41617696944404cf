/**
 * The agent fails closed: against the local API server (RBAC from deploy/) and the CRI simulator,
 * an agent whose node restriction is not in force — no policy, a token without the node claim or
 * bound to another node, a server without admissionregistration.k8s.io/v1 — makes zero API write
 * requests (counted by the server) while its housekeeping on the node goes on; it says once why and
 * how to fix it, podctl_api_writes_enabled is 0 and /healthz says degraded. The check repeats: the
 * policy applied later enables writes, deleted later disables them. `--unrestricted-api-writes`
 * writes regardless, loudly.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/cri/simulator/index.js';
import type { NodeSession } from '../../../src/domain/session-api.js';
import { connectKube } from '../../../src/kube/index.js';
import { checkNodeRestriction } from '../../../src/kube/node-restriction.js';
import { Reporter } from '../../../src/lib/reporter.js';
import { createMetrics, type PodctlMetrics } from '../../../src/metrics/registry.js';
import { runAgent, type MetricsAddress } from '../../../src/services/housekeeping/agent.js';
import { ApiNode } from '../../../src/services/api/api-node.js';
import { openSession } from '../../../src/session/open.js';
import { writeKubeconfig } from '../../kube/support.js';
import { startKubeApiServer, type AgentIdentity, type KubeApiServer } from '../../support/kube-api-server.js';
import { TEST_KUBELET_ROOT } from '../../support/kubelet-root.js';

let server: KubeApiServer;
let sim: RunningSimulator;
let dir: string;
let session: NodeSession;

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-agent-writes-'));
  server = await startKubeApiServer();
  server.addNode('node-1');
  sim = await startSimulator({
    socketPath: path.join(dir, 'cri.sock'),
    timeScale: 1,
    pods: [
      { name: 'web', namespace: 'app', uid: 'uid-web', containers: [{ name: 'c', onSigterm: 'exit' }] },
      { name: 'deleted', namespace: 'app', uid: 'uid-deleted', containers: [{ name: 'c', onSigterm: 'exit' }] },
      // in the runtime, not in the API: an orphan the agent finishes over CRI
      { name: 'orphan', namespace: 'app', uid: 'uid-orphan', containers: [{ name: 'c', onSigterm: 'exit' }] },
    ],
    faults: [],
  });
  for (const name of ['web', 'deleted']) {
    server.addPod({
      metadata: { name, namespace: 'app', uid: `uid-${name}` },
      spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 30, containers: [{ name: 'c' }] },
      status: { phase: 'Running' },
    });
  }
  server.deletePod('app', 'deleted', 1);
  session = await openSession({ stateDir: path.join(dir, 'state'), runtimeEndpoint: sim.endpoint, rpcTimeoutMs: 5_000 });
});
afterEach(async () => {
  await session.close();
  await sim.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  lines: string[];
  metrics: PodctlMetrics;
  health: () => Promise<{ status: number; text: string }>;
}

/** Runs the agent as the DaemonSet's (its identity given) until `until` holds (bounded), then stops it. */
async function runAgentAs(identity: Omit<AgentIdentity, 'node'>, until: (run: Run) => boolean | Promise<boolean>, options: { unrestricted?: boolean; boundMs?: number } = {}): Promise<Run> {
  const token = server.addAgent({ node: 'node-1', ...identity });
  const kube = await connectKube({ kind: 'kubeconfig', path: writeKubeconfig(dir, server.port, 'agent', token) }, { node: 'node-1', timeoutMs: 2_000, retry: { budgetMs: 1_000 } });
  const lines: string[] = [];
  const reporter = new Reporter('info', { write: (chunk: string) => (lines.push(...chunk.split('\n').filter(Boolean)), true), isTTY: false });
  const api = new ApiNode(kube, { node: 'node-1', stateDir: path.join(dir, 'state'), reporter });
  const metrics = createMetrics();
  let listen: MetricsAddress | undefined;
  const run: Run = {
    lines,
    metrics,
    health: async () => {
      const res = await fetch(`http://${listen!.host}:${listen!.port}/healthz`);
      return { status: res.status, text: await res.text() };
    },
  };
  const controller = new AbortController();
  let checking = false;
  let failure: unknown;
  const bound = setTimeout(() => controller.abort(new DOMException('bound', 'AbortError')), options.boundMs ?? 20_000);
  try {
    await runAgent({
      session,
      source: { kind: 'api' },
      api,
      node: 'node-1',
      kubeletRoot: TEST_KUBELET_ROOT,
      intervalMs: 150,
      stuckAfterMs: 60_000,
      writeCheckEveryMs: 300,
      ...(options.unrestricted ? { unrestrictedApiWrites: true } : {}),
      listen: { host: '127.0.0.1', port: 0 },
      onListening: (a) => (listen = a),
      metrics,
      reporter,
      signal: controller.signal,
      onStep: () => {
        if (checking || controller.signal.aborted) return;
        checking = true;
        Promise.resolve()
          .then(() => until(run))
          .then(
            (done) => {
              checking = false;
              if (done) controller.abort(new DOMException('done', 'AbortError'));
            },
            (error: unknown) => {
              failure ??= error;
              controller.abort(new DOMException('check failed', 'AbortError'));
            },
          );
      },
    });
  } finally {
    clearTimeout(bound);
    api.close();
  }
  if (failure !== undefined) throw failure as Error;
  return run;
}

const stopped = async (uid: string): Promise<boolean> => (await session.getPod(uid))?.containersRunning === 0;
const gauge = async (metrics: PodctlMetrics, name: string): Promise<string | undefined> => new RegExp(`^${name} (\\S+)$`, 'm').exec(await metrics.exposition())?.[1];
const writesWithheld = (lines: string[]): string[] => lines.filter((l) => l.includes('API writes disabled'));

describe('the agent fails closed: no API write until its node restriction is in force', () => {
  it('without the policy: zero write requests while housekeeping goes on; said once; metric 0; /healthz degraded; applied later, writes begin; deleted later, they stop', async () => {
    let phase: 'without' | 'applied' | 'deleted' = 'without';
    let withoutChecked = false;
    let healthWithout = { status: 0, text: '' };
    let metricWithout: string | undefined;
    let recheck: string[] = [];
    const run = await runAgentAs({}, async (r) => {
      if (phase === 'without') {
        // node-local work goes on: the orphan and the pod deleted in the API are stopped over CRI
        if (!(await stopped('uid-orphan')) || !(await stopped('uid-deleted'))) return false;
        await new Promise((resolve) => setTimeout(resolve, 700)); // a few more steps and checks
        healthWithout = await r.health();
        metricWithout = await gauge(r.metrics, 'podctl_api_writes_enabled');
        expect(server.writes().map((w) => `${w.method} ${w.path}`)).toEqual([]);
        withoutChecked = true;
        phase = 'applied';
        server.installNodeRestriction();
        return false;
      }
      if (phase === 'applied') {
        // the next check enables writes: the final delete of the deleted pod goes out
        if (server.getPod('app', 'deleted') !== undefined) return false;
        phase = 'deleted';
        server.admission.delete('validatingadmissionpolicybindings/podctl-node-restriction');
        server.requests.length = 0;
        return false;
      }
      if ((await gauge(r.metrics, 'podctl_api_writes_enabled')) !== '0') return false;
      recheck = server.requests.filter((q) => /selfsubjectreviews|admissionregistration/.test(q.path)).map((q) => `${q.method} ${q.path.replace(/\?.*/, '')}`);
      return true;
    });
    // while writes were enabled, a re-check reads the policy and its binding only (its token's claim was confirmed)
    const shut = recheck.indexOf('GET /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/podctl-node-restriction');
    expect(shut).toBeGreaterThan(0);
    expect(recheck.slice(0, shut + 1).filter((q) => q.includes('selfsubjectreviews') || q.endsWith('/admissionregistration.k8s.io/v1'))).toEqual([]);
    expect(withoutChecked).toBe(true);
    expect(await stopped('uid-web')).toBe(false); // desired: kept
    expect(metricWithout).toBe('0');
    expect(healthWithout.status).toBe(200);
    expect(healthWithout.text).toMatch(/^api-writes: withheld since .*: the node restriction is not in force/m);
    expect(healthWithout.text).toMatch(/^degraded: API writes withheld: the node restriction is not in force: ValidatingAdmissionPolicy podctl-node-restriction is not there/);
    const said = writesWithheld(run.lines);
    expect(said).toHaveLength(2); // once without the policy, once when its binding went away
    expect(said[0]).toMatch(/ValidatingAdmissionPolicy podctl-node-restriction is not there\. Fix: apply deploy\/ in full \(kubectl apply -k deploy\/\)/);
    expect(said[1]).toMatch(/ValidatingAdmissionPolicyBinding podctl-node-restriction is not there/);
    expect(run.lines.filter((l) => l.includes('API writes enabled'))).toHaveLength(1);
    expect(server.getPod('app', 'deleted')).toBeUndefined(); // finally deleted while writes were enabled
    expect(await gauge(run.metrics, 'podctl_api_writes_unrestricted')).toBe('0');
    expect(server.denied()).toEqual([]);
  }, 60_000);

  it.each([
    [
      'a token without the node claim',
      { nodeClaim: false },
      /the token of system:serviceaccount:podctl-system:podctl carries no node claim \(authentication\.kubernetes\.io\/node-name\)\. Fix: mount a projected/,
    ],
    ['a token bound to another node', { nodeClaim: 'node-2' }, /the token is bound to node node-2, not to --node node-1\. Fix: pass --node=\$\(NODE_NAME\)/],
  ] as const)(
    '%s, the policy in force: zero write requests; the orphan is finished over CRI',
    async (_, identity, message) => {
      server.installNodeRestriction();
      server.updateNode('node-1', (n) => (n.metadata.annotations = { 'podctl.io/drain': 'requested' }));
      const run = await runAgentAs(identity, async () => (await stopped('uid-orphan')) && (await stopped('uid-deleted')));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(server.writes().map((w) => `${w.method} ${w.path}`)).toEqual([]);
      expect(server.getPod('app', 'deleted')).toBeDefined(); // its final delete withheld
      // the drain request waits: no cordon, the annotation as it was
      expect(server.nodes.get('node-1')?.spec?.unschedulable).toBeUndefined();
      expect(server.nodes.get('node-1')?.metadata?.annotations).toEqual({ 'podctl.io/drain': 'requested' });
      expect(writesWithheld(run.lines)).toHaveLength(1);
      expect(writesWithheld(run.lines)[0]).toMatch(message);
      expect(await gauge(run.metrics, 'podctl_api_writes_enabled')).toBe('0');
    },
    60_000,
  );

  it('--unrestricted-api-writes: writes without the policy, said at start and in metrics', async () => {
    let health = { status: 0, text: '' };
    const run = await runAgentAs(
      {},
      async (r) => {
        if (server.getPod('app', 'deleted') !== undefined) return false;
        health = await r.health();
        return true;
      },
      { unrestricted: true },
    );
    expect(server.writes().some((w) => w.method === 'DELETE' && w.path.endsWith('/pods/deleted'))).toBe(true);
    expect(run.lines.some((l) => /--unrestricted-api-writes: API writes are enabled whether or not the node restriction is in force/.test(l))).toBe(true);
    expect(run.lines.filter((l) => /the node restriction is not in force \(ValidatingAdmissionPolicy podctl-node-restriction is not there\); API writes go on unrestricted/.test(l))).toHaveLength(1);
    expect(await gauge(run.metrics, 'podctl_api_writes_enabled')).toBe('1');
    expect(await gauge(run.metrics, 'podctl_api_writes_unrestricted')).toBe('1');
    expect(health.status).toBe(200);
    expect(health.text).toMatch(/^ok\n[^]*^api-writes: unrestricted since /m);
  }, 60_000);
});

describe('checkNodeRestriction', () => {
  const verdict = async (setup: () => void, identity: Omit<AgentIdentity, 'node'> = {}): Promise<string> => {
    setup();
    const token = server.addAgent({ node: 'node-1', ...identity });
    const kube = await connectKube({ kind: 'kubeconfig', path: writeKubeconfig(dir, server.port, 'agent', token) }, { node: 'node-1', timeoutMs: 2_000 });
    const v = await checkNodeRestriction(kube);
    server.admission.clear();
    server.servesAdmissionV1 = true;
    return v.inForce ? `in force: ${v.detail}` : v.reason;
  };

  it('says yes only for the shipped policy bound with Deny and a token bound to --node; reads only what the RBAC grants', async () => {
    expect(await verdict(() => server.installNodeRestriction())).toBe('in force: token bound to node node-1; ValidatingAdmissionPolicy podctl-node-restriction in force (Deny)');
    expect(await verdict(() => (server.servesAdmissionV1 = false))).toMatch(/does not serve ValidatingAdmissionPolicies \(admissionregistration\.k8s\.io\/v1, Kubernetes 1\.30 and later\)/);
    expect(await verdict(() => server.installNodeRestriction(({ binding }) => (binding.spec.validationActions = ['Warn', 'Audit'])))).toBe(
      'ValidatingAdmissionPolicyBinding podctl-node-restriction does not deny (validationActions: Warn, Audit)',
    );
    expect(await verdict(() => server.installNodeRestriction(({ policy }) => (policy.spec.failurePolicy = 'Ignore')))).toMatch(/failurePolicy Ignore/);
    expect(await verdict(() => server.installNodeRestriction(({ binding }) => (binding.spec.policyName = 'other')))).toMatch(/binds other, not podctl-node-restriction/);
    expect(await verdict(() => server.installNodeRestriction(({ binding }) => (binding.spec.matchResources = { namespaceSelector: { matchLabels: { x: 'y' } } })))).toMatch(/narrows/);
    expect(await verdict(() => server.installNodeRestriction(), { nodeClaim: false })).toMatch(/carries no node claim/);
    expect(server.writes()).toEqual([]);
    expect(server.denied()).toEqual([]);
  });
});
