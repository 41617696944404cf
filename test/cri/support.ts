/**
 * Shared helpers for the CRI tests: a temporary directory per test file, an in-process simulator
 * on a socket inside it, and a client connected to that simulator.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach } from 'vitest';
import { Http2Channel } from '../../src/cri/client/channel.js';
import { connectCri, type CriClient } from '../../src/cri/client/client.js';
import * as proto from '../../src/cri/client/generated/runtime_v1.js';
import { demoNode, startSimulator, type RunningSimulator, type StartSimulatorOptions } from '../../src/cri/simulator/index.js';

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

/** The raw bytes of a 50-pod demo node's ListPodSandbox and ListContainers answers, from a simulator served in `dir`. */
export async function simulatorListings(dir: string): Promise<{ sandboxes: Buffer; containers: Buffer }> {
  const sim = await startSimulator({ socketPath: path.join(dir, 'list.sock'), pods: demoNode(50) });
  const channel = new Http2Channel({ socketPath: sim.socketPath, maxMessageBytes: 16 << 20 });
  try {
    const call = (method: string, message: Uint8Array) => channel.unary(method, `/runtime.v1.RuntimeService/${method}`, message, Date.now() + 10_000);
    const sandboxes = await call('ListPodSandbox', proto.ListPodSandboxRequest.encode({ filter: undefined }).finish());
    const containers = await call('ListContainers', proto.ListContainersRequest.encode({ filter: undefined }).finish());
    return { sandboxes, containers };
  } finally {
    channel.close();
    await sim.close();
  }
}
