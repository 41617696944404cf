/**
 * `podctl agent` end to end on the real containerd, with the real Prometheus tools (Debian packages
 * `prometheus`, `prometheus-node-exporter`; scripts/test.sh installs them as root):
 *
 * - the agent takes over a pod whose `podctl kill` was SIGKILLed mid-grace, within 2 × --interval,
 *   and finishes it; SIGTERM then stops the agent with exit 0 within 5 s;
 * - Prometheus scrapes the agent, and its query API returns the series (all 15 working-pods series,
 *   the runtime operations with the kubelet's names);
 * - `promtool check metrics` accepts the agent's exposition;
 * - node_exporter's textfile collector reads what a one-shot `kill --metrics-textfile` wrote.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { describeContainerd } from './support/env.js';
import { useContainerd } from './support/context.js';
import { collect, requireBuild, runPodctl, spawnPodctl } from './support/cli.js';
import { exitInfo } from './support/observe.js';
import type { RealPod } from './support/pods.js';
import { until } from '../support/wait.js';
import { freePort } from '../support/free-port.js';

function have(bin: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0;
}

/** The Prometheus tools are required where CI runs (it installs them); elsewhere their tests say they skip. */
const PROM_TOOLS = have('prometheus') && have('promtool') && have('prometheus-node-exporter');
if (!PROM_TOOLS) {
  if (process.env.CI === 'true') throw new Error('test/e2e/agent.test.ts: prometheus, promtool or prometheus-node-exporter missing (scripts/test.sh installs them as root)');
  process.stderr.write('[e2e] prometheus/promtool/prometheus-node-exporter missing: their agent tests are SKIPPED\n');
}

async function httpText(url: string): Promise<{ status: number; text: string }> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(3_000) });
    return { status: res.status, text: await res.text() };
  } catch {
    return { status: 0, text: '' };
  }
}

describeContainerd(import.meta.url, 'podctl agent against containerd', () => {
  const node = useContainerd();
  let stateDir: string;
  const children: ChildProcess[] = [];

  beforeAll(() => requireBuild());
  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-agent-'));
  });
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await rm(stateDir, { recursive: true, force: true });
  });

  const endpoint = (): string => `unix://${node.socket}`;
  const running = async (pod: RealPod): Promise<boolean> => (await exitInfo(node.cri, pod.containers[0]!.id)).state === 'running';
  const startAgent = (args: string[]): { child: ChildProcess; stderr: () => string } => {
    const child = spawnPodctl(['agent', ...args], { endpoint: endpoint(), stateDir });
    children.push(child);
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdout?.resume();
    return { child, stderr: () => stderr };
  };
  const stop = async (child: ChildProcess): Promise<{ code: number | null; ms: number }> => {
    const started = Date.now();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    const code = await exited;
    return { code, ms: Date.now() - started };
  };

  it('takes over a pod whose podctl kill was SIGKILLed within 2 × interval, finishes it, and stops on SIGTERM with exit 0 within 5 s', async () => {
    const pod = await node.pods.create({ name: 'abandoned', terminationGracePeriodSeconds: 6, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const port = await freePort();
    const agent = startAgent(['--interval', '1s', '--metrics-addr', `127.0.0.1:${port}`, '--log-level', 'debug']);
    await until('the agent is healthy', async () => (await httpText(`http://127.0.0.1:${port}/healthz`)).status === 200, { timeoutMs: 15_000, everyMs: 100 });

    const kill = spawnPodctl(['kill', `${pod.namespace}/${pod.name}`], { endpoint: endpoint(), stateDir });
    children.push(kill);
    const killRun = collect(kill, 30_000);
    // once the kill owns the pod (its lease and checkpoint), SIGKILL it: nothing hands the pod on
    await until(
      'the kill owns the pod',
      async () => {
        const s = await runPodctl(['status', '--uid', pod.uid, '-o', 'json'], { endpoint: endpoint(), stateDir });
        return s.stdout.includes(`"ownerPid": ${kill.pid}`);
      },
      { timeoutMs: 15_000, everyMs: 100 },
    );
    kill.kill('SIGKILL');
    const killedAt = Date.now();
    expect((await killRun).signal).toBe('SIGKILL');

    let takenOverAt = 0;
    await until(
      'the agent took the pod over',
      async () => {
        if (/took over default\/abandoned|took over [^ ]*abandoned/.test(agent.stderr())) {
          takenOverAt ||= Date.now();
          return true;
        }
        return false;
      },
      { timeoutMs: 10_000, everyMs: 100 },
    );
    expect(takenOverAt - killedAt, agent.stderr()).toBeLessThanOrEqual(2 * 1_000 + 500); // 2 × interval (+ the probe's own pace)
    await until('the agent finished the termination', async () => !(await running(pod)), { timeoutMs: 20_000, everyMs: 100 });

    const stopped = await stop(agent.child);
    expect(stopped.code).toBe(0);
    expect(stopped.ms).toBeLessThan(5_000);
    expect(agent.stderr()).toMatch(/agent: stopped after \d+ step\(s\)/);
  });

  it.skipIf(!PROM_TOOLS)('Prometheus scrapes the agent and returns its series; promtool accepts the exposition', async () => {
    const pods = await Promise.all([node.pods.create({ name: 'scraped-a' }), node.pods.create({ name: 'scraped-b' })]);
    expect(pods).toHaveLength(2);
    const agentPort = await freePort();
    const agent = startAgent(['--interval', '500ms', '--metrics-addr', `127.0.0.1:${agentPort}`]);
    await until('the agent is healthy', async () => (await httpText(`http://127.0.0.1:${agentPort}/healthz`)).status === 200, { timeoutMs: 15_000, everyMs: 100 });

    const exposition = (await httpText(`http://127.0.0.1:${agentPort}/metrics`)).text;
    const check = spawnSync('promtool', ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);

    const promDir = join(stateDir, 'prometheus');
    await mkdir(promDir);
    const promPort = await freePort();
    await writeFile(join(promDir, 'prometheus.yml'), `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: podctl\n    static_configs:\n      - targets: ['127.0.0.1:${agentPort}']\n`);
    const prometheus = spawn('prometheus', [`--config.file=${join(promDir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(promDir, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(prometheus);
    let promLog = '';
    prometheus.stderr?.setEncoding('utf8').on('data', (d: string) => (promLog += d));
    const query = async (q: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> => {
      const r = await httpText(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent(q)}`);
      if (r.status !== 200) return [];
      return (JSON.parse(r.text) as { data: { result: { metric: Record<string, string>; value: [number, string] }[] } }).data.result;
    };
    await until('Prometheus scraped the agent', async () => (await query('up{job="podctl"}')).some((s) => s.value[1] === '1'), { timeoutMs: 40_000, everyMs: 100, detail: () => promLog.slice(-300) });
    const working = await query('podctl_working_pods');
    expect(working).toHaveLength(15);
    expect(new Set(working.map((s) => s.metric.config))).toEqual(new Set(['desired', 'orphan', 'runtime_only']));
    await until('runtime operations counted', async () => (await query('podctl_runtime_operations_total{operation_type="list_podsandbox"} > 0')).length === 1, { timeoutMs: 15_000, everyMs: 100 });
    expect((await query('podctl_desired_pods{static="false"}'))[0]?.value[1]).toMatch(/^[1-9]\d*$/);
    expect(await query('podctl_kubelet_up')).toHaveLength(1);
    expect((await stop(agent.child)).code).toBe(0);
  });

  it.skipIf(!PROM_TOOLS)("node_exporter's textfile collector reads the metrics a one-shot kill wrote with --metrics-textfile", async () => {
    const pod = await node.pods.create({ name: 'textfile', terminationGracePeriodSeconds: 1 });
    const textDir = join(stateDir, 'textfile');
    const missing = await runPodctl(['kill', `${pod.namespace}/${pod.name}`, '--metrics-textfile', join(textDir, 'podctl.prom')], { endpoint: endpoint(), stateDir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--metrics-textfile: directory .* does not exist/);
    expect(await running(pod)).toBe(true);

    await mkdir(textDir);
    const run = await runPodctl(['kill', `${pod.namespace}/${pod.name}`, '--metrics-textfile', join(textDir, 'podctl.prom')], { endpoint: endpoint(), stateDir });
    expect(run.code, run.stderr).toBe(0);
    const port = await freePort();
    const exporter = spawn(
      'prometheus-node-exporter',
      ['--collector.disable-defaults', '--collector.textfile', `--collector.textfile.directory=${textDir}`, `--web.listen-address=127.0.0.1:${port}`],
      { stdio: 'ignore' },
    );
    children.push(exporter);
    let text = '';
    await until(
      'node_exporter serves the textfile',
      async () => {
        text = (await httpText(`http://127.0.0.1:${port}/metrics`)).text;
        return text.includes('podctl_');
      },
      { timeoutMs: 15_000, everyMs: 100 },
    );
    expect(text).toMatch(/^podctl_runtime_operations_total\{operation_type="stop_container"\} [1-9]/m);
    expect(text).toMatch(/^podctl_working_pods\{config="desired",lifecycle="terminated",static="false"\} 1$/m);
    // node_exporter found no error in the file
    expect(text).toMatch(/^node_textfile_scrape_error 0$/m);
  });
});
