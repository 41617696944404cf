/**
 * SIGINT/SIGTERM end `podctl sync-known` and `podctl status` the way they end kill/drain: the wait
 * stops, the session is closed (state persisted, leases released) and the exit code is 130. The
 * built CLI in child processes against the embedded simulator in real time (timeScale 1), so the
 * waits interrupted here would otherwise last minutes. Needs `npm run build` first.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { auditCheckpoints } from '../store/support/harness.js';
import { useSimNode } from '../support/cli.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');
const ENV = { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' };
/** How long an interrupted command may take to close its session and exit (it would wait minutes otherwise). */
const EXIT_BOUND_MS = 15_000;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function podctl(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: ENV, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

interface Child {
  process: ChildProcess;
  stderr: () => string;
  /** Resolves once stderr contains `text`. */
  said: (text: string) => Promise<void>;
  /** The exit code, or a failure if the child is still running EXIT_BOUND_MS after the call (it is then killed). */
  exitWithinBound: () => Promise<number>;
}

function start(args: string[]): Child {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: ENV });
  let stderr = '';
  const waiters: { text: string; resolve: () => void }[] = [];
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    for (const w of waiters) if (stderr.includes(w.text)) w.resolve();
  });
  child.stdout.resume();
  const exited = new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
  return {
    process: child,
    stderr: () => stderr,
    said: (text) => new Promise<void>((resolve) => (stderr.includes(text) ? resolve() : waiters.push({ text, resolve }))),
    exitWithinBound: async () => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), EXIT_BOUND_MS)));
      const outcome = await Promise.race([exited, late]);
      clearTimeout(timer);
      if (outcome === 'late') {
        child.kill('SIGKILL');
        throw new Error(`podctl ${args[0]} still running ${EXIT_BOUND_MS} ms after the signal; stderr:\n${stderr}`);
      }
      return outcome;
    },
  };
}

beforeAll(() => {
  if (!existsSync(path.join(ROOT, 'dist', 'commands', 'sync-known.js'))) throw new Error('dist/ is missing: run `npm run build` before the CLI tests');
});

describe('podctl sync-known interrupted', { timeout: 90_000 }, () => {
  const node = useSimNode('podctl-cli-int-', {
    timeScale: 1,
    pods: [{ name: 'stubborn', namespace: 'default', terminationGracePeriodSeconds: 600, containers: [{ name: 'c', onSigterm: 'ignore' }] }],
  });

  it('SIGINT while it drives a pod that ignores SIGTERM (grace 600 s): exit 130, valid checkpoint, lease released', async () => {
    // A kill that gives up waiting hands the pod (600 s grace) to a background driver; that driver
    // dies (SIGKILL), leaving the pod terminating with a dead owner.
    const kill = await podctl(['kill', 'default/stubborn', '--timeout', '1s', ...node.common]);
    expect(kill.code).toBe(3);
    const driver = Number(/handed to background podctl pid (\d+)/.exec(kill.stderr)?.[1]);
    expect(driver).toBeGreaterThan(0);
    let driven: number | null = null;
    for (let i = 0; i < 100 && driven !== driver; i += 1) {
      const status = await podctl(['status', 'default/stubborn', '--json', ...node.common]);
      driven = status.code === 0 ? (JSON.parse(status.stdout).pods[0]?.ownerPid ?? null) : null;
    }
    expect(driven, 'the background driver took the pod over').toBe(driver);
    process.kill(driver, 'SIGKILL');

    // sync-known resumes it from its checkpoint and would wait for it for up to 15 minutes.
    const desired = path.join(node.dir, 'none.json');
    writeFileSync(desired, '{"kind":"PodList","items":[]}');
    const child = start(['sync-known', '--desired', desired, '--yes', ...node.common]);
    await child.said('sync-known: 0 desired pod(s)');
    let owner: number | null = null;
    for (let i = 0; i < 100 && owner !== child.process.pid; i += 1) {
      const status = await podctl(['status', 'default/stubborn', '--json', ...node.common]);
      owner = status.code === 0 ? (JSON.parse(status.stdout).pods[0]?.ownerPid ?? null) : null;
    }
    expect(owner, 'sync-known took the pod over').toBe(child.process.pid);

    child.process.kill('SIGINT');
    expect(await child.exitWithinBound()).toBe(130);
    expect(child.stderr()).toContain('SIGINT: stopping; pods this process drives are handed to a background podctl process');
    expect(child.stderr()).not.toMatch(/\n\s+at /);
    const next = Number(/handed to background podctl pid (\d+)/.exec(child.stderr())?.[1]);
    expect(next).toBeGreaterThan(0);
    try {
      expect(await auditCheckpoints(node.stateDir)).toEqual({ valid: 1, invalid: [], quarantined: [] });
      // the pod keeps what is left of its 600 s grace (never more) and is driven by the new background process
      let pod: { state: string; gracePeriodSeconds: number; ownerPid: number | null; containersRunning: number } | undefined;
      for (let i = 0; i < 100 && pod?.ownerPid !== next; i += 1) {
        const after = await podctl(['status', 'default/stubborn', '--json', ...node.common]);
        pod = after.code === 0 ? JSON.parse(after.stdout).pods[0] : undefined;
      }
      expect(pod).toMatchObject({ state: 'terminating', ownerPid: next, containersRunning: 1 });
      expect(pod!.gracePeriodSeconds).toBeGreaterThanOrEqual(590);
      expect(pod!.gracePeriodSeconds).toBeLessThanOrEqual(600);
    } finally {
      process.kill(next, 'SIGKILL');
    }
  });
});

describe('podctl status interrupted', { timeout: 60_000 }, () => {
  let sim: RunningSimulator;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-cli-int-'));
    // The runtime answers everything but its pod listing, which would take a minute.
    sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), timeScale: 1, pods: 1, faults: [{ method: 'ListPodSandbox', delayMs: 60_000 }] });
  });
  afterAll(async () => {
    await sim?.close();
  });

  it('SIGTERM while it waits for the runtime listing: exit 130 at once', async () => {
    const child = start(['status', '--log-level', 'debug', '--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')]);
    await child.said('session: runtime');
    child.process.kill('SIGTERM');
    expect(await child.exitWithinBound()).toBe(130);
    expect(child.stderr()).toContain('SIGTERM: stopping');
  });
});
