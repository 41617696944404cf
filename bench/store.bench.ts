/**
 * Store benchmark. Prints a table; with `--write` also records the figures in docs/bench/store.md.
 *
 *   npm run bench:store            (node --import ./bench/register.mjs bench/store.bench.ts)
 *   npm run bench:store -- --write
 *
 * Figures:
 * - inbox hand-over: a second process asks the owner of a terminating pod to shorten its grace;
 *   latency from the requester's `requestKill` call to the owner's engine applying it
 *   (`grace-shortened`), across processes, on the embedded simulator (goal p99 ≤ 200 ms). Also the
 *   requester's own time until the request was durable.
 * - checkpoint writes: durable atomic writes (temp, fsync, rename, dir fsync) one at a time and
 *   50 at a time; latency p50/p99 and writes per second.
 * - checkpoint reads: `readAll()` of every checkpoint (decode + checksum + schema).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { seedPods, startSimulator } from '../src/cri/simulator/index.js';
import { openSession } from '../src/session/open.js';
import { openStore } from '../src/store/index.js';
import type { PodCheckpoint } from '../src/store/format.js';

const WRITE = process.argv.includes('--write');
const HANDOVERS = Number(process.env.STORE_BENCH_HANDOVERS ?? 200);
const WRITES = Number(process.env.STORE_BENCH_WRITES ?? 500);

const wall = (): number => performance.timeOrigin + performance.now();

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function summary(samples: number[]): { p50: number; p99: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted.at(-1) ?? Number.NaN };
}

const ms = (v: number): string => `${v.toFixed(1)} ms`;

async function benchHandover(root: string): Promise<{ handover: number[]; durable: number[]; acted: number[] }> {
  const stateDir = join(root, 'handover');
  const sim = await startSimulator({ socketPath: join(root, 'sim.sock'), pods: [], timeScale: 1 });
  const seeded = seedPods(
    sim.state,
    Array.from({ length: HANDOVERS }, (_, i) => ({
      name: `bench-${i}`,
      namespace: 'bench',
      terminationGracePeriodSeconds: 300,
      containers: [{ name: 'main', onSigterm: 'ignore' as const }],
    })),
  );
  const owner = await openSession({ stateDir, runtimeEndpoint: sim.endpoint });
  const appliedAt = new Map<string, number>();
  owner.subscribe((event) => {
    if (event.source === 'engine' && event.event.type === 'grace-shortened' && !appliedAt.has(event.event.uid)) {
      appliedAt.set(event.event.uid, wall());
    }
  });
  for (const pod of seeded) await owner.requestKill({ uid: pod.uid, gracePeriodSeconds: 300 });
  const uids = seeded.map((p) => p.uid);
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'support/store-requester.ts'), stateDir, sim.endpoint, '200', ...uids], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: { uid: string; startedAt: number; durableAt: number; handledBy: string }[] = [];
  let buffer = '';
  child.stdout.on('data', (d: Buffer) => {
    buffer += d.toString();
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buffer.slice(0, nl)));
      buffer = buffer.slice(nl + 1);
    }
  });
  await new Promise((resolve) => child.on('exit', resolve));
  // Let the last hand-overs land (bounded).
  const until = Date.now() + 5_000;
  while (appliedAt.size < uids.length && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  const handover: number[] = [];
  const durable: number[] = [];
  const acted: number[] = [];
  // When the runtime saw the owner act on the shorter grace: its StopContainer with timeout=200.
  const containerOf = new Map(seeded.map((p) => [p.uid, p.containerIds[0]]));
  const stopAt = new Map<string, number>();
  for (const r of sim.state.journal()) {
    if (r.kind === 'rpc' && r.method === 'StopContainer' && r.id && r.detail === 'timeout=200' && !stopAt.has(r.id)) stopAt.set(r.id, r.at);
  }
  for (const line of lines) {
    if (line.handledBy !== 'delegated') throw new Error(`request for ${line.uid} was not delegated (${line.handledBy})`);
    const applied = appliedAt.get(line.uid);
    if (applied === undefined) throw new Error(`hand-over of ${line.uid} never applied`);
    handover.push(applied - line.startedAt);
    durable.push(line.durableAt - line.startedAt);
    const stop = stopAt.get(containerOf.get(line.uid) ?? '');
    if (stop !== undefined) acted.push(stop - line.startedAt);
  }
  await owner.close();
  await sim.close();
  return { handover, durable, acted };
}

function checkpointFor(uid: string, i: number): PodCheckpoint {
  const pod = { metadata: { uid, name: `w-${i}`, namespace: 'bench' }, spec: { containers: [{ name: 'main', image: 'pause' }] } };
  return {
    uid,
    namespace: 'bench',
    name: `w-${i}`,
    status: {
      uid,
      fullname: `w-${i}_bench`,
      working: true,
      syncedAt: Date.now(),
      startedAt: Date.now(),
      terminatingAt: Date.now(),
      gracePeriod: 30,
      startedTerminating: true,
      deleted: false,
      evicted: false,
      finished: false,
      restartRequested: false,
      observedRuntime: true,
      activeUpdate: { updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 30 } },
    },
    since: Date.now(),
    history: Array.from({ length: 20 }, (_, k) => ({ at: Date.now(), type: 'state-changed', detail: `step ${k}`, pid: process.pid })),
    writtenAt: Date.now(),
    writerPid: process.pid,
  };
}

async function benchWrites(root: string): Promise<{ serial: number[]; serialRate: number; parallelRate: number; readAllMs: number; count: number }> {
  const store = await openStore({ stateDir: join(root, 'writes') });
  const serial: number[] = [];
  const started = performance.now();
  for (let i = 0; i < WRITES; i += 1) {
    const t0 = performance.now();
    await store.checkpoints.write(checkpointFor(`pod-${i % 100}`, i));
    serial.push(performance.now() - t0);
  }
  const serialRate = WRITES / ((performance.now() - started) / 1000);
  const parallelStarted = performance.now();
  for (let batch = 0; batch < WRITES / 50; batch += 1) {
    await Promise.all(Array.from({ length: 50 }, (_, k) => store.checkpoints.write(checkpointFor(`pod-${k}`, batch * 50 + k))));
  }
  const parallelRate = WRITES / ((performance.now() - parallelStarted) / 1000);
  const r0 = performance.now();
  const all = await store.checkpoints.readAll();
  const readAllMs = performance.now() - r0;
  return { serial, serialRate, parallelRate, readAllMs, count: all.size };
}

const root = mkdtempSync(join(tmpdir(), 'podctl-store-bench-'));
try {
  const { handover, durable, acted } = await benchHandover(root);
  const writes = await benchWrites(root);
  const h = summary(handover);
  const d = summary(durable);
  const a = summary(acted);
  const w = summary(writes.serial);
  const rows: [string, string][] = [
    [`inbox hand-over (${handover.length} requests, cross-process) p50`, ms(h.p50)],
    ['inbox hand-over p99 (goal ≤ 200 ms)', ms(h.p99)],
    ['inbox hand-over max', ms(h.max)],
    ['request durable in the inbox p50 / p99', `${ms(d.p50)} / ${ms(d.p99)}`],
    [`until the runtime sees the shorter grace (${acted.length}) p50 / p99`, `${ms(a.p50)} / ${ms(a.p99)}`],
    [`checkpoint write, one at a time (${WRITES}) p50 / p99`, `${ms(w.p50)} / ${ms(w.p99)}`],
    ['checkpoint writes/s, one at a time', writes.serialRate.toFixed(0)],
    ['checkpoint writes/s, 50 in parallel', writes.parallelRate.toFixed(0)],
    [`readAll of ${writes.count} checkpoints`, ms(writes.readAllMs)],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const table = rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
  console.log(table);
  if (WRITE) {
    mkdirSync('docs/bench', { recursive: true });
    // Hand-written notes below the marker (soak runs, earlier figures) survive a rewrite.
    const MARKER = '<!-- notes (kept by --write) -->';
    const previous = existsSync('docs/bench/store.md') ? readFileSync('docs/bench/store.md', 'utf8') : '';
    const notes = previous.includes(MARKER) ? previous.slice(previous.indexOf(MARKER)) : `${MARKER}\n`;
    const load = loadavg().map((l) => l.toFixed(1)).join(' / ');
    const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, state dir on ${tmpdir()}, load average ${load} (1/5/15 min) at the end of the run`;
    writeFileSync(
      'docs/bench/store.md',
      [
        '# Store benchmark',
        '',
        'Command: `npm run bench:store -- --write` (figures below from one run).',
        '',
        `Machine: ${machine}.`,
        '',
        '```',
        table,
        '```',
        '',
        '- *inbox hand-over*: a second podctl process asks the owner of a terminating pod (simulator,',
        '  SIGTERM ignored, grace 300 s) to shorten its grace to 200 s; measured from the requester calling',
        '  `requestKill` to the owner\'s engine emitting `grace-shortened` (wall clock, both processes).',
        '  It includes the requester\'s runtime listing and lease look-up, the durable inbox write,',
        '  fs.watch delivery, the owner\'s read and `updatePod`; not the runtime\'s work after it.',
        '- *until the runtime sees the shorter grace*: to the owner\'s StopContainer with the new timeout at',
        '  the simulator; adds the write-ahead checkpoint (durable before the worker acts) and the RPC.',
        '- *checkpoint write*: `CheckpointStore.write` — temp file, write, fsync, rename, directory fsync.',
        '- *readAll*: list, read, checksum and validate every checkpoint (shapes.ts guards; zod only on a rejection).',
        '',
        notes,
      ].join('\n'),
    );
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
