/**
 * CRI benchmark against a real containerd: what does podctl add to the runtime's own work?
 *
 *   npm run build && npm run bench:cri      (node --import ./bench/register.mjs bench/cri.bench.ts)
 *
 * Runtime: PODCTL_E2E_SOCKET if set (a node from test/e2e/containerd-node.sh); otherwise, as root,
 * the benchmark brings up a node of its own (NODE_DIR=/tmp/podctl-bench-node) and takes it down.
 * Env: BENCH_RUNS (single-pod runs, default 9), BENCH_ROUNDS (50-pod rounds, default 3),
 * BENCH_PODS (default 50), BENCH_DRAIN_PODS (default 100), BENCH_DRAIN_ROUNDS (default 3),
 * BENCH_ONLY (kill: (a) and (b) only; drain: (c) only), PODCTL_E2E_CLI_ROOT (run the CLI from a
 * copy of the build), BENCH_BASELINE_CLI_ROOT (another build, e.g. of the previous commit: its
 * `podctl kill` and `podctl drain` runs alternate with this one's, so a before/after comparison
 * sees the same load), BENCH_DRAIN_TRACE (a path: the in-process drain's debug log, ms since its
 * session opened, goes to <path>.<round>).
 *
 * Scenarios (every pod: one container whose /pause exits on SIGTERM, plus its sandbox):
 * (a) one pod: `podctl kill ns/name` wall time (a fresh process: start-up, session, engine, store,
 *     CRI) vs the raw calls alone on a warm connection (StopContainer + StopPodSandbox); goal:
 *     overhead ≤ 150 ms. Also shown, to place the overhead: the same kill in-process through
 *     engine + syncer + cache (no store), through an open NodeSession (requestKill +
 *     waitTerminated: store, leases, engine, CRI; no process start-up), and `node -e 0` /
 *     `podctl --version` for the start-up share.
 * (b) BENCH_PODS pods at once: `podctl kill -l app=…` vs the same raw calls issued concurrently
 *     (per pod: StopContainer then StopPodSandbox); goal: ≤ 1.2×. Also in-process engine + syncer,
 *     and an open NodeSession with all requestKill calls issued concurrently.
 * (c) BENCH_DRAIN_PODS pods: `podctl drain -l app=… --yes --json` vs the same raw calls issued
 *     concurrently, the drain in one group whose budget is three times the raw stops' time (the
 *     same 30 s grace on both sides); goal: ≤ 1.05× (bench/support/cri-drain.ts).
 * At the end the figures go to bench/results/cri.json (bench/support/results.ts); a BENCH_ONLY run
 * writes its own figures and keeps the file's others.
 * Runs alternate between the variants, each on fresh pods, so load drifts hit all of them alike;
 * in (b) the order rotates from round to round. The in-process variants are open only for their
 * own runs (open, they would relist the runtime every second during the others').
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { connectCri, type CriClient } from '../src/cri/client/client.js';
import { openSession } from '../src/session/open.js';
import type { NodeSession } from '../src/domain/session-api.js';
import { collect, PODCTL_BIN, runPodctl, requireBuild, type PodctlRun } from '../test/e2e/support/cli.js';
import { EngineStack } from '../test/e2e/support/engine.js';
import { PrivateNode } from '../test/e2e/support/node.js';
import { PodFactory, type RealPod } from '../test/e2e/support/pods.js';
import { benchDrain, rawStop, type DrainFigures } from './support/cri-drain.js';
import { writeResults, type Figure } from './support/results.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PODS = Number(process.env.BENCH_PODS ?? 50);
const DRAIN_PODS = Number(process.env.BENCH_DRAIN_PODS ?? 100);
const DRAIN_ROUNDS = Number(process.env.BENCH_DRAIN_ROUNDS ?? 3);
const ONLY = process.env.BENCH_ONLY;
if (ONLY !== undefined && ONLY !== 'kill' && ONLY !== 'drain') throw new Error(`BENCH_ONLY=${ONLY}: give kill or drain`);
const BASELINE_ROOT = process.env.BENCH_BASELINE_CLI_ROOT;
const run = promisify(execFile);

/** `podctl` from another build (BENCH_BASELINE_CLI_ROOT), as runPodctl runs this one. */
function runBaseline(args: string[], options: { endpoint: string; stateDir: string; timeoutMs?: number }): Promise<PodctlRun> {
  const started = performance.now();
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  delete env.CONTAINER_RUNTIME_ENDPOINT;
  delete env.PODCTL_STATE_DIR;
  const child = spawn(process.execPath, [join(BASELINE_ROOT!, 'bin', 'run.js'), ...args, '--runtime-endpoint', options.endpoint, '--state-dir', options.stateDir], {
    cwd: BASELINE_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return collect(child, options.timeoutMs ?? 60_000, started);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
const min = (xs: number[]): number => Math.min(...xs);
const max = (xs: number[]): number => Math.max(...xs);
const ms = (x: number): string => x.toFixed(0);
const signedMs = (x: number): string => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(0)} ms`;

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/** As `podctl kill` on an open session: list the node's pods, requestKill each (concurrently), wait. */
async function sessionKill(session: NodeSession, targets: RealPod[]): Promise<void> {
  await session.listPods();
  await Promise.all(targets.map((p) => session.requestKill({ uid: p.uid })));
  const outcomes = await session.waitTerminated(
    targets.map((p) => p.uid),
    { timeoutMs: 120_000 },
  );
  const notDone = [...outcomes.values()].filter((o) => o !== 'terminated').length;
  if (notDone > 0) throw new Error(`session kill: ${notDone} pod(s) not terminated`);
}

const rawKill = rawStop;

/** What the scenarios share: the runtime, its pods, the state dirs, the in-process variants' openers. */
interface Bench {
  cri: CriClient;
  pods: PodFactory;
  endpoint: string;
  stateDir: string;
  withStack: <T>(fn: (stack: EngineStack) => Promise<T>) => Promise<T>;
  withSession: <T>(fn: (session: NodeSession) => Promise<T>) => Promise<T>;
}

type Series = Record<'raw' | 'engine' | 'session' | 'cli' | 'base', number[]>;
const series = (): Series => ({ raw: [], engine: [], session: [], cli: [], base: [] });

/** (a): one pod, RUNS times, each variant on a fresh pod. */
async function singlePod({ cri, pods, endpoint, stateDir, withStack, withSession }: Bench): Promise<Series & { node0: number[]; version: number[] }> {
  const a = { ...series(), node0: [] as number[], version: [] as number[] };
  for (let i = 0; i < RUNS; i++) {
    const rawPod = await pods.create({ name: 'bench-raw' });
    a.raw.push(await timed(() => rawKill(cri, rawPod)));

    const enginePod = await pods.create({ name: 'bench-engine' });
    a.engine.push(
      await withStack(async (stack) => {
        await stack.adopt(enginePod.pod);
        return timed(() => stack.kill(enginePod.pod, false));
      }),
    );

    const sessionPod = await pods.create({ name: 'bench-session' });
    a.session.push(await withSession((session) => timed(() => sessionKill(session, [sessionPod]))));

    const cliPod = await pods.create({ name: 'bench-cli' });
    const cliRun = await runPodctl(['kill', `${cliPod.namespace}/${cliPod.name}`], { endpoint, stateDir });
    if (cliRun.code !== 0) throw new Error(`podctl kill exited ${cliRun.code}: ${cliRun.stderr.trim()}`);
    a.cli.push(cliRun.ms);

    if (BASELINE_ROOT) {
      const basePod = await pods.create({ name: 'bench-base' });
      const baseRun = await runBaseline(['kill', `${basePod.namespace}/${basePod.name}`], { endpoint, stateDir });
      if (baseRun.code !== 0) throw new Error(`baseline podctl kill exited ${baseRun.code}: ${baseRun.stderr.trim()}`);
      a.base.push(baseRun.ms);
    }

    a.node0.push(await timed(() => run(process.execPath, ['-e', '0'])));
    a.version.push(await timed(() => run(process.execPath, [PODCTL_BIN, '--version'])));
    await pods.removeAll();
  }
  return a;
}

/** `podctl kill -n ns -l app=…` of PODS fresh pods, by this build or the baseline's; throws unless all terminated. */
async function cliKillMany({ pods, endpoint, stateDir }: Bench, who: 'cli' | 'base', round: number): Promise<number> {
  const app = `bench-${who}-${process.pid}-${round}`;
  const made = await pods.createMany(PODS, { name: `bench-many-${who}`, labels: { app } });
  const args = ['kill', '-n', made[0]!.namespace, '-l', `app=${app}`, '--json'];
  const result = who === 'cli' ? await runPodctl(args, { endpoint, stateDir, timeoutMs: 120_000 }) : await runBaseline(args, { endpoint, stateDir, timeoutMs: 120_000 });
  if (result.code !== 0) throw new Error(`${who === 'base' ? 'baseline ' : ''}podctl kill -l exited ${result.code}: ${result.stderr.trim()}`);
  const killed = (JSON.parse(result.stdout) as { pods: { outcome: string }[] }).pods.filter((p) => p.outcome === 'terminated');
  if (killed.length !== PODS) throw new Error(`podctl kill -l terminated ${killed.length}/${PODS} pods`);
  return result.ms;
}

/** (b): PODS pods at once, ROUNDS rounds; each round runs every variant on fresh pods. */
async function manyPods(bench: Bench): Promise<Series> {
  const { cri, pods, withStack, withSession } = bench;
  const b = series();
  // the order rotates from round to round, so that no variant always runs last (on a runtime that
  // has done the most work in the round)
  for (let round = 0; round < ROUNDS; round++) {
    const variants: (() => Promise<void>)[] = [
      async () => {
        const rawPods = await pods.createMany(PODS, { name: 'bench-many-raw' });
        b.raw.push(await timed(() => Promise.all(rawPods.map((p) => rawKill(cri, p)))));
      },
      async () => {
        const enginePods = await pods.createMany(PODS, { name: 'bench-many-engine' });
        b.engine.push(
          await withStack(async (stack) => {
            for (const p of enginePods) stack.workers.updatePod({ updateType: 'create', pod: p.pod });
            await stack.workers.whenIdle();
            return timed(() => Promise.all(enginePods.map((p) => stack.kill(p.pod, false))));
          }),
        );
      },
      async () => {
        const sessionPods = await pods.createMany(PODS, { name: 'bench-many-session' });
        b.session.push(await withSession((session) => timed(() => sessionKill(session, sessionPods))));
      },
      async () => void b.cli.push(await cliKillMany(bench, 'cli', round)),
    ];
    if (BASELINE_ROOT) variants.push(async () => void b.base.push(await cliKillMany(bench, 'base', round)));
    for (let i = 0; i < variants.length; i++) {
      await variants[(round + i) % variants.length]!();
      await pods.removeAll();
    }
  }
  return b;
}

const COMMAND = 'npm run build && PODCTL_E2E_SOCKET=<socket> npm run bench:cri';

/** The table's rows and the results file's figures of (a) and (b). */
function killReport(a: Awaited<ReturnType<typeof singlePod>>, b: Series, row: (scenario: string, what: string, xs: number[], vs: string) => void): Figure[] {
  const rawA = median(a.raw);
  row('(a) 1 pod', 'raw CRI: StopContainer + StopPodSandbox', a.raw, '');
  row('(a) 1 pod', 'engine + syncer + cache, in-process', a.engine, signedMs(median(a.engine) - rawA));
  row('(a) 1 pod', 'NodeSession requestKill + wait, in-process', a.session, signedMs(median(a.session) - rawA));
  row('(a) 1 pod', '`podctl kill ns/name` (fresh process)', a.cli, `${signedMs(median(a.cli) - rawA)} (goal ≤ +150)`);
  if (BASELINE_ROOT) row('(a) 1 pod', '`podctl kill ns/name`, baseline build', a.base, signedMs(median(a.base) - rawA));
  row('(a) 1 pod', '`node -e 0`', a.node0, '');
  row('(a) 1 pod', '`podctl --version`', a.version, '');
  const rawB = median(b.raw);
  row(`(b) ${PODS} pods`, 'raw CRI, concurrently', b.raw, '');
  row(`(b) ${PODS} pods`, 'engine + syncer + cache, in-process', b.engine, `${(median(b.engine) / rawB).toFixed(2)}×`);
  row(`(b) ${PODS} pods`, 'NodeSession, requests concurrent, in-process', b.session, `${(median(b.session) / rawB).toFixed(2)}×`);
  row(`(b) ${PODS} pods`, '`podctl kill -l app=…` (fresh process)', b.cli, `${(median(b.cli) / rawB).toFixed(2)}× (goal ≤ 1.2×)`);
  if (BASELINE_ROOT) row(`(b) ${PODS} pods`, '`podctl kill -l app=…`, baseline build', b.base, `${(median(b.base) / rawB).toFixed(2)}×`);
  const baseline = (xs: number[], say: (x: number) => string): string => (xs.length > 0 ? `; previous build ${say(median(xs))}` : '');
  const command = `${COMMAND}   # BENCH_RUNS=${RUNS} BENCH_ROUNDS=${ROUNDS}`;
  return [
    {
      id: 'cri-kill-one',
      figure: '`podctl kill` of one pod on containerd: over the raw StopContainer + StopPodSandbox',
      value: median(a.cli) - rawA,
      unit: 'ms',
      goalMax: 150,
      detail: `median of ${RUNS}: ${ms(median(a.cli))} vs raw ${ms(rawA)} ms${baseline(a.base, (x) => `${signedMs(x - rawA)}`)}`,
      command,
    },
    {
      id: 'cri-kill-many',
      figure: `\`podctl kill -l\` of ${PODS} pods on containerd / the raw calls issued concurrently`,
      value: median(b.cli) / rawB,
      unit: '×',
      goalMax: 1.2,
      detail: `median of ${ROUNDS}: ${ms(median(b.cli))} vs raw ${ms(rawB)} ms${baseline(b.base, (x) => `${(x / rawB).toFixed(2)}×`)}`,
      command,
    },
  ];
}

/** The table's rows and the results file's figure of (c). */
function drainReport(c: DrainFigures, row: (scenario: string, what: string, xs: number[], vs: string) => void): Figure[] {
  const rawC = median(c.raw);
  const scenario = `(c) drain ${DRAIN_PODS}`;
  row(scenario, 'raw CRI, concurrently', c.raw, '');
  row(scenario, 'drain service on an open NodeSession, in-process', c.session, `${(median(c.session) / rawC).toFixed(2)}×`);
  row(scenario, '`podctl drain -l app=… --yes --json` (fresh process)', c.cli, `${(median(c.cli) / rawC).toFixed(2)}× (goal ≤ 1.05×)`);
  if (BASELINE_ROOT) row(scenario, '`podctl drain`, baseline build', c.base, `${(median(c.base) / rawC).toFixed(2)}×`);
  const previous = c.base.length > 0 ? `; previous build ${(median(c.base) / rawC).toFixed(2)}×` : '';
  return [
    {
      id: 'cri-drain',
      figure: `\`podctl drain\` of ${DRAIN_PODS} pods on containerd / the raw stops issued concurrently`,
      value: median(c.cli) / rawC,
      unit: '×',
      goalMax: 1.05,
      detail: `median of ${DRAIN_ROUNDS}: ${ms(median(c.cli))} vs raw ${ms(rawC)} ms${previous}`,
      command: `${COMMAND}   # BENCH_ONLY=drain BENCH_DRAIN_PODS=${DRAIN_PODS} BENCH_DRAIN_ROUNDS=${DRAIN_ROUNDS}`,
    },
  ];
}

function printTable(rows: string[][]): void {
  const header = ['scenario', 'what', 'median ms', 'min ms', 'max ms', 'vs raw'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => (i >= 2 && i <= 4 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
  console.log(line(header));
  console.log(`| ${widths.map((w, i) => (i >= 2 && i <= 4 ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`);
  for (const r of rows) console.log(line(r));
}

async function measure(bench: Bench): Promise<Figure[]> {
  const rows: string[][] = [];
  const row = (scenario: string, what: string, xs: number[], vs: string): void => {
    rows.push([scenario, what, ms(median(xs)), ms(min(xs)), ms(max(xs)), vs]);
  };
  const figures: Figure[] = [];
  if (ONLY !== 'drain') {
    const a = await singlePod(bench);
    const b = await manyPods(bench);
    figures.push(...killReport(a, b, row));
  }
  if (ONLY !== 'kill') {
    const c = await benchDrain({ cri: bench.cri, pods: bench.pods, endpoint: bench.endpoint, count: DRAIN_PODS, rounds: DRAIN_ROUNDS, ...(BASELINE_ROOT ? { baseline: runBaseline } : {}) });
    figures.push(...drainReport(c, row));
  }
  const version = await bench.cri.version();
  console.log(`containerd ${version.runtimeVersion}; ${RUNS} runs of (a), ${ROUNDS} rounds of (b), ${DRAIN_ROUNDS} of (c); node ${process.version}`);
  printTable(rows);
  console.log('');
  for (const f of figures) {
    const value = f.unit === '×' ? `${f.value.toFixed(2)}×` : signedMs(f.value);
    console.log(`${f.figure}: ${value} (${f.value <= f.goalMax ? 'goal met' : 'goal NOT met'}: ≤ ${f.goalMax}${f.unit === '×' ? '×' : ` ${f.unit}`})`);
  }
  return figures;
}

async function main(): Promise<void> {
  requireBuild();
  let node: PrivateNode | undefined;
  let socket = process.env.PODCTL_E2E_SOCKET;
  if (!socket) {
    if (process.getuid?.() !== 0) throw new Error('bench:cri needs PODCTL_E2E_SOCKET or root (to start a containerd node)');
    node = new PrivateNode('/tmp/podctl-bench-node');
    socket = await node.up();
  }
  const runtime = socket;
  const endpoint = `unix://${socket}`;
  const cri = await connectCri({ endpoint: socket, timeoutMs: 60_000 });
  const pods = new PodFactory(cri, join(node?.nodeDir ?? join(socket, '..'), 'logs', 'pods'));
  const stateDir = await mkdtemp(join(tmpdir(), 'podctl-bench-cri-'));
  const sessionDir = await mkdtemp(join(tmpdir(), 'podctl-bench-cri-session-'));
  // The in-process variants are opened for their own runs only (not timed) and closed after: open,
  // they follow the runtime (a relist a second, since containerd 1.6 streams no events), which
  // would load the runtime and this process during the other variants' runs.
  const withStack = async <T>(fn: (stack: EngineStack) => Promise<T>): Promise<T> => {
    const stack = await EngineStack.open(runtime);
    try {
      return await fn(stack);
    } finally {
      await stack.close();
    }
  };
  const withSession = async <T>(fn: (session: NodeSession) => Promise<T>): Promise<T> => {
    const session = await openSession({ stateDir: sessionDir, runtimeEndpoint: endpoint });
    try {
      return await fn(session);
    } finally {
      await session.close();
    }
  };

  try {
    // warm-up: page in the binary, the image, the CRI connection
    const warm = await pods.create({ name: 'bench-warm' });
    await runPodctl(['kill', `${warm.namespace}/${warm.name}`], { endpoint, stateDir });
    await pods.removeAll();
    writeResults('cri', await measure({ cri, pods, endpoint, stateDir, withStack, withSession }));
  } finally {
    await pods.removeAll().catch(() => undefined);
    cri.close();
    await rm(stateDir, { recursive: true, force: true });
    await rm(sessionDir, { recursive: true, force: true });
    if (node) {
      await node.down();
      await rm(`${node.nodeDir}.lock`, { force: true });
    }
  }
}

await main();
