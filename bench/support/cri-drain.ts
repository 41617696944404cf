/**
 * bench:cri's scenario (c): a drain of N pods on real containerd against the same pods' raw stops
 * issued concurrently (per pod: StopContainer, then StopPodSandbox, on a warm connection in the
 * benchmark process). Goal (issue 48): `podctl drain` within 1.05× of the raw stops.
 *
 * Variants, each on fresh pods, the order rotating from round to round so that load drifts hit all
 * of them alike:
 * - raw CRI, concurrently (the floor);
 * - the drain service in-process on an open NodeSession (`drainNode`: plan, requestKill per pod,
 *   the wait, the check after it; no process start-up, no session open);
 * - `podctl drain -l app=… --yes --json` as a fresh process (start-up, session, store, engine, CRI);
 * - the same with another build (BENCH_BASELINE_CLI_ROOT), for a side-by-side comparison.
 * Every drain must end `done` with every pod terminated, or the benchmark fails.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CriClient } from '../../src/cri/client/client.js';
import { parseSelection } from '../../src/lib/refs.js';
import { defaultGroups } from '../../src/services/drain/drain-plan.js';
import { drainNode } from '../../src/services/drain/drain.js';
import { openSession } from '../../src/session/open.js';
import { runPodctl, type PodctlRun } from '../../test/e2e/support/cli.js';
import type { PodFactory, PodInput, RealPod } from '../../test/e2e/support/pods.js';

const CREATE_CHUNK = 25;

export interface DrainFigures {
  raw: number[];
  session: number[];
  cli: number[];
  base: number[];
}

interface DrainBenchOptions {
  cri: CriClient;
  pods: PodFactory;
  endpoint: string;
  count: number;
  rounds: number;
  /** Runs `podctl <args>` of the baseline build (BENCH_BASELINE_CLI_ROOT), or absent. */
  baseline?: (args: string[], options: { endpoint: string; stateDir: string; timeoutMs?: number }) => Promise<PodctlRun>;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/** The raw runtime work of stopping a pod: StopContainer (the pod's grace), then StopPodSandbox. */
export async function rawStop(cri: CriClient, pod: RealPod): Promise<void> {
  await Promise.all(pod.containers.map((c) => cri.stopContainer(c.id, 30)));
  await cri.stopPodSandbox(pod.sandboxId);
}

/** `count` pods, CREATE_CHUNK at a time (a hundred RunPodSandbox calls at once can outlast their deadline on a loaded 2-core machine). */
async function createInChunks(pods: PodFactory, count: number, input: PodInput): Promise<RealPod[]> {
  const made: RealPod[] = [];
  for (let i = 0; i < count; i += CREATE_CHUNK) made.push(...(await pods.createMany(Math.min(CREATE_CHUNK, count - i), input)));
  return made;
}

/** A drain's --json says every one of `count` pods terminated, or this throws. */
function checkDrained(run: PodctlRun, count: number, who: string): void {
  if (run.code !== 0) throw new Error(`${who} exited ${run.code}: ${run.stderr.trim().split('\n').at(-1)}`);
  const result = JSON.parse(run.stdout) as { status: string; summary: { planned: number; terminated: number } };
  if (result.status !== 'done' || result.summary.terminated !== count || result.summary.planned !== count) {
    throw new Error(`${who}: ${result.status}, ${result.summary.terminated}/${result.summary.planned} of ${count} pods terminated`);
  }
}

/**
 * Each request's deadline, podctl's as the raw client's (bench/cri.bench.ts connects with 60 s): on a
 * loaded 2-core machine a StopPodSandbox can take longer than podctl's default 10 s, and a drain whose
 * calls end at their deadline is measuring that deadline, not its own work (docs/operator-guide.md:
 * raise --request-timeout on a loaded node).
 */
const REQUEST_TIMEOUT_MS = 60_000;

/** `podctl drain` of the pods labelled app=`app`, as a script runs it (no terminal: --yes, --json). */
const drainArgs = (app: string): string[] => ['drain', '-l', `app=${app}`, '--yes', '--json', '--request-timeout', `${REQUEST_TIMEOUT_MS / 1000}s`];

export async function benchDrain(options: DrainBenchOptions): Promise<DrainFigures> {
  const { cri, pods, endpoint, count } = options;
  const figures: DrainFigures = { raw: [], session: [], cli: [], base: [] };
  const stateDir = await mkdtemp(join(tmpdir(), 'podctl-bench-drain-'));
  const sessionDir = await mkdtemp(join(tmpdir(), 'podctl-bench-drain-session-'));
  const labelled = (variant: string, round: number): { app: string; made: Promise<RealPod[]> } => {
    const app = `bench-drain-${variant}-${process.pid}-${round}`;
    return { app, made: createInChunks(pods, count, { name: `bench-drain-${variant}`, labels: { app } }) };
  };
  const variants = (round: number): (() => Promise<void>)[] => [
    async () => {
      const made = await labelled('raw', round).made;
      figures.raw.push(await timed(() => Promise.all(made.map((p) => rawStop(cri, p)))));
    },
    async () => {
      const { app, made } = labelled('session', round);
      await made;
      const session = await openSession({ stateDir: sessionDir, runtimeEndpoint: endpoint, rpcTimeoutMs: REQUEST_TIMEOUT_MS });
      try {
        const selection = parseSelection({ args: [], selector: `app=${app}`, allNamespaces: true, allowEmpty: true });
        let status = '';
        figures.session.push(await timed(async () => ({ status } = await drainNode({ session, selection, groups: defaultGroups(30, 10), dryRun: false }))));
        if (status !== 'done') throw new Error(`in-process drain: ${status}`);
      } finally {
        await session.close();
      }
    },
    async () => {
      const { app, made } = labelled('cli', round);
      await made;
      const run = await runPodctl(drainArgs(app), { endpoint, stateDir, timeoutMs: 180_000 });
      checkDrained(run, count, 'podctl drain');
      figures.cli.push(run.ms);
    },
    ...(options.baseline
      ? [
          async () => {
            const { app, made } = labelled('base', round);
            await made;
            const run = await options.baseline!(drainArgs(app), { endpoint, stateDir, timeoutMs: 180_000 });
            checkDrained(run, count, 'baseline podctl drain');
            figures.base.push(run.ms);
          },
        ]
      : []),
  ];
  try {
    for (let round = 0; round < options.rounds; round++) {
      const list = variants(round);
      for (let i = 0; i < list.length; i++) {
        await list[(round + i) % list.length]!();
        await pods.removeAll();
      }
    }
  } finally {
    await rm(stateDir, { recursive: true, force: true });
    await rm(sessionDir, { recursive: true, force: true });
  }
  return figures;
}
