/**
 * Start-up benchmark: `podctl status` against the embedded simulator with 50 pods, versus a bare
 * `node -e 0`, median of N runs each (interleaved, after a warm-up). Goal: podctl status ≤ node + 150 ms.
 *
 * Then, side by side in the same run: `--version`, `status` on the 50 pods (with no, 8 and 50
 * checkpoints in the state dir) and `kill` of one pod
 * (a fresh simulator pod each run) from `node bin/run.js` (this benchmark's Node.js, and the
 * tools/node-lts's Node.js 26 when installed) and from the single executable dist/podctl-linux-x64 (when
 * built: `npm run sea`).
 *
 *   npm run build && npm run bench:startup            (N=15; BENCH_RUNS=N to change)
 *   npm run sea && npm run bench:startup              (with the executable's column)
 *   BENCH_BASELINE=DIR npm run bench:startup          (with a column for DIR/bin/run.js: another
 *                                                     build, e.g. a copy of bin/, dist/, package.json
 *                                                     and oclif.manifest.json made before a change)
 *
 * With a real containerd (PODCTL_E2E_SOCKET=…, from `NODE_DIR=… bash test/e2e/containerd-node.sh up`):
 * the single executable's `kill` of one pod against a minimal raw CRI client's StopContainer +
 * StopPodSandbox, each a fresh process (bench/support/startup-kill.ts; the baseline executable's
 * `kill` too, with BENCH_BASELINE_SEA).
 *
 * Prints tables; the figures go to bench/results/startup.json (`npm run bench:summary` puts them in
 * docs/benchmarks.md), the history into docs/bench/startup.md.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { demoNode, seedPods, startSimulator } from '../src/cri/simulator/index.js';
import { writeResults, type Figure } from './support/results.js';
import { benchKillStartup, type KillFigures } from './support/startup-kill.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const BIN = path.join(ROOT, 'bin', 'run.js');
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const PODS = 50;
const GOAL_MS = 150;

if (!existsSync(path.join(ROOT, 'dist', 'commands', 'status.js')) || !existsSync(path.join(ROOT, 'dist', 'cli.js'))) {
  console.error('dist/ is missing: run `npm run build` first');
  process.exit(1);
}

const dir = mkdtempSync(path.join(tmpdir(), 'podctl-bench-startup-'));
const sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), pods: demoNode(PODS) });
const common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state'), '--no-color'];

interface Case {
  name: string;
  argv: string[];
}
const cases: Case[] = [
  { name: 'node -e 0', argv: ['-e', '0'] },
  { name: 'podctl --version', argv: [BIN, '--version'] },
  { name: `podctl status (${PODS} pods)`, argv: [BIN, 'status', ...common] },
  { name: `podctl status -o json (${PODS} pods)`, argv: [BIN, 'status', '-o', 'json', ...common] },
];

/** Runs one child to completion (async: the simulator serves from this process meanwhile). */
function runOnce(argv: string[], env: Record<string, string> = {}, file = process.execPath): Promise<{ ms: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(file, argv, { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (code !== 0) reject(new Error(`${argv.join(' ')} exited ${code}: ${stderr}`));
      else resolve({ ms, stdout });
    });
  });
}

const check = await runOnce([BIN, 'status', ...common]);
const rows = check.stdout.trim().split('\n').length - 1;
if (rows !== PODS) throw new Error(`expected ${PODS} pods in the status table, got ${rows}`);

for (const c of cases) await runOnce(c.argv); // warm-up (file cache)
const samples = new Map<string, number[]>(cases.map((c) => [c.name, []]));
for (let i = 0; i < RUNS; i++) for (const c of cases) samples.get(c.name)?.push((await runOnce(c.argv)).ms);

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * (s.length - 1) + 0.5))] ?? NaN;
};
const base = quantile(samples.get('node -e 0') ?? [], 0.5);
console.log(`podctl start-up: median of ${RUNS} runs (interleaved), Node ${process.version}, ${PODS} simulator pods`);
console.table(
  cases.map((c) => {
    const xs = samples.get(c.name) ?? [];
    const median = quantile(xs, 0.5);
    return {
      command: c.name,
      'median ms': Math.round(median),
      'p90 ms': Math.round(quantile(xs, 0.9)),
      'min ms': Math.round(Math.min(...xs)),
      'over node -e 0 (ms)': Math.round(median - base),
    };
  }),
);
const statusOver = quantile(samples.get(`podctl status (${PODS} pods)`) ?? [], 0.5) - base;
console.log(`goal: podctl status ≤ node -e 0 + ${GOAL_MS} ms → ${Math.round(statusOver)} ms over: ${statusOver <= GOAL_MS ? 'MET' : 'NOT MET'}`);

// Where the time goes: one fresh process loading and running what `podctl status` loads and runs,
// step by step (cumulative order matters: each step excludes what earlier steps already loaded). The
// modules are the bundled ones bin/run.js loads (scripts/build.mjs gives these stable paths).
const dist = (p: string): string => JSON.stringify(path.join(ROOT, 'dist', p));
const phaseScript = `
  const t0 = performance.now(); let last = t0; const out = [];
  const lap = (name) => { const now = performance.now(); out.push([name, now - last]); last = now; };
  await import(${dist('cli.js')}); lap('CLI entry + @oclif/core (bundled)');
  await import(${dist('commands/status.js')}); lap('status command + lib + services');
  const { openSession } = await import(${dist('session/open.js')}); lap('session, store, engine modules');
  await import(${dist('cri/client/grpc-modules.js')}); lap('CRI proto (generated; no grpc-js)');
  const session = await openSession({ stateDir: process.env.BENCH_STATE_DIR, runtimeEndpoint: ${JSON.stringify(sim.endpoint)}, readOnly: true }); lap('openSession (read-only: connect, Version; first relist sent)');
  const { podStatus } = await import(${dist('services/diagnose/status.js')});
  const { statusTable } = await import(${dist('services/diagnose/output.js')});
  const { parseSelection } = await import(${dist('lib/refs.js')});
  const result = await podStatus({ session, selection: parseSelection({ args: [], allowEmpty: true, defaultAllNamespaces: true }), explain: false }); lap('listPods (50 pods: first relist answered, checkpoints, leases)');
  const { renderTable, createStyler } = await import(${dist('lib/output.js')});
  await renderTable(statusTable(result, false, createStyler(false)), createStyler(false)); lap('table rendering');
  await session.close(); lap('session.close');
  console.log(JSON.stringify(out));
`;
async function phases(stateDir: string, label: string): Promise<void> {
  const phaseRuns: [string, number][][] = [];
  for (let i = 0; i < Math.max(3, Math.ceil(RUNS / 3)); i++) {
    const { stdout } = await runOnce(['--input-type=module', '-e', phaseScript], { BENCH_STATE_DIR: stateDir });
    phaseRuns.push(JSON.parse(stdout) as [string, number][]);
  }
  console.log(`\nwhere the time goes, ${label} (median of ${phaseRuns.length} fresh processes, in load order):`);
  console.table(
    (phaseRuns[0] ?? []).map(([name], i) => ({
      step: name,
      'median ms': Math.round(
        quantile(
          phaseRuns.map((r) => r[i]?.[1] ?? NaN),
          0.5,
        ),
      ),
    })),
  );
}
await phases(path.join(dir, 'state'), 'no checkpoints');

// The same node after podctl has driven pods: a state dir with checkpoints (the store validates them).
const tracked = path.join(dir, 'state-tracked');
const trackedArgs = ['--runtime-endpoint', sim.endpoint, '--state-dir', tracked, '--no-color'];
await runOnce([BIN, 'kill', '-A', '-l', 'app=frontend', '--grace', '1', '--log-level', 'error', ...trackedArgs]);
const checkpoints = (await runOnce([BIN, 'status', '-o', 'json', ...trackedArgs])).stdout;
const trackedCount = (JSON.parse(checkpoints) as { pods: { state: string }[] }).pods.filter((p) => p.state !== 'runtime').length;
const trackedSamples: number[] = [];
const baseSamples: number[] = [];
await runOnce([BIN, 'status', ...trackedArgs]);
for (let i = 0; i < RUNS; i++) {
  baseSamples.push((await runOnce(['-e', '0'])).ms);
  trackedSamples.push((await runOnce([BIN, 'status', ...trackedArgs])).ms);
}
const trackedOver = quantile(trackedSamples, 0.5) - quantile(baseSamples, 0.5);
console.log(
  `\npodctl status (${PODS} pods, ${trackedCount} with checkpoints): median ${Math.round(quantile(trackedSamples, 0.5))} ms, ` +
    `${Math.round(trackedOver)} ms over node -e 0 (${Math.round(quantile(baseSamples, 0.5))} ms): ${trackedOver <= GOAL_MS ? 'MET' : 'NOT MET'}`,
);
await phases(tracked, `${trackedCount} checkpoints`);

// Side by side: the same commands from `node bin/run.js` and from the single executable.
interface Runner {
  name: string;
  file: string;
  prefix: string[];
}
const NODE_26 = path.join(ROOT, 'tools', 'node-lts', 'node_modules', 'node-lts-26', 'bin', 'node');
const SEA = path.join(ROOT, 'dist', 'podctl-linux-x64');
const BASELINE = process.env.BENCH_BASELINE;
if (BASELINE !== undefined && !existsSync(path.join(BASELINE, 'bin', 'run.js'))) throw new Error(`BENCH_BASELINE=${BASELINE}: no bin/run.js there`);
// BENCH_BASELINE_SEA=FILE: another build's single executable (e.g. main's, copied before a change).
const BASELINE_SEA = process.env.BENCH_BASELINE_SEA;
if (BASELINE_SEA !== undefined && !existsSync(BASELINE_SEA)) throw new Error(`BENCH_BASELINE_SEA=${BASELINE_SEA}: no such file`);
const runners: Runner[] = [
  ...(BASELINE !== undefined ? [{ name: `baseline bin/run.js`, file: process.execPath, prefix: [path.join(BASELINE, 'bin', 'run.js')] }] : []),
  ...(BASELINE_SEA !== undefined ? [{ name: 'baseline podctl-linux-x64', file: BASELINE_SEA, prefix: [] }] : []),
  { name: `node ${process.version} bin/run.js`, file: process.execPath, prefix: [BIN] },
  ...(existsSync(NODE_26) ? [{ name: 'node-lts-26 bin/run.js', file: NODE_26, prefix: [BIN] }] : []),
  ...(existsSync(SEA) ? [{ name: 'podctl-linux-x64', file: SEA, prefix: [] }] : []),
];
if (!existsSync(SEA)) console.log('\n(dist/podctl-linux-x64 is not built: run `npm run sea` for its column)');
const killSim = await startSimulator({ socketPath: path.join(dir, 'kill.sock'), pods: [] });
// A node of which podctl drove every pod: a checkpoint for each of the 50 (the store validates them all).
const allSim = await startSimulator({ socketPath: path.join(dir, 'all.sock'), pods: demoNode(PODS) });
const allArgs = ['--runtime-endpoint', allSim.endpoint, '--state-dir', path.join(dir, 'state-all'), '--no-color'];
await runOnce([BIN, 'kill', '-A', '--all', '-y', '--force', '--grace', '1', '--log-level', 'error', ...allArgs]);
// A node of 500 pods that podctl drove, every one checkpointed: `status` reads, checks and validates
// all 500 checkpoints (the store's restore path, in a fresh process).
const LARGE = Number(process.env.BENCH_LARGE_PODS ?? 500);
const largeSim = await startSimulator({ socketPath: path.join(dir, 'large.sock'), pods: demoNode(LARGE) });
const largeArgs = ['--runtime-endpoint', largeSim.endpoint, '--state-dir', path.join(dir, 'state-large'), '--no-color'];
await runOnce([BIN, 'kill', '-A', '--all', '-y', '--force', '--grace', '1', '--log-level', 'error', ...largeArgs]);
let killed = 0;
interface SideCase {
  name: string;
  /** Prepares the run (untimed) and returns its arguments. */
  args(runner: Runner): string[];
  /** Runs the runner's Node.js itself (a single executable's: node-lts-26), not podctl. */
  bare?: boolean;
}
const isSea = (r: Runner): boolean => r.prefix.length === 0;
const sideCases: SideCase[] = [
  { name: 'node -e 0 (the same Node.js)', args: () => ['-e', '0'], bare: true },
  { name: '--version', args: () => ['--version'] },
  { name: `status (${PODS} pods)`, args: (r) => ['status', '--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, `state-${runners.indexOf(r)}`), '--no-color'] },
  // the state dir of the checkpoint table above, read by every runner (status only reads it)
  { name: `status (${PODS} pods, ${trackedCount} with checkpoints)`, args: () => ['status', ...trackedArgs] },
  { name: `status (${PODS} pods, all with checkpoints)`, args: () => ['status', ...allArgs] },
  { name: `status (${LARGE} pods, ${LARGE} checkpoints)`, args: () => ['status', ...largeArgs] },
  {
    name: 'kill 1 pod (--grace 1)',
    args: (r) => {
      const name = `bench-kill-${(killed += 1)}`;
      seedPods(killSim.state, [{ name, namespace: 'bench', terminationGracePeriodSeconds: 30 }]);
      const state = path.join(dir, `kill-state-${runners.indexOf(r)}`);
      return ['kill', `bench/${name}`, '--grace', '1', '--runtime-endpoint', killSim.endpoint, '--state-dir', state, '--no-color', '--log-level', 'error'];
    },
  },
];
const side = new Map<string, number[]>();
const key = (c: SideCase, r: Runner) => `${c.name}\u0000${r.name}`;
const runSide = async (c: SideCase, r: Runner) => {
  if (c.bare) return (await runOnce(c.args(r), {}, isSea(r) ? NODE_26 : r.file)).ms;
  return (await runOnce([...r.prefix, ...c.args(r)], {}, r.file)).ms;
};
for (const c of sideCases) for (const r of runners) await runSide(c, r); // warm-up (and each bin/run.js cache)
for (let i = 0; i < RUNS; i++) {
  for (const c of sideCases) {
    for (const r of runners) {
      const list = side.get(key(c, r)) ?? [];
      list.push(await runSide(c, r));
      side.set(key(c, r), list);
    }
  }
}
console.log(`\nside by side: median (p90) ms of ${RUNS} interleaved runs each`);
console.table(
  sideCases.map((c) =>
    Object.fromEntries([
      ['command', c.name],
      ...runners.map((r) => {
        const xs = side.get(key(c, r)) ?? [];
        return [r.name, `${Math.round(quantile(xs, 0.5))} (${Math.round(quantile(xs, 0.9))})`];
      }),
    ]),
  ),
);
const killFigures = await killOnContainerd();
writeResults('startup', [
  {
    id: 'status-over-node',
    figure: `\`podctl status\` (${PODS} pods) from \`bin/run.js\`, over \`node -e 0\` (median)`,
    value: statusOver,
    unit: 'ms',
    goalMax: GOAL_MS,
    detail: `${Math.round(quantile(samples.get(`podctl status (${PODS} pods)`) ?? [], 0.5))} vs ${Math.round(base)} ms; ${RUNS} runs`,
    command: 'npm run build && npm run bench:startup',
  },
  ...sideFigures(),
  ...killFigure(killFigures),
]);
await killSim.close();
await allSim.close();
await largeSim.close();

await sim.close();
rmSync(dir, { recursive: true, force: true });

/** The single executable's figures: its `status` and `kill` over its own Node.js's bare start. */
function sideFigures(): Figure[] {
  const sea = runners.find((r) => r.file === SEA);
  if (sea === undefined || !existsSync(NODE_26)) return [];
  const median = (name: string, r: Runner): number => quantile(side.get(`${name}\u0000${r.name}`) ?? [], 0.5);
  const bare = median('node -e 0 (the same Node.js)', sea);
  const spread = (name: string): string => {
    const xs = side.get(`${name}\u0000${sea.name}`) ?? [];
    return `${Math.round(quantile(xs, 0.5))} ms (p90 ${Math.round(quantile(xs, 0.9))}) vs ${Math.round(bare)} ms; ${RUNS} runs`;
  };
  const command = 'npm run sea && npm run bench:startup';
  const baselineSea = runners.find((r) => r.file === BASELINE_SEA);
  const before = (name: string): string => (baselineSea ? `; previous build +${Math.round(median(name, baselineSea) - bare)} ms, side by side` : '');
  const statusName = `status (${PODS} pods)`;
  return [
    {
      id: 'sea-status-over-node',
      figure: `single executable: \`podctl status\` (${PODS} simulator pods) over \`node -e 0\` of its Node.js`,
      value: median(statusName, sea) - bare,
      unit: 'ms',
      goalMax: 40,
      detail: spread(statusName) + before(statusName),
      command,
    },
  ];
}

/** The single executable's (and the baseline's) `kill` against the raw CRI client, when a containerd node is given. */
async function killOnContainerd(): Promise<KillFigures | undefined> {
  const socket = process.env.PODCTL_E2E_SOCKET;
  if (socket === undefined || !existsSync(SEA) || !existsSync(NODE_26)) {
    console.log('\n(kill against raw CRI: needs PODCTL_E2E_SOCKET (a containerd test node), dist/podctl-linux-x64 and tools/node-lts)');
    return undefined;
  }
  const runners = [{ name: 'podctl-linux-x64', file: SEA, prefix: [] }, ...(BASELINE_SEA !== undefined ? [{ name: 'baseline podctl-linux-x64', file: BASELINE_SEA, prefix: [] }] : [])];
  const figures = await benchKillStartup({ socket, nodeDir: path.dirname(socket), rawNode: NODE_26, runners, runs: RUNS });
  console.log(`\nkill of one pod on containerd ${figures.runtimeVersion}, each a fresh process: median (p90) ms of ${RUNS} interleaved runs`);
  console.table(
    [...figures.samples].map(([name, xs]) => ({
      command: name === 'raw' ? 'raw CRI client (node-lts-26): StopContainer + StopPodSandbox' : `${name} kill ns/name`,
      'median ms': Math.round(quantile(xs, 0.5)),
      'p90 ms': Math.round(quantile(xs, 0.9)),
      'over raw (ms)': Math.round(quantile(xs, 0.5) - quantile(figures.samples.get('raw') ?? [], 0.5)),
    })),
  );
  return figures;
}

/** The single executable's `kill` over the raw CRI client's, with the baseline's beside it. */
function killFigure(figures: KillFigures | undefined): Figure[] {
  if (figures === undefined) return [];
  const median = (name: string): number => quantile(figures.samples.get(name) ?? [], 0.5);
  const raw = median('raw');
  const sea = figures.samples.get('podctl-linux-x64') ?? [];
  const before = figures.samples.has('baseline podctl-linux-x64') ? `; previous build +${Math.round(median('baseline podctl-linux-x64') - raw)} ms, side by side` : '';
  return [
    {
      id: 'sea-kill-over-raw-cri',
      figure: 'single executable: `podctl kill` of one pod on containerd over a raw CRI client’s StopContainer + StopPodSandbox (each a fresh process)',
      value: median('podctl-linux-x64') - raw,
      unit: 'ms',
      goalMax: 60,
      detail: `${Math.round(median('podctl-linux-x64'))} ms (p90 ${Math.round(quantile(sea, 0.9))}) vs ${Math.round(raw)} ms; containerd ${figures.runtimeVersion}; ${RUNS} runs${before}`,
      command: 'npm run sea && PODCTL_E2E_SOCKET=… npm run bench:startup',
    },
  ];
}
