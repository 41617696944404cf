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
 *
 * Same work on both sides: the raw stops give each container STOP_TIMEOUT_SECONDS (the pods' own
 * grace), and the drains kill with that grace too, in one group whose budget is derived from the raw
 * rounds' wall time (`drainBudgetSeconds`): a drain measures how close podctl comes to the runtime's
 * own time, not whether the runtime fits in the default budget of a node shutdown (on a 2-core VM,
 * 100 concurrent StopContainer calls on containerd can outlast the default 20 s).
 */
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CriClient } from '../../src/cri/client/client.js';
import { parseSelection } from '../../src/lib/refs.js';
import { DEFAULT_POD_PRIORITY } from '../../src/engine/pod-kinds.js';
import { killTimeoutMs } from '../../src/engine/kill-now.js';
import type { PriorityGroup } from '../../src/services/drain/drain-plan.js';
import { drainNode, type DrainResult } from '../../src/services/drain/drain.js';
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

/** The benchmark pods' grace (test/e2e/support/pods.ts: spec.terminationGracePeriodSeconds 30): the raw stops' StopContainer timeout. */
const STOP_TIMEOUT_SECONDS = 30;
const TRACE = process.env.BENCH_DRAIN_TRACE;

/** The raw runtime work of stopping a pod: StopContainer (the pod's grace), then StopPodSandbox. */
export async function rawStop(cri: CriClient, pod: RealPod, timeoutMs?: number): Promise<void> {
  await Promise.all(pod.containers.map((c) => cri.stopContainer(c.id, STOP_TIMEOUT_SECONDS, { timeoutMs })));
  await cri.stopPodSandbox(pod.sandboxId, { timeoutMs });
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
 * Each request's deadline, the raw stops' as podctl's: a StopContainer among 100 concurrent ones on
 * containerd 1.6 can take over 90 s on a loaded 2-core machine (containerd works through them nearly
 * one after another), and a drain or raw round whose calls end at their deadline is measuring that
 * deadline, not the runtime's work (docs/operator-guide.md: raise --request-timeout on a loaded node).
 */
const REQUEST_TIMEOUT_MS = 300_000;

/**
 * The drains' group budget (s) for raw stops that took `rawMs`: three times the runtime's own time,
 * never below the pods' grace (so the drain kills with STOP_TIMEOUT_SECONDS, as the raw stops do).
 * A drain that finishes returns at once, so the budget bounds it without adding to its time.
 */
function drainBudgetSeconds(rawMs: number): number {
  return Math.max(STOP_TIMEOUT_SECONDS, Math.ceil((3 * rawMs) / 1000));
}

/** The drain's one group: every benchmark pod has the default priority. */
const drainGroups = (budgetSeconds: number): PriorityGroup[] => [{ priority: DEFAULT_POD_PRIORITY, budgetSeconds }];

/** How long a fresh `podctl drain` process may take: its own default bound (budget + killPodNow bound), plus start-up and close. */
const cliTimeoutMs = (budgetSeconds: number): number => budgetSeconds * 1000 + killTimeoutMs(STOP_TIMEOUT_SECONDS) + 60_000;

/** `podctl drain` of the pods labelled app=`app`, as a script runs it (no terminal: --yes, --json), with the benchmark's one group. */
const drainArgs = (app: string, budgetSeconds: number): string[] => [
  'drain',
  '-l',
  `app=${app}`,
  '--group',
  `${DEFAULT_POD_PRIORITY}:${budgetSeconds}`,
  '--yes',
  '--json',
  '--request-timeout',
  `${REQUEST_TIMEOUT_MS / 1000}s`,
];

/** Why an in-process drain did not end `done`: its status, counts and each group's time. */
function drainFailure(result: DrainResult): string {
  const { summary } = result;
  const groups = result.groups.map((g) => `budget ${g.budgetSeconds}s, ${g.elapsedMs ?? 0} ms`).join('; ');
  return `in-process drain: ${result.status}, ${summary.terminated}/${summary.planned} terminated, ${summary.timedOut} timed out, ${summary.failed} failed (${groups})`;
}

export async function benchDrain(options: DrainBenchOptions): Promise<DrainFigures> {
  const { cri, pods, endpoint, count } = options;
  const figures: DrainFigures = { raw: [], session: [], cli: [], base: [] };
  const stateDir = await mkdtemp(join(tmpdir(), 'podctl-bench-drain-'));
  const sessionDir = await mkdtemp(join(tmpdir(), 'podctl-bench-drain-session-'));
  const labelled = (variant: string, round: number): { app: string; made: Promise<RealPod[]> } => {
    const app = `bench-drain-${variant}-${process.pid}-${round}`;
    return { app, made: createInChunks(pods, count, { name: `bench-drain-${variant}`, labels: { app } }) };
  };
  // round 0 runs the raw stops first, so every drain has a budget from the slowest raw round before it
  const budget = (): number => {
    if (figures.raw.length === 0) throw new Error('no raw round before the drain');
    return drainBudgetSeconds(Math.max(...figures.raw));
  };
  const say = (variant: string, round: number, ms: number): void => console.error(`(c) round ${round + 1}: ${variant} ${ms.toFixed(0)} ms`);
  const cliRun = async (who: 'cli' | 'base', round: number): Promise<void> => {
    const { app, made } = labelled(who, round);
    await made;
    const args = drainArgs(app, budget());
    const run =
      who === 'cli' ? await runPodctl(args, { endpoint, stateDir, timeoutMs: cliTimeoutMs(budget()) }) : await options.baseline!(args, { endpoint, stateDir, timeoutMs: cliTimeoutMs(budget()) });
    checkDrained(run, count, who === 'cli' ? 'podctl drain' : 'baseline podctl drain');
    figures[who].push(run.ms);
    say(who === 'cli' ? 'podctl drain' : 'baseline podctl drain', round, run.ms);
  };
  const variants = (round: number): (() => Promise<void>)[] => [
    async () => {
      const made = await labelled('raw', round).made;
      figures.raw.push(await timed(() => Promise.all(made.map((p) => rawStop(cri, p, REQUEST_TIMEOUT_MS)))));
      say('raw', round, figures.raw.at(-1)!);
    },
    async () => {
      const { app, made } = labelled('session', round);
      await made;
      const trace: string[] = [];
      const t0 = performance.now();
      const log = TRACE ? { log: (level: string, message: string) => void trace.push(`${(performance.now() - t0).toFixed(0)} ${level} ${message}`) } : {};
      const session = await openSession({ stateDir: sessionDir, runtimeEndpoint: endpoint, rpcTimeoutMs: REQUEST_TIMEOUT_MS, ...log });
      try {
        const selection = parseSelection({ args: [], selector: `app=${app}`, allNamespaces: true, allowEmpty: true });
        let result: DrainResult | undefined;
        const ms = await timed(async () => (result = await drainNode({ session, selection, groups: drainGroups(budget()), dryRun: false })));
        if (result?.status !== 'done') throw new Error(drainFailure(result!));
        figures.session.push(ms);
        say('in-process drain', round, ms);
      } finally {
        await session.close();
        if (TRACE) writeFileSync(`${TRACE}.${round}`, trace.join('\n'));
      }
    },
    () => cliRun('cli', round),
    ...(options.baseline ? [() => cliRun('base', round)] : []),
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
