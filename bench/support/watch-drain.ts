/**
 * The drain part of `npm run bench:watch`: what following a drain costs the node.
 *
 * For each pod count and each build (this tree's, and optionally a baseline build given with
 * `--baseline DIR`, a directory holding another build's bin/, dist/ and node_modules), three runs on a
 * fresh `podctl simulator --pods N` each — the same simulator for every build (this tree's), so that
 * builds differ in podctl alone (another build's simulator may send other events):
 * - alone: `podctl drain --grace-period 3 --critical-grace-period 2 -o json`, timed (wall);
 * - tui: the same drain while `podctl watch` runs in a real 160×45 terminal (tmux);
 * - json: the same drain while `podctl watch -o json` streams into a file.
 * The watch process is measured from /proc: CPU (utime + stime) over an idle window before the drain
 * and over the drain itself, as a share of one core; RSS before the drain, at its peak and after it
 * (3 s after the screen shows the drained node, or the JSON stream stopped growing). The terminal's last screen must show the drained node (no pod left
 * terminating), so a cheap but wrong screen does not pass for a cheap one. A drain that reaches its
 * bound (exit 3, as at 2,000 pods) hands its last pods to background drivers: the run waits for them
 * to finish those pods (at most DRIVERS_BOUND_MS) before it reads the end of the JSON stream, and
 * stops any still running before it removes its directory.
 *
 * Every podctl process is started as an operator's `podctl` of an npm install starts: bin/run.js run
 * as an executable, its first line choosing node's flags (`env -S node …`), with the node running
 * this benchmark first on the PATH.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import type { Figure } from './results.js';

interface DrainRun {
  drainMs: number;
  /** The drain ended at its bound (exit code 3) rather than with every pod terminated. */
  timedOut: boolean;
  /** The watch process's figures (undefined for `alone`). */
  watch?: { idleCpu: number; drainCpu: number; rssBeforeMb: number; rssPeakMb: number; rssAfterMb: number; transitions?: number; screenOk?: boolean };
}

export type DrainMode = 'alone' | 'tui' | 'json';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TICKS_PER_SECOND = 100;

/** utime + stime of a process, in ms. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/**
 * The background drivers a drain that reached its bound handed pods to (`kill --drive` processes
 * with this state dir): they run until their pods are terminated.
 */
function driversOf(stateDir: string): number[] {
  const out: number[] = [];
  // a driver names the state dir as its opener resolved it
  let resolved = stateDir;
  try {
    resolved = realpathSync(stateDir);
  } catch {
    // not made yet
  }
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (argv.includes('--drive') && (argv.includes(stateDir) || argv.includes(resolved))) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Longest a run waits for the drivers of a drain that reached its bound to finish their pods. */
const DRIVERS_BOUND_MS = 120_000;

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function until(test: () => boolean, what: string, timeoutMs: number, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** The PATH on which bin/run.js's `env -S node …` finds this benchmark's node. */
const PATH_WITH_THIS_NODE = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`;
const podctlEnv = { ...process.env, PATH: PATH_WITH_THIS_NODE };
const podctlBin = (root: string) => join(root, 'bin/run.js');

function startSimulator(root: string, dir: string, pods: number): Promise<ChildProcess> {
  const child = spawn(podctlBin(root), ['simulator', '--pods', String(pods), '--socket', join(dir, 'sim.sock'), '--state-dir', join(dir, 'state')], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: podctlEnv,
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (c) => reject(new Error(`simulator exited with ${c}`)));
    child.stderr.on('data', (d: Buffer) => {
      if (d.toString().includes('serving')) resolve(child);
    });
  });
}

export const hasTmux = spawnSync('tmux', ['-V']).status === 0;

/**
 * One drain of `pods` simulated pods with `root`'s build, alone or followed by a watch, on the
 * simulator of `simRoot`'s build.
 */
async function drainRun(root: string, simRoot: string, pods: number, mode: DrainMode, idleMs: number): Promise<DrainRun> {
  const dir = await mkdtemp(join(tmpdir(), 'podctl-bench-drain-'));
  const endpoint = `unix://${join(dir, 'sim.sock')}`;
  const stateDir = join(dir, 'state');
  const common = ['--runtime-endpoint', endpoint, '--state-dir', stateDir];
  const sim = await startSimulator(simRoot, dir, pods);
  const tmuxServer = `podctl-bench-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync('tmux', ['-L', tmuxServer, ...args], { encoding: 'utf8' });
  let watchPid: number | undefined;
  let jsonChild: ChildProcess | undefined;
  const jsonFile = join(dir, 'watch.jsonl');
  try {
    if (mode === 'tui') {
      const cmd = `PATH='${PATH_WITH_THIS_NODE}' exec ${podctlBin(root)} watch ${common.join(' ')} --node bench`;
      tmux('new-session', '-d', '-s', 'w', '-x', '160', '-y', '45', '-c', root, cmd);
      watchPid = Number(tmux('display', '-p', '-t', 'w', '#{pane_pid}').trim());
      await until(() => tmux('capture-pane', '-p', '-t', 'w').includes(`${pods}/${pods} pods`), 'the watch screen', 60_000);
    } else if (mode === 'json') {
      const out = createWriteStream(jsonFile);
      await new Promise((r) => out.once('open', r));
      jsonChild = spawn(podctlBin(root), ['watch', '-o', 'json', ...common], { stdio: ['ignore', out, 'ignore'], env: podctlEnv });
      watchPid = jsonChild.pid!;
      await until(() => existsSync(jsonFile) && readFileSync(jsonFile, 'utf8').split('\n').length > pods, 'the JSON stream', 60_000);
    }
    const watch: DrainRun['watch'] = watchPid !== undefined ? { idleCpu: 0, drainCpu: 0, rssBeforeMb: 0, rssPeakMb: 0, rssAfterMb: 0 } : undefined;
    if (watchPid !== undefined && watch) {
      await sleep(2_000);
      const c0 = cpuMs(watchPid);
      const t0 = performance.now();
      await sleep(idleMs);
      watch.idleCpu = ((cpuMs(watchPid) - c0) / (performance.now() - t0)) * 100;
      watch.rssBeforeMb = rssMb(watchPid);
    }
    const c0 = watchPid !== undefined ? cpuMs(watchPid) : 0;
    const t0 = performance.now();
    let peak = 0;
    // a watch that exits mid-drain fails the run below (its /proc entry gone), not this timer
    const sampler = watchPid !== undefined ? setInterval(() => (peak = existsSync(`/proc/${watchPid}`) ? Math.max(peak, rssMb(watchPid!)) : peak), 100) : undefined;
    const drain = spawn(podctlBin(root), ['drain', '--grace-period', '3', '--critical-grace-period', '2', '--yes', '-o', 'json', ...common], {
      stdio: ['ignore', 'ignore', 'ignore'],
      env: podctlEnv,
    });
    const code = await new Promise<number | null>((r) => drain.once('exit', r));
    const drainMs = performance.now() - t0;
    if (code !== 0 && code !== 3) throw new Error(`bench: drain exited with ${code}`);
    const timedOut = code === 3;
    if (timedOut) {
      // the pods handed on at the bound are the drivers' to finish: the run ends when they have
      // (so the JSON stream is read to its end), and they are stopped below if they have not
      await until(() => driversOf(stateDir).length === 0, 'the background drivers', DRIVERS_BOUND_MS).catch(() => undefined);
    }
    if (watchPid !== undefined && watch) {
      if (!existsSync(`/proc/${watchPid}`)) throw new Error(`bench: the watch (pid ${watchPid}) exited during the drain (${mode})`);
      watch.drainCpu = ((cpuMs(watchPid) - c0) / drainMs) * 100;
      // Let the screen settle on the drained node, then read the memory the history left behind.
      if (mode === 'tui') {
        await until(() => /sync 0 {2}terminating 0 /.test(tmux('capture-pane', '-p', '-t', 'w')), 'the drained screen', 30_000).then(
          () => (watch.screenOk = true),
          () => (watch.screenOk = false),
        );
      }
      if (mode === 'json') {
        // the stream has read the drained node when its file stops growing (a re-read is at most 2 s apart)
        let size = -1;
        await until(
          () => {
            const now = readFileSync(jsonFile).length;
            const still = now === size;
            size = now;
            return still;
          },
          'the stream to catch up',
          30_000,
          2_500,
        ).catch(() => undefined);
      }
      await sleep(3_000);
      clearInterval(sampler);
      watch.rssPeakMb = Math.max(peak, rssMb(watchPid));
      watch.rssAfterMb = rssMb(watchPid);
      if (mode === 'json')
        watch.transitions = readFileSync(jsonFile, 'utf8')
          .split('\n')
          .filter((l) => l.includes('"type":"transition"')).length;
    }
    return watch ? { drainMs, timedOut, watch } : { drainMs, timedOut };
  } finally {
    if (mode === 'tui') {
      try {
        tmux('kill-server');
      } catch {
        // gone already
      }
    }
    const exited = (c: ChildProcess) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.once('exit', r)));
    if (jsonChild) {
      jsonChild.kill('SIGTERM');
      await exited(jsonChild);
    }
    if (mode === 'tui' && watchPid !== undefined) {
      const pid = watchPid;
      await until(() => !existsSync(`/proc/${pid}`), 'the watch to exit', 10_000).catch(() => undefined);
    }
    // a driver left running would write its state again under the removed directory
    for (const pid of driversOf(stateDir)) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // gone meanwhile
      }
    }
    await until(() => driversOf(stateDir).length === 0, 'the background drivers to stop', 10_000).catch(() => undefined);
    sim.kill('SIGTERM');
    await exited(sim);
    await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

export interface DrainFigures {
  build: string;
  pods: number;
  alone: number;
  tui: DrainRun[];
  json: DrainRun[];
  aloneRuns: number[];
  aloneTimedOut: number;
}

/** Runs the variants interleaved (alone, tui, json for each build in turn), `runs` times. */
export async function drainFigures(
  builds: { label: string; root: string }[],
  podCounts: number[],
  runs: number,
  idleMs: number,
  modes: readonly DrainMode[] = ['alone', 'tui', 'json'],
  simRoot: string = builds[0]!.root,
): Promise<DrainFigures[]> {
  const out: DrainFigures[] = [];
  for (const pods of podCounts) {
    const per = new Map(builds.map((b) => [b.label, { alone: [] as DrainRun[], tui: [] as DrainRun[], json: [] as DrainRun[] }]));
    for (let i = 0; i < runs; i += 1) {
      for (const b of builds) {
        const acc = per.get(b.label)!;
        if (modes.includes('alone')) acc.alone.push(await drainRun(b.root, simRoot, pods, 'alone', idleMs));
        if (hasTmux && modes.includes('tui')) acc.tui.push(await drainRun(b.root, simRoot, pods, 'tui', idleMs));
        if (modes.includes('json')) acc.json.push(await drainRun(b.root, simRoot, pods, 'json', idleMs));
      }
    }
    for (const b of builds) {
      const acc = per.get(b.label)!;
      const alone = acc.alone.map((r) => r.drainMs);
      out.push({ build: b.label, pods, alone: median(alone), aloneRuns: alone, aloneTimedOut: acc.alone.filter((r) => r.timedOut).length, tui: acc.tui, json: acc.json });
    }
  }
  return out;
}

/** The results-file figures of one build's drains with the screen open (bench/support/results.ts). */
export function drainResults(figures: DrainFigures[], build: string, command: string): Figure[] {
  const out: Figure[] = [];
  for (const f of figures.filter((x) => x.build === build && x.tui.length > 0)) {
    const runs = `${f.tui.length} run(s), ${f.pods} pods`;
    const range = (xs: number[], fmt: (x: number) => string) => (xs.length > 1 ? `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}, ` : '');
    const ratios = f.tui.map((r) => r.drainMs / f.alone);
    const cpu = f.tui.map((r) => r.watch!.drainCpu);
    const rss = f.tui.map((r) => r.watch!.rssPeakMb);
    const idle = f.tui.map((r) => r.watch!.idleCpu);
    const base = { command };
    out.push(
      {
        ...base,
        id: `drain-${f.pods}-ratio`,
        figure: `${f.pods}-pod drain with \`podctl watch\` open, to the drain alone`,
        value: median(ratios),
        unit: '×',
        goalMax: 1.1,
        detail: `${range(ratios, (x) => `${x.toFixed(2)}×`)}${runs}; alone ${(f.alone / 1000).toFixed(1)} s`,
      },
      {
        ...base,
        id: `drain-${f.pods}-cpu`,
        figure: `${f.pods}-pod drain: the screen's CPU, % of a core`,
        value: median(cpu),
        unit: '%',
        goalMax: 15,
        detail: `${range(cpu, (x) => x.toFixed(1))}${runs}`,
      },
      { ...base, id: `drain-${f.pods}-rss`, figure: `${f.pods}-pod drain: the screen's peak RSS`, value: median(rss), unit: 'MB', goalMax: 150, detail: `${range(rss, (x) => x.toFixed(0))}${runs}` },
      { ...base, id: `drain-${f.pods}-idle`, figure: `\`podctl watch\` (tmux) idle CPU before a ${f.pods}-pod drain`, value: median(idle), unit: '%', goalMax: 1, detail: runs },
    );
  }
  return out;
}

/** The side-by-side table (one column per build and pod count). */
export function drainTable(figures: DrainFigures[]): string {
  const f1 = (x: number) => x.toFixed(1);
  const s = (x: number) => `${(x / 1000).toFixed(2)} s`;
  const mm = (xs: number[], fmt: (x: number) => string) => (xs.length === 0 ? '—' : xs.length === 1 ? fmt(xs[0]!) : `${fmt(median(xs))} (${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))})`);
  const w = (runs: DrainRun[], pick: (w: NonNullable<DrainRun['watch']>) => number) => runs.map((r) => pick(r.watch!));
  const rows: [string, (f: DrainFigures) => string][] = [
    ['drain alone', (f) => mm(f.aloneRuns, s)],
    [
      'drain with watch (160×45 tmux)',
      (f) =>
        mm(
          f.tui.map((r) => r.drainMs),
          s,
        ),
    ],
    [
      '  ratio to alone',
      (f) =>
        mm(
          f.tui.map((r) => r.drainMs / f.alone),
          (x) => `${x.toFixed(2)}×`,
        ),
    ],
    [
      '  watch CPU over the drain, % of a core',
      (f) =>
        mm(
          w(f.tui, (x) => x.drainCpu),
          f1,
        ),
    ],
    [
      '  watch RSS before / peak / after, MB',
      (f) => (f.tui.length ? `${f1(median(w(f.tui, (x) => x.rssBeforeMb)))} / ${f1(median(w(f.tui, (x) => x.rssPeakMb)))} / ${f1(median(w(f.tui, (x) => x.rssAfterMb)))}` : '—'),
    ],
    [
      '  watch idle CPU before the drain, %',
      (f) =>
        mm(
          w(f.tui, (x) => x.idleCpu),
          (x) => x.toFixed(2),
        ),
    ],
    ['drains that hit their bound (alone / watch / json)', (f) => `${f.aloneTimedOut} / ${f.tui.filter((r) => r.timedOut).length} / ${f.json.filter((r) => r.timedOut).length}`],
    ['  screen shows the drained node', (f) => (f.tui.length ? (f.tui.every((r) => r.watch!.screenOk) ? 'yes' : 'NO') : '—')],
    [
      'drain with watch -o json',
      (f) =>
        mm(
          f.json.map((r) => r.drainMs),
          s,
        ),
    ],
    [
      '  ratio to alone',
      (f) =>
        mm(
          f.json.map((r) => r.drainMs / f.alone),
          (x) => `${x.toFixed(2)}×`,
        ),
    ],
    [
      '  watch -o json CPU over the drain, %',
      (f) =>
        mm(
          w(f.json, (x) => x.drainCpu),
          f1,
        ),
    ],
    [
      '  watch -o json RSS before / peak / after, MB',
      (f) => (f.json.length ? `${f1(median(w(f.json, (x) => x.rssBeforeMb)))} / ${f1(median(w(f.json, (x) => x.rssPeakMb)))} / ${f1(median(w(f.json, (x) => x.rssAfterMb)))}` : '—'),
    ],
    ['  transition lines', (f) => f.json.map((r) => String(r.watch!.transitions)).join(', ')],
    [
      '  watch -o json idle CPU, %',
      (f) =>
        mm(
          w(f.json, (x) => x.idleCpu),
          (x) => x.toFixed(2),
        ),
    ],
  ];
  const header = ['', ...figures.map((f) => `${f.build}, ${f.pods} pods`)];
  const body = rows.map(([k, fn]) => [k, ...figures.map(fn)]);
  const widths = header.map((_, i) => Math.max(...[header, ...body].map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((x) => '-'.repeat(x + 2)).join('|')}|`, ...body.map(line)].join('\n');
}
