/**
 * How soon `podctl watch` says the runtime stopped answering, and that it answers again (the
 * banner on the screen and the event line both come from the same probe; `watch -o json` writes
 * the event as a record, so it is timed here without a terminal).
 *
 *   npm run build && npm run bench:watch-banner [-- --rounds 10 --pods 20]
 *
 * A `podctl simulator` runs as its own process; `podctl watch -o json` follows it. Each round
 * freezes the simulator (SIGSTOP: its socket accepts nothing and answers nothing, as a hung runtime)
 * and times the `runtime-not-answering` record, then thaws it (SIGCONT) and times the
 * `runtime-answering` record. Goal (issue 14): the banner within 3 s both ways.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '10' }, pods: { type: 'string', default: '20' } } });
const ROUNDS = Number(values.rounds);
const BIN = path.resolve('bin/run.js');
const GOAL_MS = 3_000;
const BOUND_MS = 15_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

async function main(): Promise<void> {
  if (!existsSync(path.resolve('dist'))) throw new Error('run `npm run build` first');
  const dir = await mkdtemp(path.join(tmpdir(), 'podctl-banner-'));
  const socket = path.join(dir, 'sim.sock');
  const env = { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' };
  const sim = spawn(process.execPath, [BIN, 'simulator', '--socket', socket, '--pods', values.pods, '--state-dir', path.join(dir, 'sim-state')], { env, stdio: 'ignore' });
  const watch = spawn(process.execPath, [BIN, 'watch', '-o', 'json', '-A', '--runtime-endpoint', socket, '--state-dir', path.join(dir, 'state')], { env, stdio: ['ignore', 'pipe', 'ignore'] });
  const waiters: { kind: string; resolve: (at: number) => void }[] = [];
  let pods = 0;
  createInterface({ input: watch.stdout }).on('line', (line) => {
    const now = performance.now();
    let record: { type?: string; kind?: string };
    try {
      record = JSON.parse(line) as { type?: string; kind?: string };
    } catch {
      return;
    }
    if (record.type === 'pod') pods += 1;
    for (const w of waiters.filter((x) => x.kind === record.kind)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(now);
    }
  });
  const next = (kind: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${kind} record within ${BOUND_MS} ms`)), BOUND_MS);
      waiters.push({
        kind,
        resolve: (at) => {
          clearTimeout(timer);
          resolve(at);
        },
      });
    });
  try {
    for (let i = 0; i < 100 && pods === 0; i++) await sleep(100);
    if (pods === 0) throw new Error('watch showed no pod within 10 s');
    await sleep(1_500);
    const silent: number[] = [];
    const back: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const notAnswering = next('runtime-not-answering');
      const stoppedAt = performance.now();
      sim.kill('SIGSTOP');
      silent.push((await notAnswering) - stoppedAt);
      const answering = next('runtime-answering');
      const resumedAt = performance.now();
      sim.kill('SIGCONT');
      back.push((await answering) - resumedAt);
      await sleep(1_000);
    }
    const row = (what: string, xs: number[]) => ({
      what,
      'median ms': Math.round(median(xs)),
      'max ms': Math.round(Math.max(...xs)),
      goal: `≤ ${GOAL_MS}`,
      met: Math.max(...xs) <= GOAL_MS ? 'yes' : 'NO',
    });
    console.log(`podctl watch -o json following a ${values.pods}-pod simulator; ${ROUNDS} rounds; node ${process.version}`);
    console.table([row('runtime frozen (SIGSTOP) → "does not answer" record', silent), row('runtime thawed (SIGCONT) → "answers again" record', back)]);
  } finally {
    sim.kill('SIGCONT');
    watch.kill('SIGTERM');
    sim.kill('SIGTERM');
    await sleep(300);
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
