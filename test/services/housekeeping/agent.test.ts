/**
 * The agent service against the embedded simulator (a real gRPC CRI server) with a real session and
 * store: housekeeping steps drive orphans, a safety refusal changes nothing, stuck pods are logged
 * once and counted, /metrics and /healthz answer as documented, and an abort stops it promptly.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type FaultRule, type RunningSimulator, type SimPodSpec } from '../../../src/cri/simulator/index.js';
import { createMetrics } from '../../../src/metrics/registry.js';
import { healthWindowMs, parseMetricsAddr, runAgent, type AgentOptions, type AgentResult, type AgentStep, type MetricsAddress } from '../../../src/services/housekeeping/agent.js';
import { agentSelf, isSelfPod, selfContainerId } from '../../../src/services/housekeeping/agent-self.js';
import { openSession } from '../../../src/session/open.js';
import type { NodeSession, PodInfo } from '../../../src/domain/session-api.js';
import { Reporter } from '../../../src/lib/reporter.js';
import { tempDir } from '../../store/support/fixtures.js';

let dir: { path: string; cleanup: () => Promise<void> };
let sim: RunningSimulator | undefined;
let sessions: NodeSession[];

beforeEach(async () => {
  dir = await tempDir('podctl-agent-');
  sessions = [];
});
afterEach(async () => {
  await Promise.all(sessions.map((s) => s.close()));
  await sim?.close();
  sim = undefined;
  await dir.cleanup();
});

async function node(pods: SimPodSpec[], faults: FaultRule[] = []): Promise<NodeSession> {
  sim = await startSimulator({ socketPath: join(dir.path, 'cri.sock'), pods, faults, timeScale: 1 });
  const session = await openSession({ stateDir: join(dir.path, 'state'), runtimeEndpoint: sim.endpoint });
  sessions.push(session);
  return session;
}

function captureReporter(): { reporter: Reporter; lines: string[] } {
  const lines: string[] = [];
  const reporter = new Reporter('info', { write: (chunk: string) => (lines.push(...chunk.split('\n').filter(Boolean)), true), isTTY: false });
  return { reporter, lines };
}

/** Runs the agent until `until(steps)` holds (or the bound), then aborts it. */
async function runUntil(
  options: Omit<AgentOptions, 'signal' | 'metrics' | 'onStep' | 'onListening'> & { metrics?: AgentOptions['metrics'] },
  until: (steps: AgentStep[], listen: MetricsAddress | undefined) => boolean | Promise<boolean>,
  boundMs = 15_000,
): Promise<{ result: AgentResult; steps: AgentStep[]; stopMs: number }> {
  const controller = new AbortController();
  const steps: AgentStep[] = [];
  let listen: MetricsAddress | undefined;
  let stopAt = 0;
  let checking = false;
  let failure: unknown;
  const running = runAgent({
    ...options,
    metrics: options.metrics ?? createMetrics(),
    signal: controller.signal,
    onListening: (a) => (listen = a),
    onStep: (step) => {
      steps.push(step);
      if (checking || controller.signal.aborted) return;
      checking = true;
      Promise.resolve()
        .then(() => until(steps, listen))
        .then(
          (done) => {
            checking = false;
            if (done && !controller.signal.aborted) {
              stopAt = Date.now();
              controller.abort(new DOMException('test done', 'AbortError'));
            }
          },
          (error: unknown) => {
            // A check that fails (say, a request made while the agent shuts down) ends the run
            // and fails the test through `failure`, never as an unhandled rejection.
            checking = false;
            failure ??= error;
            if (!controller.signal.aborted) controller.abort(new DOMException('check failed', 'AbortError'));
          },
        );
    },
  });
  const bound = setTimeout(() => controller.abort(new DOMException('bound', 'AbortError')), boundMs);
  const result = await running.finally(() => clearTimeout(bound));
  if (failure !== undefined) throw failure instanceof Error ? failure : new Error('a check failed', { cause: failure });
  return { result, steps, stopMs: stopAt ? Date.now() - stopAt : -1 };
}

async function get(listen: MetricsAddress, path: string, method = 'GET'): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://${listen.host}:${listen.port}${path}`, { method });
  return { status: res.status, text: await res.text() };
}

describe('podctl agent (service)', () => {
  it('drives a pod missing from the desired file to termination in a housekeeping step, and serves the metrics of it', async () => {
    const session = await node([
      { name: 'keep', uid: 'uid-keep' },
      { name: 'gone', uid: 'uid-gone' },
    ]);
    const desired = join(dir.path, 'desired.json');
    await writeFile(desired, JSON.stringify([{ metadata: { uid: 'uid-keep', name: 'keep', namespace: 'default' }, spec: { containers: [{ name: 'main' }] } }]));
    let metricsText = '';
    let health = { status: 0, text: '' };
    const { result, steps, stopMs } = await runUntil(
      { session, source: { kind: 'file', path: desired }, intervalMs: 200, stuckAfterMs: 30_000, listen: { host: '127.0.0.1', port: 0 } },
      async (s, listen) => {
        const gone = await session.getPod('uid-gone');
        if (!(s.some((x) => x.orphaned.includes('uid-gone')) && gone?.containersRunning === 0 && listen)) return false;
        metricsText = (await get(listen, '/metrics')).text;
        health = await get(listen, '/healthz');
        // the kill's worker sync is observed when it returns, a moment after the container stopped
        return /^podctl_pod_worker_duration_seconds_count\{operation_type="kill"\} [1-9]/m.test(metricsText);
      },
    );
    expect(steps.find((s) => s.orphaned.includes('uid-gone'))).toBeDefined();
    expect((await session.getPod('uid-keep'))?.containersRunning).toBe(1);
    expect(result.orphanedRuntimePods).toBe(1);
    expect(stopMs).toBeGreaterThanOrEqual(0);
    expect(stopMs).toBeLessThan(5_000);
    expect(health.status).toBe(200);
    expect(health.text).toMatch(/^ok\nloop: ok, last step ended .* ago\nruntime: ok since \S+Z \(.*\)\nstate-dir: ok since /);
    // all 15 working-pods series, the runtime operations with the kubelet's names
    expect(metricsText.match(/^podctl_working_pods\{/gm)).toHaveLength(15);
    expect(metricsText).toMatch(/^podctl_runtime_operations_total\{operation_type="stop_container"\} [1-9]/m);
    expect(metricsText).toMatch(/^podctl_runtime_operations_total\{operation_type="list_podsandbox"\} [1-9]/m);
    expect(metricsText).toMatch(/^podctl_orphaned_runtime_pods_total 1$/m);
    expect(metricsText).toMatch(/^podctl_desired_pods\{static="false"\} 1$/m);
    expect(metricsText).toMatch(/^podctl_pod_worker_duration_seconds_count\{operation_type="kill"\} [1-9]/m);
  });

  it('serves nothing but /metrics, /healthz and /readyz', async () => {
    const session = await node([{ name: 'a' }]);
    const answers: Record<string, number> = {};
    await runUntil({ session, source: { kind: 'runtime' }, intervalMs: 200, stuckAfterMs: 30_000, listen: { host: '127.0.0.1', port: 0 } }, async (_s, listen) => {
      if (!listen) return false;
      answers.root = (await get(listen, '/')).status;
      answers.debug = (await get(listen, '/debug/pprof')).status;
      answers.post = (await get(listen, '/metrics', 'POST')).status;
      answers.head = (await get(listen, '/healthz', 'HEAD')).status;
      answers.ready = (await get(listen, '/readyz')).status;
      return true;
    });
    expect(answers).toEqual({ root: 404, debug: 404, post: 405, head: 200, ready: 200 });
  });

  it('refuses a step whose desired list is empty while pods run: nothing is stopped, said once', async () => {
    const session = await node([
      { name: 'a', uid: 'uid-a' },
      { name: 'b', uid: 'uid-b' },
    ]);
    const desired = join(dir.path, 'empty.json');
    await writeFile(desired, '[]');
    const { reporter, lines } = captureReporter();
    const { steps } = await runUntil({ session, source: { kind: 'file', path: desired }, intervalMs: 100, stuckAfterMs: 30_000, reporter }, (s) => s.length >= 4);
    expect(steps.every((s) => !s.ok && /empty/.test(s.error ?? ''))).toBe(true);
    expect(lines.filter((l) => l.includes('refused')).length).toBe(1);
    expect((await session.getPod('uid-a'))?.containersRunning).toBe(1);
    expect((await session.getPod('uid-b'))?.containersRunning).toBe(1);
  });

  it('logs a pod stuck past its grace + stuck-after once, and counts it in podctl_stuck_pods', async () => {
    // StopContainer always fails: the pod stays terminating past its 1 s grace
    const session = await node(
      [{ name: 'stuck', uid: 'uid-stuck', terminationGracePeriodSeconds: 1, containers: [{ name: 'c', onSigterm: 'ignore' }] }],
      [{ method: 'StopContainer', code: 2, details: 'failed to kill: device busy' }],
    );
    await session.requestKill({ uid: 'uid-stuck', gracePeriodSeconds: 1 });
    const { reporter, lines } = captureReporter();
    const metrics = createMetrics();
    let stuckGauge = '';
    const { steps } = await runUntil({ session, source: { kind: 'runtime' }, intervalMs: 150, stuckAfterMs: 300, reporter, metrics }, async (s) => {
      if (s.filter((x) => x.stuck.includes('uid-stuck')).length < 3) return false;
      stuckGauge = (await metrics.exposition())
        .split('\n')
        .filter((l) => l.startsWith('podctl_stuck_pods{') && !l.endsWith(' 0'))
        .join('\n');
      return true;
    });
    expect(
      steps.some((s) => s.stuck.includes('uid-stuck')),
      JSON.stringify(steps.slice(0, 3)),
    ).toBe(true);
    expect(stuckGauge).toMatch(/^podctl_stuck_pods\{reason="[a-z-]+"\} 1$/); // one stuck pod, under what holds it
    expect(lines.filter((l) => l.includes('default/stuck is stuck')).length).toBe(1);
    expect(steps[0]?.stuck).toEqual([]); // within grace + stuck-after at first
  });

  it('says once that the runtime does not answer and once that it answers again; the steps that could not reach it count as failed', async () => {
    const session = await node([{ name: 'a' }]);
    const { reporter, lines } = captureReporter();
    let phase: 'up' | 'down' | 'back' = 'up';
    let failedWhileDown = 0;
    const { result, steps } = await runUntil(
      { session, source: { kind: 'runtime' }, intervalMs: 100, stuckAfterMs: 30_000, reporter },
      (s) => {
        const last = s.at(-1)!;
        if (phase === 'up' && s.length >= 2) {
          sim!.setFaults([{ method: '*', code: 14, details: 'runtime restarting' }]); // UNAVAILABLE
          phase = 'down';
        } else if (phase === 'down' && !last.ok) {
          failedWhileDown += 1;
          if (failedWhileDown >= 3) {
            sim!.setFaults([]);
            phase = 'back';
          }
        } else if (phase === 'back' && last.ok) return true;
        return false;
      },
      30_000,
    );
    expect(phase).toBe('back');
    expect(steps.at(-1)!.ok).toBe(true);
    const down = lines.filter((l) => l.includes('the runtime does not answer'));
    expect(down).toHaveLength(1);
    expect(down[0]).toMatch(/^warning: agent: the runtime does not answer: .*runtime restarting.*; housekeeping waits for it \(\/readyz says 503 after 10s without an answer\)$/);
    expect(lines.filter((l) => /agent: the runtime answers again \(after \S+ without an answer\)$/.test(l))).toHaveLength(1);
    expect(lines.findIndex((l) => l.includes('answers again'))).toBeGreaterThan(lines.findIndex((l) => l.includes('does not answer')));
    expect(result.failedSteps).toBe(steps.filter((s) => !s.ok).length);
    expect(result.failedSteps).toBeGreaterThanOrEqual(3);
  });

  it('says 503 with a reason on /readyz once the runtime stops answering, while /healthz (liveness) stays 200', async () => {
    const session = await node([{ name: 'a' }]);
    let before = { status: 0, text: '' };
    let after = { status: 0, text: '' };
    let live = { status: 0, text: '' };
    let closedAt = 0;
    await runUntil(
      { session, source: { kind: 'runtime' }, intervalMs: 100, stuckAfterMs: 30_000, listen: { host: '127.0.0.1', port: 0 }, healthWindowMs: 600 },
      async (s, listen) => {
        if (!listen) return false;
        if (closedAt === 0) {
          before = await get(listen, '/readyz');
          await sim?.close();
          sim = undefined;
          closedAt = Date.now();
          return false;
        }
        if (Date.now() - closedAt < 1_500) return false;
        after = await get(listen, '/readyz');
        live = await get(listen, '/healthz');
        return after.status === 503;
      },
      20_000,
    );
    expect(before.status).toBe(200);
    expect(after.status).toBe(503);
    expect(after.text).toMatch(/^runtime: the container runtime has not answered for .+\n/);
    expect(after.text).toMatch(/^runtime: unreachable since /m);
    expect(live.status).toBe(200);
  });

  it("finds the container it runs in from its cgroup (containerd's path), and none on a host", async () => {
    const id = 'a'.repeat(12) + '0123456789abcdef'.repeat(3) + 'b'.repeat(4);
    const inPod = join(dir.path, 'cgroup-pod');
    await writeFile(inPod, `0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1234.slice/cri-containerd-${id}.scope\n`);
    expect(await selfContainerId(inPod)).toBe(id);
    const onHost = join(dir.path, 'cgroup-host');
    await writeFile(onHost, '0::/user.slice/user-0.slice/session-1.scope\n');
    expect(await selfContainerId(onHost)).toBeUndefined();
    expect(await selfContainerId(join(dir.path, 'missing'))).toBeUndefined();
  });

  it('knows its own pod by POD_UID; a private cgroup namespace (`0::/`) names no container', async () => {
    const privateNs = join(dir.path, 'cgroup-private');
    await writeFile(privateNs, '0::/\n');
    expect(await agentSelf({}, privateNs)).toEqual({});
    expect(await agentSelf({ POD_UID: 'uid-agent' }, privateNs)).toEqual({ podUid: 'uid-agent' });
    const id = 'c'.repeat(64);
    const inPod = join(dir.path, 'cgroup-pod-2');
    await writeFile(inPod, `0::/kubepods.slice/cri-containerd-${id}.scope\n`);
    expect(await agentSelf({ POD_UID: 'uid-agent' }, inPod), 'POD_UID first, the cgroup only as a fallback').toEqual({ podUid: 'uid-agent' });
    expect(await agentSelf({}, inPod)).toEqual({ containerId: id });
    const isSelf = isSelfPod({ podUid: 'uid-agent' })!;
    expect(isSelf({ uid: 'uid-agent' } as PodInfo)).toBe(true);
    expect(isSelf({ uid: 'uid-web' } as PodInfo)).toBe(false);
    expect(isSelfPod({})).toBeUndefined();
  });

  it('parses --metrics-addr and bounds the health window', () => {
    expect(parseMetricsAddr('127.0.0.1:9640')).toEqual({ host: '127.0.0.1', port: 9640 });
    expect(parseMetricsAddr('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(() => parseMetricsAddr('9640')).toThrow(/HOST:PORT/);
    expect(() => parseMetricsAddr('host:70000')).toThrow(/HOST:PORT/);
    expect(healthWindowMs(2_000)).toBe(10_000);
    expect(healthWindowMs(5_000)).toBe(15_000);
  });
});
