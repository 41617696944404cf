/**
 * Fault figures (issue 16): a full disk under the state dir (write-ahead holds — no pod is
 * signalled whose kill is not on disk; podctl never dies of it; the next run, with space back,
 * finishes everything; root only: the state dir is a 1 MiB tmpfs) and a flaky runtime (10 % and
 * 30 % of all CRI calls failing: sync-known and drain make progress, every unfinished pod says why).
 *
 * Setup: the embedded simulator in this process (its journal says which containers got a signal),
 * the built CLI (bin/run.js) as separate processes, as on a node.
 * - full before: the tmpfs is full but for three pages (leases fit, checkpoints do not); `podctl
 *   kill` of `--pods` pods. Counted: exit codes, pods reported failed naming their own file, pods
 *   signalled anyway; then space back and the same kill: pods terminated.
 * - filling mid-kill: `--pods` pods that ignore SIGTERM (grace 3 s) are killed; 300 ms in, the disk
 *   fills. Counted: podctl processes that died (a signal, or an unhandled rejection on stderr), pods
 *   terminated in the result; then space back, `podctl sync-known`: pods left terminating.
 *
 * - flaky runtime: a 24-pod demo simulator with `--fault CODE=RATE` (UNKNOWN: the engine retries;
 *   UNAVAILABLE: the client retries within the deadline), `--runs` times each: `podctl sync-known`
 *   with an empty desired list (every pod but the static ones is an orphan) — runs that exit 0 — and
 *   `podctl drain --grace-period 6 --critical-grace-period 2` — pods terminated, unfinished pods
 *   without an `error`.
 *
 *   npm run build && npm run bench:faults [-- --trials 5 --pods 6 --runs 3 --only disk|cri]
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startSimulator, type RunningSimulator } from '../src/cri/simulator/index.js';

const { values } = parseArgs({ options: { trials: { type: 'string', default: '5' }, pods: { type: 'string', default: '6' }, runs: { type: 'string', default: '3' }, only: { type: 'string' } } });
const RUNS = Number(values.runs);
const DISK = values.only !== 'cri';
const CRI = values.only !== 'disk';
const TRIALS = Number(values.trials);
const PODS = Number(values.pods);
const root = fileURLToPath(new URL('..', import.meta.url));
const bin = join(root, 'bin', 'run.js');

if (DISK && process.getuid?.() !== 0) {
  console.error('bench:faults needs root for the full-disk figures (it mounts a tmpfs); --only cri runs without');
  process.exit(2);
}

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function podctl(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' }, timeout: 120_000 }, (error, stdout, stderr) => {
      const e = error as (Error & { code?: number | string; signal?: NodeJS.Signals }) | null;
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, signal: e?.signal ?? null, stdout, stderr });
    });
  });
}

interface Disk {
  mount: string;
  stateDir: string;
  fill: (reservePages?: number) => void;
  free: () => void;
  close: () => void;
}

function tmpfs(): Disk {
  const mount = mkdtempSync(join(tmpdir(), 'podctl-bench-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', mount]);
  const stateDir = join(mount, 'state');
  mkdirSync(stateDir, { mode: 0o700 });
  const filler = join(mount, 'fill');
  return {
    mount,
    stateDir,
    fill: (reservePages = 0) => {
      const reserve = join(mount, 'reserve');
      if (reservePages > 0) execFileSync('dd', ['if=/dev/zero', `of=${reserve}`, 'bs=4096', `count=${reservePages}`], { stdio: 'ignore' });
      try {
        execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=4096'], { stdio: 'ignore' });
      } catch {
        // full: the point
      }
      rmSync(reserve, { force: true });
    },
    free: () => rmSync(filler, { force: true }),
    close: () => {
      execFileSync('umount', ['-l', mount]);
      rmSync(mount, { recursive: true, force: true });
    },
  };
}

async function node(onSigterm: 'exit' | 'ignore', grace: number): Promise<{ sim: RunningSimulator; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-bench-faults-'));
  const sim = await startSimulator({
    socketPath: join(dir, 'sim.sock'),
    pods: Array.from({ length: PODS }, (_, i) => ({ name: `pod-${i}`, namespace: 'bench', terminationGracePeriodSeconds: grace, containers: [{ name: 'c', onSigterm }] })),
  });
  return { sim, dir };
}

const signalled = (sim: RunningSimulator): number =>
  new Set(
    sim.state
      .journal()
      .filter((r) => r.kind === 'signal')
      .map((r) => (r as { id: string }).id),
  ).size;

interface KillJson {
  pods: { uid: string; outcome: string; error?: string }[];
}

const fullBefore = { trials: 0, exit1: 0, failedOwnFile: 0, podsSignalled: 0, crashed: 0, terminatedAfter: 0 };
const midFill = { trials: 0, crashed: 0, terminatedInResult: 0, leftTerminating: 0, exitCodes: new Map<string, number>() };

for (let t = 0; DISK && t < TRIALS; t += 1) {
  // full before the kill
  {
    const disk = tmpfs();
    const { sim, dir } = await node('exit', 2);
    try {
      const common = ['--runtime-endpoint', sim.endpoint, '--state-dir', disk.stateDir];
      await podctl(['status', ...common]);
      disk.fill(3);
      const run = await podctl(['kill', '--all', '-n', 'bench', '--yes', '--grace', '2', '--json', ...common]);
      fullBefore.trials += 1;
      if (run.code === 1) fullBefore.exit1 += 1;
      if (run.signal !== null || /unhandled|    at /i.test(run.stderr)) fullBefore.crashed += 1;
      const result = JSON.parse(run.stdout || '{"pods":[]}') as KillJson;
      for (const p of result.pods) if (p.outcome === 'failed' && p.error?.includes(p.uid) && /no space left/.test(p.error)) fullBefore.failedOwnFile += 1;
      fullBefore.podsSignalled += signalled(sim);
      disk.free();
      const again = await podctl(['kill', '--all', '-n', 'bench', '--yes', '--grace', '2', '--json', ...common]);
      fullBefore.terminatedAfter += (JSON.parse(again.stdout || '{"pods":[]}') as KillJson).pods.filter((p) => p.outcome === 'terminated').length;
    } finally {
      await sim.close();
      disk.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  // filling mid-kill
  {
    const disk = tmpfs();
    const { sim, dir } = await node('ignore', 3);
    try {
      const common = ['--runtime-endpoint', sim.endpoint, '--state-dir', disk.stateDir];
      const running = podctl(['kill', '--all', '-n', 'bench', '--yes', '--json', '--timeout', '60s', ...common]);
      await new Promise((r) => setTimeout(r, 300));
      disk.fill();
      const run = await running;
      midFill.trials += 1;
      const key = run.signal ?? String(run.code);
      midFill.exitCodes.set(key, (midFill.exitCodes.get(key) ?? 0) + 1);
      if (run.signal !== null || /unhandled|    at /i.test(run.stderr)) midFill.crashed += 1;
      midFill.terminatedInResult += (JSON.parse(run.stdout || '{"pods":[]}') as KillJson).pods.filter((p) => p.outcome === 'terminated').length;
      disk.free();
      await podctl(['sync-known', '--desired-from', 'runtime', '--json', ...common]);
      const status = await podctl(['status', '-A', '--json', ...common]);
      midFill.leftTerminating += (JSON.parse(status.stdout || '{"pods":[]}') as { pods: { state: string }[] }).pods.filter((p) => p.state === 'terminating').length;
    } finally {
      await sim.close();
      disk.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

const total = TRIALS * PODS;
if (DISK) {
  console.log(`\nfull disk under the state dir — ${TRIALS} trials × ${PODS} pods (1 MiB tmpfs, simulator)\n`);
  console.log('| scenario | figure | value |');
  console.log('| --- | --- | ---: |');
  console.log(`| full before the kill | kills that exited 1 | ${fullBefore.exit1}/${fullBefore.trials} |`);
  console.log(`| | podctl processes that died | ${fullBefore.crashed}/${fullBefore.trials} |`);
  console.log(`| | pods reported failed, naming their own file | ${fullBefore.failedOwnFile}/${total} |`);
  console.log(`| | pods signalled although their kill was not on disk | ${fullBefore.podsSignalled}/${total} |`);
  console.log(`| | pods terminated by the same kill with space back | ${fullBefore.terminatedAfter}/${total} |`);
  console.log(`| filling mid-kill (300 ms in) | podctl processes that died | ${midFill.crashed}/${midFill.trials} |`);
  console.log(`| | exit codes | ${[...midFill.exitCodes].map(([k, n]) => `${k}: ${n}`).join(', ')} |`);
  console.log(`| | pods terminated in the kill's result | ${midFill.terminatedInResult}/${total} |`);
  console.log(`| | pods left terminating after sync-known with space back | ${midFill.leftTerminating}/${total} |`);
}

// ------------------------------------------------------------------------------- flaky runtime

interface FlakyFigures {
  syncKnownOk: number;
  drained: number;
  planned: number;
  unexplained: number;
}

async function flakyRun(code: string, rate: number): Promise<FlakyFigures> {
  const figures: FlakyFigures = { syncKnownOk: 0, drained: 0, planned: 0, unexplained: 0 };
  const dir = mkdtempSync(join(tmpdir(), 'podctl-bench-flaky-'));
  const empty = join(dir, 'empty.json');
  await import('node:fs/promises').then((fs) => fs.writeFile(empty, '[]'));
  const drivers: number[] = [];
  const rule = { method: '*' as const, code: code === 'UNAVAILABLE' ? 14 : 2, details: `injected ${code}`, probability: rate };
  try {
    for (let r = 0; r < RUNS; r += 1) {
      for (const what of ['sync-known', 'drain'] as const) {
        const sim = await startSimulator({ socketPath: join(dir, `sim-${r}-${what}.sock`), pods: 24, timeScale: 0.05, faults: [rule] });
        const common = ['--runtime-endpoint', sim.endpoint, '--state-dir', join(dir, `state-${r}-${what}`)];
        try {
          const run =
            what === 'sync-known'
              ? await podctl(['sync-known', '--desired', empty, '--yes', '--json', ...common])
              : await podctl(['drain', '--grace-period', '6', '--critical-grace-period', '2', '--yes', '--json', ...common]);
          const result = JSON.parse(run.stdout || '{}') as { handedOffTo?: { pid: number } | null; groups?: { pods: { outcome: string; error?: string }[] }[] };
          if (result.handedOffTo?.pid) drivers.push(result.handedOffTo.pid);
          if (what === 'sync-known') {
            if (run.code === 0) figures.syncKnownOk += 1;
          } else {
            const pods = (result.groups ?? []).flatMap((g) => g.pods);
            figures.planned += pods.length;
            figures.drained += pods.filter((p) => p.outcome === 'terminated' || p.outcome === 'gone').length;
            figures.unexplained += pods.filter((p) => p.outcome !== 'terminated' && p.outcome !== 'gone' && !p.error).length;
          }
        } finally {
          for (const pid of drivers.splice(0)) {
            try {
              process.kill(pid, 'SIGKILL');
            } catch {
              // gone
            }
          }
          await sim.close();
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}

if (CRI) {
  console.log(`\nflaky runtime — 24-pod demo simulator, ${RUNS} runs per row (--fault CODE=RATE on every CRI method)\n`);
  console.log('| --fault | sync-known runs that succeed | drain: pods terminated | unfinished pods without an error |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const [code, rate] of [
    ['UNKNOWN', 0.1],
    ['UNKNOWN', 0.3],
    ['UNAVAILABLE', 0.1],
    ['UNAVAILABLE', 0.3],
  ] as const) {
    const f = await flakyRun(code, rate);
    console.log(`| ${code}=${rate} | ${f.syncKnownOk}/${RUNS} | ${f.drained}/${f.planned} | ${f.unexplained} |`);
  }
}
