/**
 * Benchmark of `podctl agent` (issue goals: a pod left by a SIGKILLed `podctl kill` is taken over
 * within 2 × --interval; idle CPU ≤ 1 % of one core and RSS ≤ 120 MB with 250 pods).
 *
 * Setup: the built CLI (bin/run.js) as separate processes, as on a node: `podctl simulator` serves
 * the pods (its CPU is not counted), `podctl agent` runs with the default interval (2 s), and
 * `podctl kill` processes are SIGKILLed while they drive a pod.
 *
 * Figures:
 * - takeover: SIGKILL of the kill process → the agent's "took over" line for that pod (ms), over
 *   `--takeovers` kills (each pod ignores SIGTERM and has a 30 s grace, so only the agent can finish it).
 * - idle: the agent's CPU (utime + stime from /proc/<pid>/stat) over `--window` seconds with nothing
 *   happening on a `--pods` node after a warm-up, as % of one core; its RSS (VmRSS) at the end.
 *
 * - API (with `--api-window`, default 600 s): the local API server (test/support) holds the node's
 *   pods (`--api-pods`, default 50, the simulator's own, bound to node-1) and the agent follows it
 *   (`--kubeconfig`, kubelet down); every request it makes is counted: per minute while idle over
 *   the window (watch renewals included), then during a churn of all the pods deleted in the API one
 *   after another (100 ms apart, grace 1 s) until each is finally deleted, and the time from each
 *   deletion in the API to the pod's first StopContainer (the simulator runs in this process).
 *   `--root DIR` measures another build (its bin/run.js), e.g. the previous commit's in a temp clone.
 *   The agent's kubelet root is an empty one (its pods/ folder readable, nothing mounted), so each
 *   final delete goes out. The API figures go to bench/results/agent.json (bench/support/results.ts;
 *   `npm run bench:summary`), unless `--root` names another build.
 *
 *   npm run bench:agent [-- --pods 250 --window 30 --takeovers 5]
 *   npm run bench:agent -- --only api [--api-window 600 --api-pods 50 --root /tmp/old-build]
 *   PODCTL_E2E_SOCKET=/tmp/podctl-node/containerd.sock npm run bench:agent   (takeover on containerd
 *   is in test/e2e/agent.test.ts; this bench uses the simulator for both figures)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { writeResults } from './support/results.js';

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '250' },
    window: { type: 'string', default: '30' },
    takeovers: { type: 'string', default: '5' },
    interval: { type: 'string', default: '2s' },
    'api-window': { type: 'string', default: '600' },
    'api-pods': { type: 'string', default: '50' },
    only: { type: 'string' },
    root: { type: 'string' },
  },
});
const POD_COUNT = Number(values.pods);
const WINDOW_MS = Number(values.window) * 1000;
const TAKEOVERS = Number(values.takeovers);
const root = values.root ?? fileURLToPath(new URL('..', import.meta.url));
const bin = join(root, 'bin', 'run.js');
const CLK_TCK = 100;

const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

function podctl(args: string[], stateDir: string, endpoint?: string): ChildProcess {
  const child = spawn(process.execPath, [bin, ...args, '--state-dir', stateDir, ...(endpoint ? ['--runtime-endpoint', endpoint] : [])], {
    env: { ...process.env, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return child;
}

function lines(child: ChildProcess, onLine: (line: string, at: number) => void): void {
  let buffer = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    const at = Date.now();
    buffer += d;
    const parts = buffer.split('\n');
    buffer = parts.pop() ?? '';
    for (const line of parts) onLine(line, at);
  });
  child.stdout?.resume();
}

function waitLine(child: ChildProcess, test: RegExp, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no line matching ${test} within ${timeoutMs} ms`)), timeoutMs);
    lines(child, (line, at) => {
      if (test.test(line)) {
        clearTimeout(timer);
        resolve(at);
      }
    });
  });
}

async function cpuTicks(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime + stime
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

async function statusJson(
  stateDir: string,
  endpoint: string,
): Promise<{ pods: { uid: string; namespace: string; name: string; state: string; ownerPid: number | null; containersRunning: number }[] }> {
  const child = podctl(['status', '-o', 'json'], stateDir, endpoint);
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
  await new Promise((resolve) => child.once('exit', resolve));
  return JSON.parse(out);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'podctl-bench-agent-'));
  try {
    const stateDir = join(dir, 'state');
    const socket = join(dir, 'sim.sock');
    const endpoint = `unix://${socket}`;
    const sim = podctl(['simulator', '--socket', socket, '--pods', String(POD_COUNT)], join(dir, 'sim-state'));
    await waitLine(sim, /serving|listening|simulator/i, 30_000).catch(() => sleep(2_000));
    await sleep(1_000);

    const agent = podctl(['agent', '--interval', values.interval, '--metrics-addr', '127.0.0.1:0'], stateDir, endpoint);
    const takenOver = new Map<string, number>();
    lines(agent, (line, at) => {
      const m = /took over (\S+)/.exec(line);
      if (m) takenOver.set(m[1]!, at);
    });
    await sleep(5_000); // the first steps: the agent learns the node

    // idle: nothing happens on the node
    const t0 = await cpuTicks(agent.pid!);
    const started = Date.now();
    await sleep(WINDOW_MS);
    const idleCpu = (((await cpuTicks(agent.pid!)) - t0) / CLK_TCK / ((Date.now() - started) / 1000)) * 100;
    const idleRss = await rssMb(agent.pid!);

    // takeovers: pods that run and are not being terminated, killed by a process that is then SIGKILLed
    const candidates = (await statusJson(stateDir, endpoint)).pods.filter((p) => p.state === 'runtime' && p.containersRunning > 0 && !p.namespace.startsWith('kube-'));
    const latencies: number[] = [];
    for (const pod of candidates.slice(0, TAKEOVERS)) {
      const ref = `${pod.namespace}/${pod.name}`;
      const kill = podctl(['kill', ref, '--grace', '30'], stateDir, endpoint);
      await waitLine(kill, /terminating/, 15_000);
      kill.kill('SIGKILL');
      const killedAt = Date.now();
      const deadline = killedAt + 20_000;
      while (!takenOver.has(ref) && Date.now() < deadline) await sleep(20);
      latencies.push(takenOver.has(ref) ? takenOver.get(ref)! - killedAt : NaN);
    }
    const rssAfter = await rssMb(agent.pid!);
    agent.kill('SIGTERM');
    sim.kill('SIGTERM');

    const intervalMs = /^(\d+)s$/.test(values.interval) ? Number(values.interval.slice(0, -1)) * 1000 : NaN;
    console.log(`podctl agent, simulator with ${POD_COUNT} pods, --interval ${values.interval}, load ${(await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ')}`);
    console.log('');
    console.log('| figure | measured | goal |');
    console.log('|---|---|---|');
    console.log(`| takeover after SIGKILLed kill, median (n=${latencies.length}) | ${median(latencies).toFixed(0)} ms | ≤ ${2 * intervalMs} ms |`);
    console.log(`| takeover, max | ${Math.max(...latencies).toFixed(0)} ms | ≤ ${2 * intervalMs} ms |`);
    console.log(`| idle CPU over ${WINDOW_MS / 1000} s | ${idleCpu.toFixed(2)} % of one core | ≤ 1 % |`);
    console.log(`| RSS idle | ${idleRss.toFixed(0)} MB | ≤ 120 MB |`);
    console.log(`| RSS after the takeovers | ${rssAfter.toFixed(0)} MB | ≤ 120 MB |`);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

/** The API column: requests per minute idle, requests during a churn, deletion → first StopContainer. */
async function apiBench(): Promise<void> {
  const { startKubeApiServer } = await import('../test/support/kube-api-server.js');
  const { startSimulator } = await import('../src/cri/simulator/index.js');
  const dir = await mkdtemp(join(tmpdir(), 'podctl-bench-agent-api-'));
  const count = Number(values['api-pods']);
  const windowMs = Number(values['api-window']) * 1000;
  const server = await startKubeApiServer();
  const specs = Array.from({ length: count }, (_, i) => ({
    name: `w-${i}`,
    namespace: 'bench',
    uid: `uid-w-${i}`,
    terminationGracePeriodSeconds: 1,
    containers: [{ name: 'c', onSigterm: 'exit' as const }],
  }));
  const sim = await startSimulator({ socketPath: join(dir, 'sim.sock'), pods: specs, faults: [], timeScale: 1 });
  // the first StopContainer of each pod, by the container's pod UID label
  const firstStop = new Map<string, number>();
  const stop = sim.state.stopContainer.bind(sim.state);
  sim.state.stopContainer = (id, timeout, signal) => {
    const uid = sim.state.containerInfo(id)['io.kubernetes.pod.uid'] ?? sim.state.container(id)?.labels?.['io.kubernetes.pod.uid'];
    if (uid && !firstStop.has(uid)) firstStop.set(uid, Date.now());
    return stop(id, timeout, signal);
  };
  server.addNode('node-1');
  // the agent as the DaemonSet runs it: its ServiceAccount with the node claim, the node restriction in force (API writes enabled)
  const token = server.addAgent({ node: 'node-1' });
  server.installNodeRestriction();
  for (const p of specs)
    server.addPod({
      metadata: { name: p.name, namespace: p.namespace, uid: p.uid },
      spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 1, containers: [{ name: 'c' }] },
      status: { phase: 'Running' },
    });
  const kubeletRoot = join(dir, 'kubelet');
  await import('node:fs/promises').then((fs) => fs.mkdir(join(kubeletRoot, 'pods'), { recursive: true }));
  const kubeconfig = join(dir, 'kubeconfig');
  await import('node:fs/promises').then((fs) =>
    fs.writeFile(
      kubeconfig,
      `apiVersion: v1\nkind: Config\nclusters: [{name: b, cluster: {server: "http://127.0.0.1:${server.port}", insecure-skip-tls-verify: true}}]\nusers: [{name: b, user: {token: ${token}}}]\ncontexts: [{name: b, context: {cluster: b, user: b}}]\ncurrent-context: b\n`,
    ),
  );
  try {
    const agent = podctl(
      ['agent', '--interval', values.interval, '--metrics-addr', 'none', '--kubeconfig', kubeconfig, '--node', 'node-1', '--kubelet-healthz', '127.0.0.1:1/healthz', '--kubelet-root', kubeletRoot],
      join(dir, 'state'),
      sim.endpoint,
    );
    lines(agent, (line, at) => process.env.BENCH_DEBUG && console.error(at, line));
    await sleep(10_000); // start-up and the first steps
    const idleFrom = server.requests.length;
    const idleStart = Date.now();
    await sleep(windowMs);
    const idleRequests = server.requests.slice(idleFrom);
    const idlePerMin = idleRequests.length / ((Date.now() - idleStart) / 60_000);
    const kinds = new Map<string, number>();
    for (const r of idleRequests) kinds.set(`${r.method} ${r.path}${r.query.get('watch') ? ' (watch)' : ''}`, (kinds.get(`${r.method} ${r.path}${r.query.get('watch') ? ' (watch)' : ''}`) ?? 0) + 1);

    // churn: every pod deleted in the API, 100 ms apart, until each is finally deleted
    const churnFrom = server.requests.length;
    const churnStart = Date.now();
    const deletedAt = new Map<string, number>();
    for (const p of specs) {
      deletedAt.set(p.uid, Date.now());
      server.deletePod(p.namespace, p.name, 1);
      await sleep(100);
    }
    const deadline = Date.now() + 60_000;
    while (server.pods.size > 0 && Date.now() < deadline) await sleep(100);
    const churnMs = Date.now() - churnStart;
    const churnRequests = server.requests.length - churnFrom;
    agent.kill('SIGTERM');
    await new Promise((r) => agent.once('exit', r));
    const latencies = specs.map((p) => (firstStop.has(p.uid) ? firstStop.get(p.uid)! - deletedAt.get(p.uid)! : NaN)).sort((a, b) => a - b);
    const pct = (q: number): number => latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)] ?? NaN;
    console.log(`podctl agent (${root}), local API server, ${count} pods bound to node-1, --interval ${values.interval}`);
    console.log('');
    console.log('| figure | measured | goal |');
    console.log('|---|---|---|');
    console.log(`| API requests per minute, idle over ${(windowMs / 60_000).toFixed(1)} min | ${idlePerMin.toFixed(2)} (${[...kinds].map(([k, n]) => `${n} × ${k}`).join(', ') || 'none'}) | ≤ 2 |`);
    console.log(`| API requests during the churn of ${count} pods (${(churnMs / 1000).toFixed(1)} s, ${server.pods.size} left) | ${churnRequests} | |`);
    console.log(
      `| deletion in the API → first StopContainer, p50 / p95 / max (n=${latencies.filter((l) => !Number.isNaN(l)).length}) | ${pct(0.5)} / ${pct(0.95)} / ${latencies.at(-1)} ms | p95 ≤ 100 ms |`,
    );
    if (!values.root) {
      const command = `npm run build && npm run bench:agent -- --only api --api-window ${values['api-window']} --api-pods ${count}`;
      const load = `load ${(await readFile('/proc/loadavg', 'utf8')).split(' ')[0]}`;
      // an idle window under the issue's ten minutes says too little of the watch renewals: its figure is not written
      const idle =
        windowMs >= 600_000
          ? [
              {
                id: 'api-idle',
                figure: '`podctl agent`: API requests per minute per node, idle (watch renewals included)',
                value: idlePerMin,
                unit: 'requests/min',
                goalMax: 2,
                detail: `over ${(windowMs / 60_000).toFixed(1)} min, ${count} pods`,
                command,
              },
            ]
          : [];
      writeResults('agent', [
        ...idle,
        {
          id: 'api-churn',
          figure: `\`podctl agent\`: API requests per pod deleted in a churn of ${count} pods (Killing Event, final delete)`,
          value: churnRequests / count,
          unit: 'requests/pod',
          goalMax: 3,
          detail: `${churnRequests} requests in ${(churnMs / 1000).toFixed(1)} s, ${server.pods.size} pods left`,
          command,
        },
        {
          id: 'api-delete-stop',
          figure: '`podctl agent`: deletion in the API → first StopContainer, p95',
          value: pct(0.95),
          unit: 'ms',
          goalMax: 100,
          detail: `p50 ${pct(0.5)} ms, max ${latencies.at(-1)} ms; n=${latencies.length}, ${load}`,
          command,
        },
      ]);
    }
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await sim.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (values.only === 'api') await apiBench();
else {
  await main();
  if (Number(values['api-window']) > 0) await apiBench();
}
