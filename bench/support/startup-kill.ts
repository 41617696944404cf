/**
 * `podctl kill` of one pod on real containerd, from a fresh process, against a minimal raw CRI client
 * (bench/support/raw-cri-stop.mjs: StopContainer + StopPodSandbox from a fresh process of the same
 * Node.js) — the start-up figure of bench/startup.bench.ts that needs a runtime.
 *
 * Each run creates one pod per variant (untimed: sandbox and one container whose /pause exits on
 * SIGTERM, test/e2e/support/pods.ts), then times the variant's process from spawn to exit; variants
 * alternate within a run so that the machine's load drifts hit them alike. A kill that does not exit
 * 0 fails the benchmark.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connectCri } from '../../src/cri/client/client.js';
import { PodFactory, type RealPod } from '../../test/e2e/support/pods.js';

export interface KillRunner {
  name: string;
  /** The program and the arguments before podctl's (none for a single executable). */
  file: string;
  prefix: string[];
}

export interface KillFigures {
  /** Wall ms per run, by runner name; 'raw' is the raw CRI client. */
  samples: Map<string, number[]>;
  runtimeVersion: string;
}

const RAW_CLIENT = path.join(import.meta.dirname, 'raw-cri-stop.mjs');
/** The pods' grace (the API default): both variants stop with it; /pause exits on SIGTERM at once. */
const GRACE_SECONDS = 30;

/** Runs one process to its end; its wall time in ms (throws unless it exits 0). */
function timedRun(file: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(file, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' } });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      const ms = performance.now() - started;
      if (code === 0) resolve(ms);
      else reject(new Error(`${path.basename(file)} ${args.slice(0, 2).join(' ')} exited ${code}: ${stderr.trim()}`));
    });
  });
}

/** `runs` rounds; each: the raw client, then every runner's `podctl kill ns/name`, each on its own fresh pod. */
export async function benchKillStartup(options: { socket: string; nodeDir: string; rawNode: string; runners: KillRunner[]; runs: number }): Promise<KillFigures> {
  const cri = await connectCri({ endpoint: options.socket, timeoutMs: 60_000 });
  const pods = new PodFactory(cri, path.join(options.nodeDir, 'logs', 'pods'));
  const stateDir = await mkdtemp(path.join(tmpdir(), 'podctl-bench-startup-kill-'));
  const samples = new Map<string, number[]>([['raw', []], ...options.runners.map((r): [string, number[]] => [r.name, []])]);
  const raw = (pod: RealPod): Promise<number> => timedRun(options.rawNode, [RAW_CLIENT, options.socket, pod.containers[0]!.id, pod.sandboxId, String(GRACE_SECONDS)]);
  const kill = (runner: KillRunner, pod: RealPod, i: number): Promise<number> =>
    timedRun(runner.file, [
      ...runner.prefix,
      'kill',
      `${pod.namespace}/${pod.name}`,
      '--runtime-endpoint',
      `unix://${options.socket}`,
      '--state-dir',
      path.join(stateDir, `${i}`),
      '--no-color',
      '--log-level',
      'error',
    ]);
  try {
    // warm-up, untimed: page in each binary, the image, the runtime's paths
    for (const [i, runner] of options.runners.entries()) await kill(runner, await pods.create({ name: 'bench-warm' }), i);
    await raw(await pods.create({ name: 'bench-warm' }));
    await pods.removeAll();
    for (let run = 0; run < options.runs; run++) {
      samples.get('raw')!.push(await raw(await pods.create({ name: 'bench-raw' })));
      for (const [i, runner] of options.runners.entries()) samples.get(runner.name)!.push(await kill(runner, await pods.create({ name: 'bench-kill' }), i));
      await pods.removeAll();
    }
    return { samples, runtimeVersion: (await cri.version()).runtimeVersion };
  } finally {
    await pods.removeAll().catch(() => undefined);
    cri.close();
    await rm(stateDir, { recursive: true, force: true });
  }
}
