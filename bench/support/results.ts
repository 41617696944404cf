/**
 * A benchmark's results file: the figures it measured, each with its goal, written to
 * bench/results/<bench>.json with the date, the build (git commit) and the machine. The summary
 * table at the head of docs/benchmarks.md is generated from these files alone (`npm run
 * bench:summary`, scripts/bench-summary.mjs); nothing in that table is written by hand.
 *
 * A benchmark writes its file only when it measured every figure it reports (a partial run, e.g.
 * `--only`, writes the figures of the parts it ran and keeps the file's other figures).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';

export interface Figure {
  /** Stable key (the summary's order and a partial run's merge go by it). */
  id: string;
  /** What is measured, in the table's words. */
  figure: string;
  value: number;
  /** The unit the value and the goal are in: 'ms', '%', '×', 'KB', 'MB', 'µs', 'requests/min'. */
  unit: string;
  /** The goal: the value is at most this. */
  goalMax: number;
  /** Said after the value (spread, the compared figure), e.g. "p50 34 ms; 20 samples". */
  detail?: string;
  /** The command that measures it. */
  command: string;
}

interface ResultsFile {
  bench: string;
  date: string;
  build: string;
  machine: string;
  figures: (Figure & { date: string; build: string; machine: string })[];
}

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const RESULTS_DIR = path.join(ROOT, 'bench', 'results');

function build(): string {
  try {
    return execFileSync('git', ['describe', '--always', '--dirty', '--abbrev=7'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

function machine(): string {
  const model = (cpus()[0]?.model ?? 'unknown CPU').replace(/\s+/g, ' ').trim();
  return `${cpus().length} × ${model}, Node.js ${process.version}, load ${loadavg()[0]?.toFixed(1)}`;
}

/** Writes (merges by id into) bench/results/<bench>.json; each figure carries its own date, build and machine. */
export function writeResults(bench: string, figures: Figure[]): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${bench}.json`);
  const stamp = { date: new Date().toISOString(), build: build(), machine: machine() };
  const previous: ResultsFile['figures'] = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ResultsFile).figures : [];
  const fresh = figures.map((f) => ({ ...f, ...stamp }));
  const ids = new Set(fresh.map((f) => f.id));
  const merged = [...previous.map((p) => (ids.has(p.id) ? fresh.find((f) => f.id === p.id)! : p)), ...fresh.filter((f) => !previous.some((p) => p.id === f.id))];
  const out: ResultsFile = { bench, ...stamp, figures: merged };
  writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
  console.log(`\nresults: ${path.relative(ROOT, file)} (npm run bench:summary puts them in docs/benchmarks.md)`);
  return file;
}
