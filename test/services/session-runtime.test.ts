/**
 * `NodeSession.simulated` follows what the runtime says of itself (its Version answer), not the
 * socket path it was reached by: the embedded simulator behind an explicit --runtime-endpoint is
 * still reported as simulated, and a runtime that names itself otherwise is not.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GrpcStatus } from '../../src/cri/client/errors.js';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { openSession } from '../../src/session/open.js';
import { runtimeIsSimulator, SIMULATOR_RUNTIME_NAME } from '../../src/session/cri-runtime.js';
import type { NodeSession } from '../../src/domain/session-api.js';
import { tempDir } from '../store/support/fixtures.js';

let dir: { path: string; cleanup: () => Promise<void> };
let sims: RunningSimulator[];
let sessions: NodeSession[];

beforeEach(async () => {
  dir = await tempDir('podctl-session-runtime-');
  sims = [];
  sessions = [];
});
afterEach(async () => {
  await Promise.all(sessions.map((s) => s.close()));
  await Promise.all(sims.map((s) => s.close()));
  await dir.cleanup();
});

async function simulatorAt(socketPath: string, faults: Parameters<typeof startSimulator>[0]['faults'] = []): Promise<RunningSimulator> {
  const sim = await startSimulator({ socketPath, pods: 1, faults });
  sims.push(sim);
  return sim;
}

async function open(stateDir: string, runtimeEndpoint?: string): Promise<NodeSession> {
  const session = await openSession({ stateDir, ...(runtimeEndpoint ? { runtimeEndpoint } : {}), rpcTimeoutMs: 5_000 });
  sessions.push(session);
  return session;
}

describe('session.simulated', () => {
  it('is true for the simulator reached through an explicit --runtime-endpoint elsewhere than <state-dir>/simulator.sock', async () => {
    const sim = await simulatorAt(join(dir.path, 'cri.sock'));
    const session = await open(join(dir.path, 'state'), sim.endpoint);
    expect(session.endpoint).toBe(sim.endpoint);
    expect(session.simulated).toBe(true);
  });

  it('is true for the simulator found at <state-dir>/simulator.sock through an explicit endpoint too', async () => {
    const stateDir = join(dir.path, 'state');
    await mkdir(stateDir, { mode: 0o700 });
    const sim = await simulatorAt(join(stateDir, 'simulator.sock'));
    expect((await open(stateDir, sim.endpoint)).simulated).toBe(true);
  });

  it('falls back to the endpoint resolution when the runtime does not answer Version', async () => {
    const sim = await simulatorAt(join(dir.path, 'cri.sock'), [{ method: 'Version', code: GrpcStatus.UNIMPLEMENTED, details: 'no Version here' }]);
    const session = await open(join(dir.path, 'state'), sim.endpoint);
    expect(session.simulated).toBe(false);
  });
});

describe('runtimeIsSimulator', () => {
  const answering = (runtimeName: string) => ({
    version: async () => ({ version: '0.1.0', runtimeName, runtimeVersion: '1.7.0', runtimeApiVersion: 'v1' }),
  });
  const failing = { version: async () => Promise.reject(new Error('unavailable')) };

  it("decides by the runtime's name, whatever the path suggested", async () => {
    expect(await runtimeIsSimulator(answering(SIMULATOR_RUNTIME_NAME), false)).toBe(true);
    expect(await runtimeIsSimulator(answering('containerd'), true)).toBe(false);
  });

  it('keeps the guess when Version fails', async () => {
    expect(await runtimeIsSimulator(failing, true)).toBe(true);
    expect(await runtimeIsSimulator(failing, false)).toBe(false);
  });

  it('bounds the Version call by the timeout it is given', async () => {
    let asked: number | undefined;
    const client = {
      version: async (options?: { timeoutMs?: number }) => {
        asked = options?.timeoutMs;
        return { version: '', runtimeName: 'containerd', runtimeVersion: '', runtimeApiVersion: 'v1' };
      },
    };
    await runtimeIsSimulator(client, true, 750);
    expect(asked).toBe(750);
  });
});
