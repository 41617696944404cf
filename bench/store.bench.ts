/**
 * Store benchmark. Prints a table and writes its figure with a goal (the inbox hand-over's p99) to
 * bench/results/store.json (bench/support/results.ts: the summary table of docs/benchmarks.md); with
 * `--write` also records the whole table in docs/bench/store.md.
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
 * - record validation, side by side: the hand-written guards the schemas replaced
 *   (bench/support/guards-baseline.ts), the store's `checkRecord` (the valibot schema of
 *   src/store/records.ts, checked by valibot, with the wording of a rejection) and valibot's own
 *   `v.safeParse` of the same schema alone. Each is bundled as the
 *   build bundles it (esbuild, CommonJS, valibot included and tree-shaken) and timed as (a) its
 *   import in a fresh `node -e` process (median of STORE_BENCH_IMPORTS runs, interleaved), with the
 *   validation of 500 checkpoints right after it in the same cold process (the first 50 also
 *   timed apart: a node's worth, what one command reads), and (b) JSON.parse +
 *   validation of the same 500 checkpoint payloads in this (warm) process, median of 30 rounds.
 *   These are CPU times (user + system, process.cpuUsage), so a shared machine's waiting for a
 *   core is not counted; on a quiet machine they are the wall times.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { seedPods, startSimulator } from '../src/cri/simulator/index.js';
import { openSession } from '../src/session/open.js';
import { openStore } from '../src/store/index.js';
import type { PodCheckpoint } from '../src/store/format.js';
import * as v from 'valibot';
import { checkRecord, checkpointSchema } from '../src/store/records.js';
import { isCheckpointShape } from './support/guards-baseline.js';
import { writeResults } from './support/results.js';

const WRITE = process.argv.includes('--write');
const HANDOVERS = Number(process.env.STORE_BENCH_HANDOVERS ?? 200);
const WRITES = Number(process.env.STORE_BENCH_WRITES ?? 500);
const IMPORTS = Number(process.env.STORE_BENCH_IMPORTS ?? 21);
const VALIDATED = 500;
/** The first checkpoints a fresh process validates, timed apart: a node's worth, before V8 optimizes. */
const FIRST = 50;
const ROUNDS = 30;

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

interface ValidatorFigures {
  /** Fresh-process import of the bundled module, ms (one per run). */
  importMs: number[];
  /** Validating the first FIRST payloads right after the import, in the same cold process, ms. */
  firstMs: number[];
  /** Validating all 500 payloads right after the import, in the same cold process, ms. */
  coldMs: number[];
  /** JSON.parse + validation of the 500 payloads, warm, ms (one per round). */
  warmMs: number[];
  bytes: number;
}

/**
 * The schema against the guards it replaced: each bundled on its own (as scripts/build.mjs bundles
 * podctl), imported in fresh processes, and run on the same 500 checkpoint payloads.
 */
async function benchValidators(root: string): Promise<{ guards: ValidatorFigures; schema: ValidatorFigures; valibot: ValidatorFigures; parseOnly: number[] }> {
  const { build } = await import('esbuild');
  const dir = join(root, 'validators');
  mkdirSync(dir, { recursive: true });
  const payloads = Array.from({ length: VALIDATED }, (_, i) => JSON.stringify(checkpointFor(`pod-${i}`, i)));
  const payloadFile = join(dir, 'payloads.json');
  writeFileSync(payloadFile, JSON.stringify(payloads));
  // valibot alone: records.ts's schema through v.safeParse, without checkRecord's wrapping
  const valibotEntry = join(dir, 'valibot-entry.ts');
  writeFileSync(
    valibotEntry,
    [
      `import * as v from ${JSON.stringify(join(import.meta.dirname, '../node_modules/valibot/dist/index.mjs'))};`,
      `export { checkpointSchema } from ${JSON.stringify(join(import.meta.dirname, '../src/store/records.ts'))};`,
      `export const safeParse = (schema: v.GenericSchema, x: unknown): boolean => v.safeParse(schema, x, { abortEarly: true }).success;`,
    ].join('\n'),
  );
  const variants = {
    guards: { entry: join(import.meta.dirname, 'support/guards-baseline.ts'), call: 'm.isCheckpointShape(x)' },
    schema: { entry: join(import.meta.dirname, '../src/store/records.ts'), call: 'm.checkRecord(m.checkpointSchema, x).ok' },
    valibot: { entry: valibotEntry, call: 'm.safeParse(m.checkpointSchema, x)' },
  };
  const figures = {} as Record<keyof typeof variants, ValidatorFigures>;
  const scripts = {} as Record<keyof typeof variants, string>;
  for (const [name, variant] of Object.entries(variants) as [keyof typeof variants, (typeof variants)['guards']][]) {
    const outfile = join(dir, `${name}.cjs`);
    await build({ entryPoints: [variant.entry], outfile, bundle: true, format: 'cjs', platform: 'node', target: 'node20', logLevel: 'error' });
    figures[name] = { importMs: [], firstMs: [], coldMs: [], warmMs: [], bytes: readFileSync(outfile).length };
    scripts[name] = [
      `const cpuMs = (u) => (u.user + u.system) / 1000;`,
      `const c0 = process.cpuUsage(); const m = require(${JSON.stringify(outfile)}); const importMs = cpuMs(process.cpuUsage(c0));`,
      `const xs = JSON.parse(require('node:fs').readFileSync(${JSON.stringify(payloadFile)}, 'utf8')).map((p) => JSON.parse(p));`,
      `const c1 = process.cpuUsage(); let ok = 0; let first = 0;`,
      `for (const [i, x] of xs.entries()) { if (${variant.call}) ok++; if (i === ${FIRST - 1}) first = cpuMs(process.cpuUsage(c1)); }`,
      `const coldMs = cpuMs(process.cpuUsage(c1));`,
      `if (ok !== xs.length) throw new Error('rejected ' + (xs.length - ok));`,
      `process.stdout.write(JSON.stringify([importMs, first, coldMs]));`,
    ].join('\n');
  }
  for (let run = 0; run < IMPORTS; run += 1) {
    for (const name of Object.keys(variants) as (keyof typeof variants)[]) {
      const [importMs, firstMs, coldMs] = JSON.parse(execFileSync(process.execPath, ['-e', scripts[name]], { encoding: 'utf8' })) as [number, number, number];
      figures[name].importMs.push(importMs);
      figures[name].firstMs.push(firstMs);
      figures[name].coldMs.push(coldMs);
    }
  }
  const parseOnly: number[] = [];
  const time = (validate: (x: unknown) => boolean): number => {
    const c0 = process.cpuUsage();
    for (const payload of payloads) if (!validate(JSON.parse(payload))) throw new Error('a bench checkpoint was rejected');
    const used = process.cpuUsage(c0);
    return (used.user + used.system) / 1000;
  };
  for (let round = 0; round < ROUNDS; round += 1) {
    parseOnly.push(time(() => true));
    figures.guards.warmMs.push(time(isCheckpointShape));
    figures.schema.warmMs.push(time((x) => checkRecord(checkpointSchema, x).ok));
    figures.valibot.warmMs.push(time((x) => v.safeParse(checkpointSchema, x, { abortEarly: true }).success));
  }
  return { guards: figures.guards, schema: figures.schema, valibot: figures.valibot, parseOnly };
}

const root = mkdtempSync(join(tmpdir(), 'podctl-store-bench-'));
try {
  const { handover, durable, acted } = await benchHandover(root);
  const writes = await benchWrites(root);
  const validators = await benchValidators(root);
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
  const p50 = (xs: number[]): number => summary(xs).p50;
  const ms2 = (v: number): string => `${v.toFixed(2)} ms`;
  const pair = (pick: (f: ValidatorFigures) => number[]): string => [validators.guards, validators.schema, validators.valibot].map((f) => ms2(p50(pick(f)))).join(' / ');
  const kib = (f: ValidatorFigures): string => `${(f.bytes / 1024).toFixed(1)} KiB`;
  rows.push(
    ["record validation: hand-written guards / the store's checkRecord / valibot safeParse alone", ''],
    [`  bundle size`, [validators.guards, validators.schema, validators.valibot].map(kib).join(' / ')],
    [`  import, fresh node -e, CPU (median of ${IMPORTS})`, pair((f) => f.importMs)],
    [`  validate the first ${FIRST} checkpoints, cold (same processes), CPU`, pair((f) => f.firstMs)],
    [`  validate ${VALIDATED} checkpoints, cold (same processes), CPU`, pair((f) => f.coldMs)],
    [`  JSON.parse + validate ${VALIDATED} checkpoints, warm, CPU (median of ${ROUNDS})`, pair((f) => f.warmMs)],
    [`  of which JSON.parse alone`, ms2(p50(validators.parseOnly))],
  );
  const width = Math.max(...rows.map(([k]) => k.length));
  const table = rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
  console.log(table);
  writeResults('store', [
    {
      id: 'store-handover-p99',
      figure: 'store: a kill request from another process → applied by the owner, p99',
      value: h.p99,
      unit: 'ms',
      goalMax: 200,
      detail: `p50 ${ms(h.p50)}, max ${ms(h.max)}; n=${handover.length}`,
      command: 'npm run bench:store',
    },
  ]);
  if (WRITE) {
    mkdirSync('docs/bench', { recursive: true });
    // Hand-written notes below the marker (soak runs, earlier figures) survive a rewrite.
    const MARKER = '<!-- notes (kept by --write) -->';
    const previous = existsSync('docs/bench/store.md') ? readFileSync('docs/bench/store.md', 'utf8') : '';
    const notes = previous.includes(MARKER) ? previous.slice(previous.indexOf(MARKER)) : `${MARKER}\n`;
    const load = loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ');
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
        "  `requestKill` to the owner's engine emitting `grace-shortened` (wall clock, both processes).",
        "  It includes the requester's runtime listing and lease look-up, the durable inbox write,",
        "  fs.watch delivery, the owner's read and `updatePod`; not the runtime's work after it.",
        "- *until the runtime sees the shorter grace*: to the owner's StopContainer with the new timeout at",
        '  the simulator; adds the write-ahead checkpoint (durable before the worker acts) and the RPC.',
        '- *checkpoint write*: `CheckpointStore.write` — temp file, write, fsync, rename, directory fsync.',
        '- *readAll*: list, read, checksum and validate every checkpoint (the valibot schema of store/records.ts).',
        '- *record validation*: the hand-written guards the schemas replaced (bench/support/guards-baseline.ts),',
        "  the store's `checkRecord` (the checkpoint schema, checked by valibot)",
        "  and valibot's `v.safeParse` of the same schema, each bundled alone by esbuild as the build bundles podctl;",
        '  import timed inside fresh `node -e` processes, then the same 500 checkpoint payloads validated',
        "  cold in that process, and JSON.parse + validation warm in the benchmark's own process; CPU",
        "  time (user + system), so a loaded machine's waiting for a core is not counted.",
        '',
        notes,
      ].join('\n'),
    );
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
