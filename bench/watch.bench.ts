/**
 * Benchmark of `podctl watch` with a 200-pod node: how fast a transition reaches the screen, and what
 * the screen costs in CPU while nothing happens and while pods count down.
 *
 * Setup: the embedded CRI simulator serves 200 demo pods from a child process (so its CPU is not
 * counted); this process opens a real node session on it, runs the watch feed and renders the Ink
 * screen into an in-memory 160×50 terminal, timestamping every frame written. Before each kill the
 * bench types `/namespace/name⏎` so the pod's row is on screen whatever its state sorts to.
 *
 * Figures:
 * - latency, local: `requestKill` here → the engine's state-changed event → the first frame showing
 *   the pod as terminating (or later): frame time − event time.
 * - latency, other session: a second session in this process (it shares only the checkpoint store)
 *   kills a pod → its checkpoint → this watch's store watcher → frame, split at the moment this
 *   watch's session hears of the checkpoint. No podctl command runs two sessions in one process: the
 *   writer's work (its engine, its runtime calls, its checkpoint writes) runs on the watch's own
 *   thread here, so this line is a stress of the follower's path, not a path of its own; another
 *   process's write is the next line.
 * - latency, another podctl process: `podctl kill --grace 1` (bin/run.js) of a pod → from the
 *   transition it wrote (its checkpoint's terminatingAt) to the first frame showing it.
 * The session, the feed and the screen are `podctl watch`'s own: its session options (the runtime's
 * events patch the listing), its pacing (WATCH_COALESCE_MS, its read budget), the production builds
 * of React and Ink.
 * - idle CPU: process.cpuUsage() over a window with no change on a node at rest (its pods started
 *   minutes ago: AT_REST_AGE_MS) — the screen's, the feed's and the session's own cost — with the
 *   number of listings and frames in that window.
 * - countdown CPU: the same with pods terminating under long grace periods (1 s countdown tick).
 *
 * Then the drain table (bench/support/watch-drain.ts): a drain of 500 and 2,000 simulated pods
 * alone, with `podctl watch` open in a 160×45 tmux terminal, and with `watch -o json`, side by side;
 * `--baseline DIR` adds another build's columns (DIR holds its bin/, dist/, node_modules).
 *
 *   npm run bench:watch [-- --pods 200 --window 10 --samples 10 --only latency|drain
 *                          --drain-pods 500,2000 --runs 1 --idle-window 5 --baseline DIR
 *                          --modes alone,tui,json]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { openSession } from '../src/session/open.js';
import type { NodeSession, PodInfo } from '../src/domain/session-api.js';
import { WatchFeed } from '../src/services/watch/watch-feed.js';
import { useProductionReact, WATCH_COALESCE_MS, WATCH_READ_BUDGET, watchRuntimeMaxAgeMs } from '../src/services/watch/watch.js';
import { decodeCheckpoint } from '../src/store/format.js';
import { writeResults } from './support/results.js';

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '200' },
    window: { type: 'string', default: '10' },
    samples: { type: 'string', default: '10' },
    only: { type: 'string' },
    'drain-pods': { type: 'string', default: '500,2000' },
    runs: { type: 'string', default: '1' },
    'idle-window': { type: 'string', default: '5' },
    baseline: { type: 'string' },
    'baseline-only': { type: 'boolean', default: false },
    modes: { type: 'string', default: 'alone,tui,json' },
  },
});
const POD_COUNT = Number(values.pods);
const WINDOW_MS = Number(values.window) * 1000;
const SAMPLES = Number(values.samples);
const root = fileURLToPath(new URL('..', import.meta.url));
/**
 * How long ago the node's pods started: a node at rest, whose pods have been in their state for
 * minutes (the screen shows their time in state in minutes and redraws it once a minute). Pods in
 * their state for less than a minute show seconds, which the screen redraws every second.
 */
const AT_REST_AGE_MS = 5 * 60_000;

/** An in-memory terminal: records every frame Ink writes, with its time. */
class FakeTerminal extends Writable {
  isTTY = true;
  columns = 160;
  rows = 50;
  frames = 0;
  #last = '';
  #watchers: { test: (screen: string) => boolean; resolve: (at: number) => void }[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    const at = Date.now();
    this.frames += 1;
    const screen = chunk.toString().replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '');
    if (screen.trim() !== '') this.#last = screen;
    this.#watchers = this.#watchers.filter((w) => (w.test(screen) ? (w.resolve(at), false) : true));
    done();
  }
  /** Resolves with the time of the first frame (from now on, or the current one) for which `test` holds. */
  until(test: (screen: string) => boolean, timeoutMs = 10_000, orCurrent = false): Promise<number> {
    if (orCurrent && test(this.#last)) return Promise.resolve(Date.now());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no such frame within the bound; last screen:\n${this.#last}`)), timeoutMs);
      this.#watchers.push({
        test,
        resolve: (at) => {
          clearTimeout(timer);
          resolve(at);
        },
      });
    });
  }
}

function startSimulatorProcess(socketPath: string): Promise<ChildProcess> {
  const code = `
    import { startSimulator } from ${JSON.stringify(join(root, 'src/cri/simulator/index.ts'))};
    // the pods started minutes ago, as on a node at rest (the clock runs on time once they exist)
    let age = ${AT_REST_AGE_MS};
    const sim = await startSimulator({ socketPath: ${JSON.stringify(socketPath)}, pods: ${POD_COUNT}, clock: { now: () => Date.now() - age } });
    age = 0;
    process.stdout.write('ready\\n');
    process.on('SIGTERM', async () => { await sim.close(); process.exit(0); });
  `;
  const child = spawn(process.execPath, ['--import', join(root, 'bench/register.mjs'), '--input-type=module', '-e', code], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (c) => reject(new Error(`simulator exited with ${c}`)));
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve(child);
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

/** CPU of this process as a share of one core over `ms`, with listings and frames in the window. */
async function cpuWindow(ms: number, session: { listCalls: number }, term: FakeTerminal): Promise<{ cpu: number; lists: number; frames: number }> {
  const lists0 = session.listCalls;
  const frames0 = term.frames;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await sleep(ms);
  const c = process.cpuUsage(c0);
  const wall = performance.now() - t0;
  return { cpu: ((c.user + c.system) / 1000 / wall) * 100, lists: session.listCalls - lists0, frames: term.frames - frames0 };
}

/** Counts listings of a session (to show that idle means no listing). */
function counted(session: NodeSession): NodeSession & { listCalls: number } {
  const s = session as NodeSession & { listCalls: number };
  s.listCalls = 0;
  const list = session.listPods.bind(session);
  s.listPods = async (options) => {
    s.listCalls += 1;
    return list(options);
  };
  return s;
}

const rowOf = (screen: string, p: PodInfo) => screen.split('\n').find((l) => l.includes(` ${p.namespace}/${p.name} `));
const shownTerminating = (p: PodInfo) => (screen: string) => /terminat|finished/.test(rowOf(screen, p) ?? '');

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'podctl-bench-watch-'));
  const socketPath = join(dir, 'sim.sock');
  const sim = await startSimulatorProcess(socketPath);
  // Never leave the simulator behind, even when the benchmark fails.
  process.once('exit', () => sim.kill('SIGKILL'));
  await stat(socketPath);
  const stateDir = join(dir, 'state');
  // the session `podctl watch` opens (commands/watch.ts): the runtime's events patch its listing, and
  // start relists no more often than the watch's re-reads accept them
  const session = counted(await openSession({ stateDir, runtimeEndpoint: `unix://${socketPath}`, runtimeEventPatches: true, eventRelistIntervalMs: watchRuntimeMaxAgeMs, exitDetails: 'driven' }));
  const other = await openSession({ stateDir, runtimeEndpoint: `unix://${socketPath}` });
  const term = new FakeTerminal();
  // A keyboard: the bench filters the table down to the pod it kills, as an operator would.
  const keyboard = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => undefined, ref: () => undefined, unref: () => undefined });
  const showOnly = async (p: PodInfo) => {
    const ref = `${p.namespace}/${p.name}`;
    const shown = term.until((s) => s.includes(`filter "${ref}"`) && s.includes(' 1/'));
    // Escape, slash, the reference (pasted), enter: each its own read, as a terminal delivers them.
    for (const keys of ['\u001b', '/', ref, '\r']) {
      keyboard.write(keys);
      await sleep(20);
    }
    await shown;
  };
  // `podctl watch`'s own pacing: re-reads at most every WATCH_COALESCE_MS, within its read budget.
  const feed = new WatchFeed(session, { coalesceMs: WATCH_COALESCE_MS, readBudget: WATCH_READ_BUDGET, runtimeMaxAgeMs: watchRuntimeMaxAgeMs });
  await feed.start();
  // the React and Ink builds `podctl watch` runs (watch.ts), not their development builds
  useProductionReact();
  const { renderWatch } = await import('../src/tui/index.js');
  const { screenRules } = await import('../src/services/watch/screen-rules.js');
  const stop = new AbortController();
  const screen = renderWatch({
    source: feed,
    requestKill: (r) => session.requestKill(r),
    rules: screenRules,
    color: true,
    stdout: term as unknown as NodeJS.WriteStream,
    stdin: keyboard as unknown as NodeJS.ReadStream,
    stderr: term as unknown as NodeJS.WriteStream,
    signal: stop.signal,
  });
  await term.until((s) => s.includes('NAMESPACE/NAME') && s.includes(`${POD_COUNT}/${POD_COUNT} pods`), 10_000, true);
  await sleep(2_000);

  const idle = await cpuWindow(WINDOW_MS, session, term);

  // Pods in name order; kill from the start (local) and the end (other process) of the list.
  const pods = [...(await session.listPods())].sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  const stateChangedAt = new Map<string, number>();
  const record = (e: { source: string; event?: { type: string; uid: string; at: number; to?: string } }) => {
    if (e.source === 'engine' && e.event?.type === 'state-changed' && e.event.to === 'terminating') stateChangedAt.set(e.event.uid, e.event.at);
  };
  session.subscribe(record as never);
  other.subscribe(record as never);
  // when this watch's session first hears of a pod's checkpoint written by another (its store watcher)
  const storeHeardAt = new Map<string, number>();
  session.subscribe((e) => {
    if (e.source === 'store' && e.kind === 'checkpoint-changed' && !storeHeardAt.has(e.uid)) storeHeardAt.set(e.uid, e.at);
  });

  const local: number[] = [];
  for (const p of pods.slice(0, SAMPLES)) {
    await showOnly(p);
    const shown = term.until(shownTerminating(p));
    await session.requestKill({ uid: p.uid, gracePeriodSeconds: 120 });
    const at = await shown;
    local.push(at - (stateChangedAt.get(p.uid) ?? at));
    await sleep(150);
  }
  const remote: number[] = [];
  // the other session's part (its transition to its checkpoint's rename heard here) and this watch's (heard to frame)
  const remoteToStore: number[] = [];
  const remoteToFrame: number[] = [];
  for (const p of pods.slice(-SAMPLES)) {
    await showOnly(p);
    const shown = term.until(shownTerminating(p));
    await other.requestKill({ uid: p.uid, gracePeriodSeconds: 120 });
    const at = await shown;
    const changedAt = stateChangedAt.get(p.uid) ?? at;
    remote.push(at - changedAt);
    const heardAt = storeHeardAt.get(p.uid);
    if (heardAt !== undefined) {
      remoteToStore.push(heardAt - changedAt);
      remoteToFrame.push(at - heardAt);
    }
    await sleep(150);
  }
  // Another podctl process: `podctl kill --grace 1` (bin/run.js) on the same state dir; from the
  // transition it wrote (its checkpoint's terminatingAt) to this screen's first frame showing it.
  const processes: number[] = [];
  for (const p of pods.slice(SAMPLES, 2 * SAMPLES)) {
    await showOnly(p);
    const shown = term.until(shownTerminating(p), 20_000);
    const kill = killFromAnotherProcess(p, stateDir, socketPath);
    const at = await shown;
    await kill;
    processes.push(at - (await terminatingAt(stateDir, p.uid)));
    await sleep(150);
  }
  // The other session stands for a process that has exited by now: its pods stay terminating.
  await other.close();
  keyboard.write('\u001b');
  await sleep(1_500);
  const terminating = (await session.listPods()).filter((p) => p.state === 'terminating').length;
  const kinds = new Map<string, number>();
  const countKinds = session.subscribe((e) => {
    const k = e.source === 'engine' ? `engine:${e.event.type}` : `${e.source}:${e.kind}${e.source === 'runtime' ? (e.uids.length ? '(changed)' : '(same)') : ''}`;
    kinds.set(k, (kinds.get(k) ?? 0) + 1);
  });
  const countdown = await cpuWindow(WINDOW_MS, session, term);
  countKinds();

  stop.abort();
  await screen;
  feed.close();
  await session.close();
  sim.kill('SIGTERM');
  await new Promise((r) => sim.once('exit', r));
  await rm(dir, { recursive: true, force: true });

  const ms = (x: number) => `${x.toFixed(0)} ms`;
  const rows: [string, string][] = [
    ['pods on the node', String(POD_COUNT)],
    [`latency, this process (n=${local.length}) p50 / p95 / max`, `${ms(percentile(local, 50))} / ${ms(percentile(local, 95))} / ${ms(Math.max(...local))}`],
    [`latency, a second session in this process, via the store (n=${remote.length}) p50 / p95 / max`, `${ms(percentile(remote, 50))} / ${ms(percentile(remote, 95))} / ${ms(Math.max(...remote))}`],
    [
      `  of which to its checkpoint heard here (n=${remoteToStore.length}) p50 / p95 / max`,
      `${ms(percentile(remoteToStore, 50))} / ${ms(percentile(remoteToStore, 95))} / ${ms(Math.max(...remoteToStore))}`,
    ],
    [`  of which heard to the frame p50 / p95 / max`, `${ms(percentile(remoteToFrame, 50))} / ${ms(percentile(remoteToFrame, 95))} / ${ms(Math.max(...remoteToFrame))}`],
    [`latency, another podctl process (n=${processes.length}) p50 / p95 / max`, `${ms(percentile(processes, 50))} / ${ms(percentile(processes, 95))} / ${ms(Math.max(...processes))}`],
    [`idle CPU over ${WINDOW_MS / 1000} s (listings, frames)`, `${idle.cpu.toFixed(2)} % (${idle.lists}, ${idle.frames})`],
    [`countdown CPU over ${WINDOW_MS / 1000} s, ${terminating} terminating (listings, frames)`, `${countdown.cpu.toFixed(2)} % (${countdown.lists}, ${countdown.frames})`],
  ];
  rows.push([
    'session events in the countdown window',
    [...kinds]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${n}`)
      .join(', '),
  ]);
  const w = Math.max(...rows.map((r) => r[0].length));
  console.log(`${'measure'.padEnd(w)}  value`);
  console.log(`${'-'.repeat(w)}  ${'-'.repeat(30)}`);
  for (const [k, v] of rows) console.log(`${k.padEnd(w)}  ${v}`);
  const command = `npm run build && npm run bench:watch -- --only latency --samples ${SAMPLES}`;
  const spread = (xs: number[]) => `p50 ${ms(percentile(xs, 50))}, max ${ms(Math.max(...xs))}; n=${xs.length}, ${POD_COUNT} pods`;
  writeResults('watch', [
    { id: 'latency-local', figure: '`podctl watch`: a transition in this process → on screen, p95', value: percentile(local, 95), unit: 'ms', goalMax: 100, detail: spread(local), command },
    {
      id: 'latency-process',
      figure: '`podctl watch`: another podctl process’s transition → on screen, p95',
      value: percentile(processes, 95),
      unit: 'ms',
      goalMax: 100,
      detail: spread(processes),
      command,
    },
    {
      id: 'idle-cpu',
      figure: `\`podctl watch\`: idle CPU, ${POD_COUNT} pods`,
      value: idle.cpu,
      unit: '%',
      goalMax: 1,
      detail: `${WINDOW_MS / 1000} s window, a node at rest (pods started ${AT_REST_AGE_MS / 60_000} min before)`,
      command,
    },
  ]);
}

/** `podctl kill --grace 1` of one pod from a fresh process (bin/run.js) on the watch's state dir. */
function killFromAnotherProcess(p: PodInfo, stateDir: string, socketPath: string): Promise<void> {
  const args = [
    join(root, 'bin', 'run.js'),
    'kill',
    `${p.namespace}/${p.name}`,
    '--grace',
    '1',
    '--state-dir',
    stateDir,
    '--runtime-endpoint',
    `unix://${socketPath}`,
    '--log-level',
    'error',
    '--no-color',
  ];
  const child = spawn(process.execPath, args, { stdio: 'ignore', env: { ...process.env, KUBECONFIG: '', NO_COLOR: '1' } });
  return new Promise((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`podctl kill exited ${code}`)))));
}

/** When the pod's worker entered terminating, from its checkpoint (the writer's clock: the same machine). */
async function terminatingAt(stateDir: string, uid: string): Promise<number> {
  const file = await readFile(join(stateDir, 'pods', `${uid}.ckpt`)).catch(() => readFile(join(stateDir, 'ended', `${uid}.ckpt`)));
  const outcome = decodeCheckpoint(file, uid);
  if (outcome.kind !== 'ok' || outcome.checkpoint.status.terminatingAt === undefined) throw new Error(`pod ${uid}: no terminating time in its checkpoint`);
  return outcome.checkpoint.status.terminatingAt;
}

if (values.only !== 'drain') await main();
if (values.only !== 'latency') {
  const { drainFigures, drainResults, drainTable, hasTmux } = await import('./support/watch-drain.js');
  if (!hasTmux) console.log('\n(tmux is not installed: the drain with the screen open is not measured)');
  const builds = [...(values.baseline ? [{ label: 'baseline', root: values.baseline }] : []), ...(values['baseline-only'] ? [] : [{ label: 'this tree', root }])];
  const podCounts = values['drain-pods'].split(',').map(Number);
  const figures = await drainFigures(builds, podCounts, Number(values.runs), Number(values['idle-window']) * 1000, values.modes.split(',') as ('alone' | 'tui' | 'json')[], root);
  console.log(`\ndrain --grace-period 3 --critical-grace-period 2 of podctl simulator --pods N (median of ${values.runs} run(s), range in brackets)`);
  console.log(drainTable(figures));
  const command = `npm run build && npm run bench:watch -- --only drain --drain-pods ${podCounts.join(',')} --runs ${values.runs}${values['idle-window'] === '5' ? '' : ` --idle-window ${values['idle-window']}`}`;
  writeResults('watch', drainResults(figures, 'this tree', command));
}
