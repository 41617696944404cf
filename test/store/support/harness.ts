/**
 * Harness for multi-process store tests: an in-process CRI simulator per lane, driver children
 * (support/driver.ts) that can be SIGKILLed at any instant, and checks over the state dir.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { startSimulator, seedPods, type RunningSimulator, type SimPodSpec } from '../../../src/cri/simulator/index.js';
import type { V1Pod } from '../../../src/engine/types.js';
import { decodeCheckpoint } from '../../../src/store/format.js';
import { readdir, readFile } from 'node:fs/promises';

const DRIVER = join(import.meta.dirname, 'driver.ts');

export async function startNode(socketPath: string, timeScale: number): Promise<RunningSimulator> {
  return startSimulator({ socketPath, pods: [], timeScale, events: true });
}

export interface SeededPod {
  uid: string;
  sandboxId: string;
  containerIds: string[];
  spec: SimPodSpec;
}

export function seed(sim: RunningSimulator, specs: SimPodSpec[]): SeededPod[] {
  return seedPods(sim.state, specs).map((ids, i) => ({ ...ids, spec: specs[i]! }));
}

/** The desired-pod view of seeded pods (what an API server would list). */
export function desiredOf(pods: SeededPod[]): V1Pod[] {
  return pods.map((p) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { uid: p.uid, name: p.spec.name, namespace: p.spec.namespace ?? 'default', annotations: { 'kubernetes.io/config.source': 'api' } },
    spec: { containers: (p.spec.containers ?? [{ name: 'main' }]).map((c) => ({ name: c.name, image: 'pause' })), terminationGracePeriodSeconds: p.spec.terminationGracePeriodSeconds ?? 30 },
  }));
}

export interface DriverRun {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  stderr: string[];
  exited: Promise<number | null>;
}

export function runDriver(args: string[]): DriverRun {
  const child = spawn(process.execPath, ['--import', 'tsx', DRIVER, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Record<string, unknown>[] = [];
  const stderr: string[] = [];
  let buffer = '';
  child.stdout.on('data', (d: Buffer) => {
    buffer += d.toString();
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        stderr.push(line);
      }
    }
  });
  child.stderr.on('data', (d: Buffer) => stderr.push(d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, stderr, exited };
}

/** Decodes every checkpoint in the state dir; returns the invalid ones and the quarantine listing. */
export async function auditCheckpoints(stateDir: string): Promise<{ valid: number; invalid: string[]; quarantined: string[] }> {
  const pods = join(stateDir, 'pods');
  let valid = 0;
  const invalid: string[] = [];
  for (const name of await readdir(pods)) {
    if (name.startsWith('.')) continue; // temporaries of a killed writer: never read as checkpoints
    const outcome = decodeCheckpoint(await readFile(join(pods, name)));
    if (outcome.kind === 'ok') valid += 1;
    else invalid.push(`${name}: ${outcome.reason}`);
  }
  return { valid, invalid, quarantined: await readdir(join(stateDir, 'quarantine')) };
}

/** Simulator journal counts per object id. */
export function journalCounts(sim: RunningSimulator): {
  stopSandbox: Map<string, number>;
  sigterm: Map<string, number>;
  sigkill: Map<string, number>;
  stopTimeouts: Map<string, number[]>;
} {
  const stopSandbox = new Map<string, number>();
  const sigterm = new Map<string, number>();
  const sigkill = new Map<string, number>();
  const stopTimeouts = new Map<string, number[]>();
  const bump = (m: Map<string, number>, k: string): void => {
    m.set(k, (m.get(k) ?? 0) + 1);
  };
  for (const r of sim.state.journal()) {
    if (r.kind === 'rpc' && r.method === 'StopPodSandbox' && r.id) bump(stopSandbox, r.id);
    if (r.kind === 'rpc' && r.method === 'StopContainer' && r.id) {
      const t = Number(/timeout=(\d+)/.exec(r.detail ?? '')?.[1]);
      stopTimeouts.set(r.id, [...(stopTimeouts.get(r.id) ?? []), t]);
    }
    if (r.kind === 'signal' && r.signal === 'SIGTERM') bump(sigterm, r.id);
    if (r.kind === 'signal' && r.signal === 'SIGKILL') bump(sigkill, r.id);
  }
  return { stopSandbox, sigterm, sigkill, stopTimeouts };
}

export function isRunning(sim: RunningSimulator, pod: SeededPod): boolean {
  const sandbox = sim.state.sandbox(pod.sandboxId);
  const sandboxReady = sandbox?.state === 0;
  const containerRunning = pod.containerIds.some((id) => sim.state.container(id)?.state === 1);
  return sandboxReady || containerRunning;
}
