/**
 * Shared helpers for the CRI tests: a temporary directory per test file, an in-process simulator
 * on a socket inside it, and a client connected to that simulator.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach } from 'vitest';
import { connectCri, type CriClient } from '../../src/cri/client/client.js';
import { startSimulator, type RunningSimulator, type StartSimulatorOptions } from '../../src/cri/simulator/index.js';

export function useTempDir(prefix = 'podctl-cri-'): () => string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return () => dir;
}

let seq = 0;

/** Starts a simulator (closed after the test) and a client on it. */
export function useSimulator(): (options?: Omit<StartSimulatorOptions, 'socketPath'>, clientTimeoutMs?: number) => Promise<{ sim: RunningSimulator; client: CriClient }> {
  const dir = useTempDir();
  const open: { sim: RunningSimulator; client: CriClient }[] = [];
  afterEach(async () => {
    for (const { sim, client } of open.splice(0)) {
      client.close();
      await sim.close();
    }
  });
  return async (options = {}, clientTimeoutMs) => {
    const sim = await startSimulator({ ...options, socketPath: path.join(dir(), `sim-${++seq}.sock`) });
    const client = await connectCri({ endpoint: sim.endpoint, ...(clientTimeoutMs !== undefined ? { timeoutMs: clientTimeoutMs } : {}) });
    const pair = { sim, client };
    open.push(pair);
    return pair;
  };
}
