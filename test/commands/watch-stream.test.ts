/**
 * The built `podctl watch` as scripts use it: stdout a pipe, so JSON lines; transitions made by
 * another podctl process (a `podctl kill`) arrive through the checkpoint store; SIGTERM and a reader
 * that goes away (EPIPE) end it with exit 0; Ink and React are never loaded. Skipped when not built.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { until, waitFor } from '../support/wait.js';

/** The bound of a wait here (for a loaded machine, not a speed goal) and its pace. */
const WAIT = { timeoutMs: 15_000, everyMs: 25 };

const root = fileURLToPath(new URL('../..', import.meta.url));
const built = existsSync(join(root, 'dist/commands/watch.js')) && existsSync(join(root, 'oclif.manifest.json'));
if (!built) console.warn('[watch-stream] SKIPPED: podctl is not built (run `npm run build`)');
const traceImports = join(root, 'test/commands/fixtures/trace-imports.mjs');

interface Watcher {
  child: ChildProcessWithoutNullStreams;
  lines: () => Record<string, unknown>[];
  stderr: () => string;
  exited: Promise<number | null>;
}

/** `podctl watch` (or another follower: `command`) with stdout a pipe. */
function watch(endpoint: string, stateDir: string, extra: string[] = [], command: string[] = ['watch']): Watcher {
  const child = spawn(process.execPath, ['--import', traceImports, 'bin/run.js', ...command, '--runtime-endpoint', endpoint, '--state-dir', stateDir, ...extra], {
    cwd: root,
    env: { ...process.env, NO_COLOR: '1' },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const lines = () =>
    out
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { child, lines, stderr: () => err, exited };
}

/** Runs the CLI without blocking this process (which serves the simulator). */
function podctl(args: string[]): Promise<{ status: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['bin/run.js', ...args], { cwd: root, timeout: 30_000 });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('exit', (status) => resolve({ status, stderr })));
}

describe.skipIf(!built)(`podctl watch as a JSON stream${built ? '' : ' (skipped: not built)'}`, () => {
  let dir = '';
  let sim: RunningSimulator | undefined;
  let stateDir = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'podctl-watch-stream-'));
    stateDir = join(dir, 'state');
    sim = await startSimulator({
      socketPath: join(dir, 'sim.sock'),
      pods: [
        { name: 'api-1', namespace: 'web' },
        { name: 'api-2', namespace: 'web' },
        { name: 'report', namespace: 'batch' },
      ],
    });
  });

  afterAll(async () => {
    await sim?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('streams pods, then transitions another process makes, and exits 0 on SIGTERM without loading Ink', async () => {
    const w = watch(sim!.endpoint, stateDir);
    try {
      const pods = await waitFor('the pod records', () => w.lines().length >= 3 && w.lines(), WAIT);
      expect(pods.map((r) => [r.type, `${String(r.namespace)}/${String(r.name)}`]).sort()).toEqual([
        ['pod', 'batch/report'],
        ['pod', 'web/api-1'],
        ['pod', 'web/api-2'],
      ]);
      const kill = await podctl(['kill', 'web/api-2', '--grace', '1', '--runtime-endpoint', sim!.endpoint, '--state-dir', stateDir]);
      expect(kill.status, kill.stderr).toBe(0);
      const transitions = await waitFor(
        'api-2 to be terminated',
        () => {
          const t = w.lines().filter((r) => r.type === 'transition' && r.name === 'api-2');
          return t.some((r) => r.to === 'terminated' || r.to === 'finished') && t;
        },
        WAIT,
      );
      expect(transitions[0]).toMatchObject({ type: 'transition', namespace: 'web', name: 'api-2', source: 'store' });
      expect(transitions.map((r) => r.to)).toContain('terminating');
      w.child.kill('SIGTERM');
      expect(await w.exited).toBe(0);
      expect(w.stderr()).not.toContain('LOADED');
    } finally {
      w.child.kill('SIGKILL');
    }
  });

  it('exits 0 when its reader goes away (EPIPE on the next record)', async () => {
    const w = watch(sim!.endpoint, stateDir);
    try {
      await until('the pod records', () => w.lines().length >= 3, WAIT);
      w.child.stdout.destroy();
      const kill = await podctl(['kill', 'web/api-1', '--grace', '1', '--runtime-endpoint', sim!.endpoint, '--state-dir', stateDir]);
      expect(kill.status, kill.stderr).toBe(0);
      expect(await Promise.race([w.exited, new Promise((r) => setTimeout(() => r('still running'), 10_000))])).toBe(0);
    } finally {
      w.child.kill('SIGKILL');
    }
  });

  it('-n and -l stream only those pods; -A with -n, an empty -n and a bad -l are usage errors (exit 2)', async () => {
    const ns = watch(sim!.endpoint, stateDir, ['-n', 'batch']);
    try {
      const pods = await waitFor('the pod records', () => ns.lines().length >= 1 && ns.lines(), WAIT);
      await new Promise((r) => setTimeout(r, 500));
      expect(
        ns
          .lines()
          .filter((r) => r.type === 'pod')
          .map((r) => `${String(r.namespace)}/${String(r.name)}`),
      ).toEqual(['batch/report']);
      expect(pods.length).toBeGreaterThan(0);
    } finally {
      ns.child.kill('SIGKILL');
    }
    const none = watch(sim!.endpoint, stateDir, ['-A', '-l', 'app=nothing-has-this']);
    try {
      await new Promise((r) => setTimeout(r, 1_500));
      expect(none.lines().filter((r) => r.type === 'pod')).toEqual([]);
      expect(none.child.exitCode).toBeNull();
    } finally {
      none.child.kill('SIGKILL');
    }
    for (const args of [
      ['-A', '-n', 'web'],
      ['-n', ''],
      ['-l', 'app=(x'],
    ]) {
      const run = await podctl(['watch', ...args, '--runtime-endpoint', sim!.endpoint, '--state-dir', stateDir]);
      expect(run.status, `${args.join(' ')}: ${run.stderr}`).toBe(2);
      expect(run.stderr.trim().split('\n'), run.stderr).toHaveLength(1);
    }
  });

  it('an error ends the JSON stream with an error record on stdout (and one line on stderr, exit 1)', async () => {
    const child = spawn(process.execPath, ['bin/run.js', 'watch', '-o', 'json', '--runtime-endpoint', 'unix:///tmp/podctl-no-such-watch.sock', '--state-dir', stateDir], { cwd: root });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    const records = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; error?: { name: string; message: string; exitCode: number } });
    expect(records.at(-1)).toMatchObject({ type: 'error', at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/), error: { name: 'RuntimeError', exitCode: 1 } });
    expect(records.at(-1)?.error?.message).toContain('no such socket');
    expect(err.trim().split('\n')).toHaveLength(1);
  });
});

describe.skipIf(!built)(`podctl watch when its runtime goes away${built ? '' : ' (skipped: not built)'}`, () => {
  let dir = '';
  let sim: RunningSimulator | undefined;

  afterAll(async () => {
    await sim?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const pods = [
    { name: 'api-1', namespace: 'web' },
    { name: 'report', namespace: 'batch' },
  ];

  for (const follower of ['watch -o json', 'status --watch -o json'] as const) {
    it(`${follower} outlives a runtime restart: it says so, follows the runtime when it is back, and ends only by its signal`, async () => {
      dir = dir || (await mkdtemp(join(tmpdir(), 'podctl-watch-restart-')));
      const socketPath = join(dir, `${follower.split(' ')[0]}.sock`);
      const stateDir = join(dir, `state-${follower.split(' ')[0]}`);
      sim = await startSimulator({ socketPath, pods });
      const endpoint = sim.endpoint;
      const { child, lines, exited } = watch(endpoint, stateDir, ['-o', 'json'], follower === 'watch -o json' ? ['watch'] : ['status', '--watch']);
      try {
        await until('the first records', () => lines().length >= 2, WAIT);
        // the runtime goes away: its connections close, and the follower must not end with them
        await sim.close();
        sim = undefined;
        const still = await Promise.race([exited, new Promise((r) => setTimeout(() => r('running'), 2_500))]);
        expect(still).toBe('running');
        if (follower === 'watch -o json') await until('the runtime-not-answering record', () => lines().some((r) => r.kind === 'runtime-not-answering'), WAIT);
        sim = await startSimulator({ socketPath, pods });
        const kill = await podctl(['kill', 'batch/report', '--grace', '1', '--runtime-endpoint', endpoint, '--state-dir', stateDir]);
        expect(kill.status, kill.stderr).toBe(0);
        const seen = (r: Record<string, unknown>) =>
          follower === 'watch -o json'
            ? r.type === 'transition' && r.name === 'report' && r.to === 'finished'
            : (r.pod as { name?: string; state?: string } | undefined)?.name === 'report' && (r.pod as { state?: string }).state === 'finished';
        await until('batch/report finished, after the restart', () => lines().some(seen), WAIT);
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
      } finally {
        child.kill('SIGKILL');
        await sim?.close();
        sim = undefined;
      }
    });
  }
});
