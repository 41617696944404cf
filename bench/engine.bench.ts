/**
 * Engine benchmark: 10,000 pods create → kill → finished with an instant syncer and the default
 * work queue. Prints a table; with `--write` also records the figures in docs/bench/engine.md.
 *
 *   npm run bench:engine            (node --expose-gc --import ./bench/register.mjs bench/engine.bench.ts)
 *   npm run bench:engine -- --write
 *
 * Figures:
 * - batch: all creates, then all kills, each batch awaited with whenIdle(); total wall time.
 * - kill latency: updatePod(kill) → the pod is terminated (its onComplete fires), one kill at a
 *   time on an engine tracking 10,000 pods; p50/p99/max.
 * - heap per tracked worker: heap growth (after gc) divided by the pod count, pods themselves
 *   excluded (they are built before the baseline), once all are running and once all are finished.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createPodWorkers } from '../src/engine/index.js';
import type { PodStatus, PodStatusCache, PodSyncer, PodWorkers, V1Pod } from '../src/engine/index.js';
import { writeResults } from './support/results.js';

const N = Number(process.env.ENGINE_BENCH_PODS ?? 10_000);
const WRITE = process.argv.includes('--write');

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  console.error('run with node --expose-gc (npm run bench:engine)');
  process.exit(2);
}

const instantSyncer: PodSyncer = {
  syncPod: async () => false,
  syncTerminatingPod: async () => {},
  syncTerminatingRuntimePod: async () => {},
  syncTerminatedPod: async () => {},
};

const sharedStatus: PodStatus = { id: '', name: '', namespace: '', containerStatuses: [], sandboxStatuses: [] };
const instantCache: PodStatusCache = {
  get: () => undefined,
  getNewerThan: async () => sharedStatus,
};

function makePods(prefix: string): V1Pod[] {
  const pods: V1Pod[] = [];
  for (let i = 0; i < N; i++) {
    pods.push({
      metadata: { uid: `${prefix}-${i.toString().padStart(6, '0')}`, name: `pod-${i}`, namespace: 'bench' },
      spec: { containers: [{ name: 'app', image: 'pause' }], terminationGracePeriodSeconds: 30 },
    });
  }
  return pods;
}

function heapUsed(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const idx = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, idx)]!;
}

async function batchRun(): Promise<{ createMs: number; killMs: number; totalMs: number; heapSyncB: number; heapFinishedB: number; finished: number }> {
  const pods = makePods('batch');
  const base = heapUsed();
  const workers: PodWorkers = createPodWorkers({ syncer: instantSyncer, cache: instantCache });
  const t0 = performance.now();
  for (const pod of pods) workers.updatePod({ updateType: 'create', pod });
  await workers.whenIdle();
  const t1 = performance.now();
  const heapSync = heapUsed() - base;
  const t2 = performance.now();
  for (const pod of pods) workers.updatePod({ updateType: 'kill', pod });
  await workers.whenIdle();
  const t3 = performance.now();
  const heapFinished = heapUsed() - base;
  let finished = 0;
  for (const pod of pods) if (workers.shouldPodBeFinished(pod.metadata!.uid!)) finished++;
  await workers.close();
  return {
    createMs: t1 - t0,
    killMs: t3 - t2,
    totalMs: t1 - t0 + (t3 - t2),
    heapSyncB: heapSync / N,
    heapFinishedB: heapFinished / N,
    finished,
  };
}

async function latencyRun(): Promise<{ p50: number; p99: number; max: number; totalMs: number }> {
  const pods = makePods('lat');
  const workers = createPodWorkers({ syncer: instantSyncer, cache: instantCache });
  for (const pod of pods) workers.updatePod({ updateType: 'create', pod });
  await workers.whenIdle();
  const latencies = new Float64Array(N);
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const pod = pods[i]!;
    const start = performance.now();
    await new Promise<void>((resolve) => {
      workers.updatePod({ updateType: 'kill', pod, killPodOptions: { onComplete: resolve } });
    });
    latencies[i] = performance.now() - start;
  }
  await workers.whenIdle();
  const totalMs = performance.now() - t0;
  await workers.close();
  const sorted = Array.from(latencies).sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1]!, totalMs };
}

// warm up the JIT on a small run so figures reflect steady state
{
  const warm = createPodWorkers({ syncer: instantSyncer, cache: instantCache });
  const pods = makePods('warm').slice(0, 2_000);
  for (const pod of pods) warm.updatePod({ updateType: 'create', pod });
  await warm.whenIdle();
  for (const pod of pods) warm.updatePod({ updateType: 'kill', pod });
  await warm.whenIdle();
  await warm.close();
}

const batch = await batchRun();
const latency = await latencyRun();

const fmt = (n: number, digits = 1): string => n.toFixed(digits);
const rows: [string, string, string, string][] = [
  ['total create → kill → finished (batch)', `${fmt(batch.totalMs)} ms`, '≤ 1000 ms', batch.totalMs <= 1000 ? 'met' : 'MISSED'],
  ['  of which create batch', `${fmt(batch.createMs)} ms`, '', ''],
  ['  of which kill → finished batch', `${fmt(batch.killMs)} ms`, '', ''],
  ['kill → terminated latency p50', `${fmt(latency.p50 * 1000, 0)} µs`, '', ''],
  ['kill → terminated latency p99', `${fmt(latency.p99 * 1000, 0)} µs`, '≤ 1000 µs', latency.p99 <= 1 ? 'met' : 'MISSED'],
  ['kill → terminated latency max', `${fmt(latency.max * 1000, 0)} µs`, '', ''],
  ['heap per tracked worker (running)', `${fmt(batch.heapSyncB / 1024, 2)} KB`, '≤ 3 KB', batch.heapSyncB <= 3 * 1024 ? 'met' : 'MISSED'],
  ['heap per tracked worker (finished)', `${fmt(batch.heapFinishedB / 1024, 2)} KB`, '≤ 3 KB', batch.heapFinishedB <= 3 * 1024 ? 'met' : 'MISSED'],
  ['pods finished', `${batch.finished} / ${N}`, `${N}`, batch.finished === N ? 'met' : 'MISSED'],
];

const widths = [0, 1, 2, 3].map((c) => Math.max(...rows.map((r) => r[c]!.length), ['figure', 'value', 'goal', ''][c]!.length));
const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
const env = `node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}`;
console.log(`engine benchmark: ${N} pods, instant syncer, default work queue (${env})`);
console.log(line(['figure', 'value', 'goal', '']));
console.log(line(widths.map((w) => '-'.repeat(w))));
for (const r of rows) console.log(line(r));

const command = 'npm run bench:engine';
writeResults('engine', [
  { id: 'engine-total', figure: `engine: ${N} pods create → kill → finished`, value: batch.totalMs, unit: 'ms', goalMax: 1000, command },
  { id: 'engine-kill-p99', figure: 'engine: updatePod(kill) → terminated, p99', value: latency.p99 * 1000, unit: 'µs', goalMax: 1000, detail: `p50 ${fmt(latency.p50 * 1000, 0)} µs`, command },
  {
    id: 'engine-heap',
    figure: 'engine: heap per tracked worker (running)',
    value: batch.heapSyncB / 1024,
    unit: 'KB',
    goalMax: 3,
    detail: `finished ${fmt(batch.heapFinishedB / 1024, 2)} KB`,
    command,
  },
]);

if (WRITE) {
  const md = [
    '# Engine benchmark',
    '',
    'Command: `npm run bench:engine` (`node --expose-gc --import ./bench/register.mjs bench/engine.bench.ts`).',
    '',
    `Setup: ${N} pods; instant syncer and status cache; default work queue; ${env}; recorded ${new Date().toISOString()}.`,
    'Batch: all creates then all kills, each batch awaited with `whenIdle()`. Latency: one kill at a time on an engine',
    "tracking all pods, from `updatePod(kill)` to the kill's `onComplete` (the pod is terminated). Heap: growth after",
    "gc divided by the pod count (pods built before the baseline, so this is the engine's own cost).",
    'Wall-clock figures vary between runs on this shared machine; rerun the command to compare.',
    '',
    '| figure | value | goal | |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
  ].join('\n');
  mkdirSync('docs/bench', { recursive: true });
  writeFileSync('docs/bench/engine.md', md);
  console.log('wrote docs/bench/engine.md');
}
