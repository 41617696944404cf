/**
 * The embedded CRI simulator: public surface.
 *
 * `startSimulator` runs it in-process (tests, benchmarks); `runSimulator` runs it as a long-lived
 * foreground process for `podctl simulator` (serves until the signal aborts or SIGINT/SIGTERM,
 * then closes cleanly and removes its socket).
 */
import path from 'node:path';
import { SIMULATOR_SOCKET_NAME } from '../client/endpoint.js';
import { startSimulator, type RunningSimulator, type StartSimulatorOptions } from './server.js';
import type { FaultRule, SimPodSpec } from './types.js';
import type { ProcessMode } from './process.js';

export { startSimulator, type RunningSimulator, type StartSimulatorOptions } from './server.js';
export { demoNode, seedPods, pauseCommand } from './seed.js';
export { SimRuntime } from './state.js';
export { behaviourOf } from './process.js';
export { parseFault } from './fault-spec.js';
export { FaultInjector } from './faults.js';
export { type FaultRule, type SimPodSpec, type SimRecord } from './types.js';

export interface RunSimulatorOptions {
  /** Socket path; default `<stateDir>/simulator.sock`. */
  socketPath?: string;
  stateDir?: string;
  /** Pods to seed, or a demo-node pod count. Default 36 demo pods. */
  pods?: SimPodSpec[] | number;
  faults?: FaultRule[];
  /** Process modes by container name (see ProcessMode). */
  processModes?: { container: string; mode: ProcessMode }[];
  timeScale?: number;
  events?: boolean;
  /** Stops the simulator when aborted. */
  signal?: AbortSignal;
  /** Also stop on SIGINT/SIGTERM of this process (default true). */
  handleProcessSignals?: boolean;
  /** Called once serving, with the endpoint (for "serving on …" output). */
  onReady?: (sim: RunningSimulator) => void;
}

/** Default socket of the simulator for a state directory. */
function simulatorSocketPath(stateDir: string): string {
  return path.join(stateDir, SIMULATOR_SOCKET_NAME);
}

/** Serves until `signal` aborts (or SIGINT/SIGTERM); resolves after a clean close. */
export async function runSimulator(options: RunSimulatorOptions): Promise<void> {
  const socketPath = options.socketPath ?? (options.stateDir ? simulatorSocketPath(options.stateDir) : undefined);
  if (!socketPath) throw new Error('runSimulator: socketPath or stateDir is required');
  const startOptions: StartSimulatorOptions = {
    socketPath,
    pods: options.pods ?? 36,
    ...(options.faults ? { faults: options.faults } : {}),
    ...(options.timeScale !== undefined ? { timeScale: options.timeScale } : {}),
    ...(options.events !== undefined ? { events: options.events } : {}),
  };
  const sim = await startSimulator(startOptions);
  for (const { container, mode } of options.processModes ?? []) sim.state.setProcessMode(container, mode);
  options.onReady?.(sim);
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      options.signal?.removeEventListener('abort', stop);
      if (options.handleProcessSignals !== false) {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }
      resolve();
    };
    if (options.signal?.aborted) return stop();
    options.signal?.addEventListener('abort', stop, { once: true });
    if (options.handleProcessSignals !== false) {
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    }
  });
  await sim.close();
}
