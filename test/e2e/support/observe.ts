/**
 * What a test reads back from the runtime after a kill: container exit status and times, sandbox
 * state, and the SIGTERMs the test image logged.
 */
import type { CriClient } from '../../../src/cri/client/client.js';
import { readContainerLog, type LogLine, type RealContainer } from './pods.js';
import { waitFor } from '../../support/wait.js';

export interface ExitInfo {
  state: 'created' | 'running' | 'exited' | 'unknown';
  exitCode: number;
  /** Epoch ms, undefined while running. */
  finishedAt?: number;
}

const STATES: readonly ExitInfo['state'][] = ['created', 'running', 'exited', 'unknown'];

export async function exitInfo(cri: CriClient, containerId: string): Promise<ExitInfo> {
  const status = (await cri.containerStatus(containerId)).status;
  if (!status) throw new Error(`container ${containerId}: no status`);
  const finished = status.finishedAt > 0n ? Number(status.finishedAt / 1_000_000n) : undefined;
  return {
    state: STATES[Number(status.state)] ?? 'unknown',
    exitCode: status.exitCode,
    ...(finished !== undefined ? { finishedAt: finished } : {}),
  };
}

export async function sandboxReady(cri: CriClient, sandboxId: string): Promise<boolean> {
  return (await cri.podSandboxStatus(sandboxId)).status?.state === 0;
}

/** The lines in which the test image reported a SIGTERM (ignored or acted on). */
export async function sigterms(container: RealContainer): Promise<LogLine[]> {
  return (await readContainerLog(container)).filter((l) => /received SIGTERM/.test(l.message));
}

/** The first SIGTERM line, or undefined (for waitFor). */
export async function firstSigterm(container: RealContainer): Promise<LogLine | undefined> {
  return (await sigterms(container))[0];
}

/** The container's exit, once it has exited (polled every 100 ms, bounded by `boundMs`). */
export function exitedInfo(cri: CriClient, containerId: string, what = 'the container exited', boundMs = 30_000): Promise<ExitInfo> {
  return waitFor(
    what,
    async () => {
      const info = await exitInfo(cri, containerId);
      return info.state === 'exited' ? info : undefined;
    },
    { timeoutMs: boundMs, everyMs: 100 },
  );
}
