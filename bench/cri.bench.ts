/**
 * CRI benchmark against a real containerd: what does podctl add to the runtime's own work?
 *
 *   npm run build && npm run bench:cri      (node --import ./bench/register.mjs bench/cri.bench.ts)
 *
 * Runtime: PODCTL_E2E_SOCKET if set (a node from test/e2e/containerd-node.sh); otherwise, as root,
 * the benchmark brings up a node of its own (NODE_DIR=/tmp/podctl-bench-node) and takes it down.
 * Env: BENCH_RUNS (single-pod runs, default 9), BENCH_ROUNDS (50-pod rounds, default 3),
 * BENCH_PODS (default 50), PODCTL_E2E_CLI_ROOT (run the CLI from a copy of the build),
 * BENCH_BASELINE_CLI_ROOT (another build, e.g. of the previous commit: its `podctl kill` runs
 * alternate with this one's, so a before/after comparison sees the same load).
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

const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PODS = Number(process.env.BENCH_PODS ?? 50);
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

/** The raw runtime work of a kill: StopContainer (the pod's grace), then StopPodSandbox. */
async function rawKill(cri: CriClient, pod: RealPod): Promise<void> {
  await Promise.all(pod.containers.map((c) => cri.stopContainer(c.id, 30)));
  await cri.stopPodSandbox(pod.sandboxId);
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
  const endpoint = `unix://${socket}`;
  const cri = await connectCri({ endpoint: socket, timeoutMs: 60_000 });
  const pods = new PodFactory(cri, join(node?.nodeDir ?? join(socket, '..'), 'logs', 'pods'));
  const stateDir = await mkdtemp(join(tmpdir(), 'podctl-bench-cri-'));
  const sessionDir = await mkdtemp(join(tmpdir(), 'podctl-bench-cri-session-'));
  // The in-process variants are opened for their own runs only (not timed) and closed after: open,
  // they follow the runtime (a relist a second, since containerd 1.6 streams no events), which
  // would load the runtime and this process during the other variants' runs.
  const withStack = async <T>(fn: (stack: EngineStack) => Promise<T>): Promise<T> => {
    const stack = await EngineStack.open(socket);
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
  const version = await cri.version();

  try {
    // warm-up: page in the binary, the image, the CRI connection
    const warm = await pods.create({ name: 'bench-warm' });
    await runPodctl(['kill', `${warm.namespace}/${warm.name}`], { endpoint, stateDir });
    await pods.removeAll();

    // ---------------------------------------------------------------- (a) one pod
    const a = { raw: [] as number[], engine: [] as number[], session: [] as number[], cli: [] as number[], base: [] as number[], node0: [] as number[], version: [] as number[] };
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

    // ---------------------------------------------------------------- (b) PODS at once
    const b = { raw: [] as number[], engine: [] as number[], session: [] as number[], cli: [] as number[], base: [] as number[] };
    // Each round runs every variant on fresh pods; the order rotates from round to round, so that
    // no variant always runs last (on a runtime that has done the most work in the round).
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
        async () => {
          const app = `bench-${process.pid}-${round}`;
          const cliPods = await pods.createMany(PODS, { name: 'bench-many-cli', labels: { app } });
          const cliRun = await runPodctl(['kill', '-n', cliPods[0]!.namespace, '-l', `app=${app}`, '--json'], {
            endpoint,
            stateDir,
            timeoutMs: 120_000,
          });
          if (cliRun.code !== 0) throw new Error(`podctl kill -l exited ${cliRun.code}: ${cliRun.stderr.trim()}`);
          const killed = (JSON.parse(cliRun.stdout) as { pods: { outcome: string }[] }).pods.filter((p) => p.outcome === 'terminated');
          if (killed.length !== PODS) throw new Error(`podctl kill -l terminated ${killed.length}/${PODS} pods`);
          b.cli.push(cliRun.ms);
        },
      ];
      if (BASELINE_ROOT) {
        variants.push(async () => {
          const baseApp = `bench-base-${process.pid}-${round}`;
          const basePods = await pods.createMany(PODS, { name: 'bench-many-base', labels: { app: baseApp } });
          const baseRun = await runBaseline(['kill', '-n', basePods[0]!.namespace, '-l', `app=${baseApp}`, '--json'], { endpoint, stateDir, timeoutMs: 120_000 });
          if (baseRun.code !== 0) throw new Error(`baseline podctl kill -l exited ${baseRun.code}: ${baseRun.stderr.trim()}`);
          b.base.push(baseRun.ms);
        });
      }
      for (let i = 0; i < variants.length; i++) {
        await variants[(round + i) % variants.length]!();
        await pods.removeAll();
      }
    }

    // ---------------------------------------------------------------- report
    const rows: string[][] = [];
    const row = (scenario: string, what: string, xs: number[], vs: string): void => {
      rows.push([scenario, what, ms(median(xs)), ms(min(xs)), ms(max(xs)), vs]);
    };
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

    const header = ['scenario', 'what', 'median ms', 'min ms', 'max ms', 'vs raw'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]): string => `| ${cells.map((c, i) => (i >= 2 && i <= 4 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
    console.log(`containerd ${version.runtimeVersion}; ${RUNS} runs of (a), ${ROUNDS} rounds of (b); node ${process.version}`);
    console.log(line(header));
    console.log(`| ${widths.map((w, i) => (i >= 2 && i <= 4 ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`);
    for (const r of rows) console.log(line(r));
    const overhead = median(a.cli) - rawA;
    const ratio = median(b.cli) / rawB;
    console.log(`\n(a) podctl kill overhead: ${signedMs(overhead)} (${overhead <= 150 ? 'goal met' : 'goal NOT met'}: ≤ 150 ms)`);
    console.log(`(b) ${PODS} pods: ${ratio.toFixed(2)}× the raw calls (${ratio <= 1.2 ? 'goal met' : 'goal NOT met'}: ≤ 1.2×)`);
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
