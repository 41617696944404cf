/**
 * `podctl simulator`: the embedded CRI simulator served in the foreground on a unix socket, seeded
 * with a demo node, for trying podctl (and running its demo and benchmarks) on a machine without a
 * container runtime.
 *
 * Invariants: gRPC and the simulator are imported only here, on first call; the simulator serves
 * until the signal aborts (or SIGINT/SIGTERM), then closes and removes its socket; a socket path that
 * is already served by a live process is refused (it may be a real runtime); a path that exists and
 * is not a socket is refused (never deleted); only a stale socket (nobody listening) is replaced; a
 * path longer than a unix socket address holds (107 bytes) is refused rather than truncated.
 */
import { lstat, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { checkSocket } from '../../cri/client/endpoint.js';
import { parseFault, type ParsedFault } from '../../cri/simulator/fault-spec.js';
import { RuntimeFailure, UsageError } from '../../lib/errors.js';

export const DEFAULT_SIMULATOR_PODS = 36;
/** The longest path a unix socket address holds on Linux (sun_path is 108 bytes, NUL included). */
const MAX_SOCKET_PATH_BYTES = 107;

/** Parsed `--fault` specifications (see cri/simulator/fault-spec.ts). */
export interface SimulatorFaults {
  rules: import('../../cri/simulator/types.js').FaultRule[];
  processModes: { container: string; mode: 'stuck' | 'vanished' }[];
}

/** Parses every `--fault`; a bad one is a usage error naming it. */
export function parseFaults(specs: readonly string[]): SimulatorFaults {
  const out: SimulatorFaults = { rules: [], processModes: [] };
  for (const spec of specs) {
    let parsed: ParsedFault;
    try {
      parsed = parseFault(spec);
    } catch (error) {
      throw new UsageError(`--fault ${spec}: ${(error as Error).message}`, 'podctl simulator --list-faults shows the accepted faults');
    }
    if (parsed.kind === 'rule') out.rules.push(parsed.rule);
    else out.processModes.push({ container: parsed.container, mode: parsed.mode });
  }
  return out;
}

export interface SimulatorOptions {
  socketPath: string;
  pods: number;
  faults?: SimulatorFaults;
  /** Real-time factor for simulated waits (1 = real time). */
  timeScale?: number;
  signal?: AbortSignal;
  onReady?: (info: { endpoint: string; socketPath: string; pods: number }) => void;
}

export interface SimulatorResult {
  endpoint: string;
  socketPath: string;
  pods: number;
  servedSeconds: number;
}

/** True when something accepts connections on the socket (the runtime endpoint's own check). */
export async function socketIsLive(socketPath: string, timeoutMs = 300): Promise<boolean> {
  return (await checkSocket(socketPath, timeoutMs)).ok;
}

export async function serveSimulator(options: SimulatorOptions): Promise<SimulatorResult> {
  if (!Number.isInteger(options.pods) || options.pods < 0) throw new UsageError(`--pods ${options.pods} is not a pod count`, 'use an integer ≥ 0');
  if (options.socketPath.trim() === '') throw new UsageError('--socket is empty', 'give a path for the socket, or leave it out');
  const socketPath = path.resolve(options.socketPath);
  const bytes = Buffer.byteLength(socketPath);
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    throw new UsageError(`--socket ${socketPath} is ${bytes} bytes, longer than a unix socket path can be (${MAX_SOCKET_PATH_BYTES})`, 'choose a shorter path');
  }
  const existing = await lstat(socketPath).catch(() => undefined);
  if (existing && !existing.isSocket()) {
    throw new UsageError(`--socket ${socketPath} exists and is not a socket${existing.isDirectory() ? ' (a directory)' : ''}`, 'podctl never deletes it: choose another path');
  }
  if (await socketIsLive(socketPath)) {
    throw new RuntimeFailure(`${socketPath} is already served by another process`, 'pick another --socket, or stop that process first');
  }
  try {
    await mkdir(path.dirname(socketPath), { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new RuntimeFailure(`cannot create ${path.dirname(socketPath)}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, 'check --socket or --state-dir');
  }
  const { runSimulator } = await import('../../cri/simulator/index.js');
  const started = Date.now();
  let endpoint = `unix://${socketPath}`;
  await runSimulator({
    socketPath,
    pods: options.pods,
    ...(options.timeScale !== undefined ? { timeScale: options.timeScale } : {}),
    ...(options.faults ? { faults: options.faults.rules, processModes: options.faults.processModes } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    handleProcessSignals: false,
    onReady: (sim) => {
      endpoint = sim.endpoint;
      options.onReady?.({ endpoint: sim.endpoint, socketPath: sim.socketPath, pods: options.pods });
    },
  });
  return { endpoint, socketPath, pods: options.pods, servedSeconds: Math.round((Date.now() - started) / 1000) };
}
