/**
 * docs/benchmarks.md's summary table is generated from the benchmarks' results files
 * (bench/results/*.json) by `npm run bench:summary` (scripts/bench-summary.mjs), never by hand.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const SCRIPT = path.join(ROOT, 'scripts', 'bench-summary.mjs');
const summary = (...args: string[]) => spawnSync(process.execPath, [SCRIPT, ...args], { cwd: ROOT, encoding: 'utf8' });

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A copy of the page and the results in a temporary folder. */
function copy(): { doc: string; results: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'podctl-bench-summary-'));
  dirs.push(dir);
  const doc = path.join(dir, 'benchmarks.md');
  cpSync(path.join(ROOT, 'docs', 'benchmarks.md'), doc);
  const results = path.join(dir, 'results');
  mkdirSync(results);
  cpSync(path.join(ROOT, 'bench', 'results'), results, { recursive: true });
  return { doc, results };
}

const figure = (over: Record<string, unknown>) => ({
  id: 'x',
  figure: 'a figure',
  value: 12.3,
  unit: 'ms',
  goalMax: 40,
  command: 'npm run bench:x',
  date: '2026-11-28T04:00:00.000Z',
  build: 'abc1234',
  machine: '2 × CPU, Node.js v26.0.0, load 3.0',
  ...over,
});

describe('npm run bench:summary', () => {
  it("docs/benchmarks.md's table is the one bench/results/ gives (regenerate it with npm run bench:summary)", () => {
    const run = summary('--check');
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const page = readFileSync(path.join(ROOT, 'docs', 'benchmarks.md'), 'utf8');
    const results = readFileSync(path.join(ROOT, 'bench', 'results', 'engine.json'), 'utf8');
    // every figure of a results file is a row, with its goal, value, date, build and command
    for (const f of (JSON.parse(results) as { figures: { figure: string; build: string; command: string }[] }).figures) {
      const row = page.split('\n').find((l) => l.startsWith(`| ${f.figure} |`));
      expect(row, f.figure).toBeDefined();
      expect(row).toContain(f.build);
      expect(row).toContain(`\`${f.command}\``);
    }
  });

  it('a hand edit of the table is caught: --check exits 1 and names the command', () => {
    const { doc, results } = copy();
    writeFileSync(doc, readFileSync(doc, 'utf8').replace('| met |', '| met (edited) |').replace('| **not met** |', '| met |'));
    const run = summary('--check', '--doc', doc, '--results', results);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/is not the one .* gives: run `npm run bench:summary`/);
  });

  it('writes each figure from a new results file, met or not by its goal, and keeps the rest of the page', () => {
    const { doc, results } = copy();
    const before = readFileSync(doc, 'utf8');
    const figures = [figure({ id: 'a', figure: 'start-up over node', value: 31.6 }), figure({ id: 'b', figure: 'follower p95', value: 180, goalMax: 100, detail: 'p50 90 ms' })];
    writeFileSync(path.join(results, 'startup.json'), JSON.stringify({ bench: 'startup', figures }));
    expect(summary('--doc', doc, '--results', results).status).toBe(0);
    const page = readFileSync(doc, 'utf8');
    expect(page).toContain('| start-up over node | ≤ 40 ms | 32 ms | met | 2026-11-28 04:00 UTC, abc1234, 2 × CPU, Node.js v26.0.0, load 3.0 | `npm run bench:x` |');
    expect(page).toContain('| follower p95 | ≤ 100 ms | 180 ms (p50 90 ms) | **not met** |');
    // start-up comes first (the order of the benchmarks), and the text around the table is untouched
    expect(page.indexOf('start-up over node')).toBeLessThan(page.indexOf('| engine:'));
    const outside = (p: string) => p.replace(/<!-- bench:summary begin[^]*<!-- bench:summary end -->/, '');
    expect(outside(page)).toBe(outside(before));
    expect(summary('--check', '--doc', doc, '--results', results).status).toBe(0);
  });

  it('refuses a page without the markers and a results file that is not one, exit 2, one line', () => {
    const { doc, results } = copy();
    writeFileSync(path.join(results, 'broken.json'), '{"figures":');
    const broken = summary('--doc', doc, '--results', results);
    expect(broken.status).toBe(2);
    expect(broken.stderr.trim().split('\n')).toHaveLength(1);
    expect(broken.stderr).toContain('broken.json: not a results file');
    rmSync(path.join(results, 'broken.json'));
    writeFileSync(doc, '# Benchmarks\n');
    const unmarked = summary('--doc', doc, '--results', results);
    expect(unmarked.status).toBe(2);
    expect(unmarked.stderr).toContain('no summary markers');
  });
});
