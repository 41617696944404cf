/**
 * The read-only session (`podctl status`): it lists what other sessions left in the store and what
 * the runtime runs, with one ListPodSandbox and one ListContainers per listing (no ContainerStatus,
 * no event stream), and refuses to act on pods.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { openSession } from '../../src/session/open.js';
import type { NodeSession } from '../../src/domain/session-api.js';
import { StoreError } from '../../src/store/index.js';
import { tempDir } from '../store/support/fixtures.js';

let dir: { path: string; cleanup: () => Promise<void> };
let sim: RunningSimulator;
const sessions: NodeSession[] = [];

beforeEach(async () => {
  dir = await tempDir('podctl-session-readonly-');
  sim = await startSimulator({
    socketPath: join(dir.path, 'cri.sock'),
    pods: [
      { name: 'web', namespace: 'prod', uid: 'u-web', containers: [{ name: 'app' }] },
      { name: 'job', namespace: 'batch', uid: 'u-job', containers: [{ name: 'run', state: 'exited', exitCode: 3 }] },
    ],
  });
});
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await sim.close();
  await dir.cleanup();
});

async function open(readOnly: boolean, stateDir = join(dir.path, 'state')): Promise<NodeSession> {
  const session = await openSession({ stateDir, runtimeEndpoint: sim.endpoint, rpcTimeoutMs: 5_000, ...(readOnly ? { readOnly: true } : {}) });
  sessions.push(session);
  return session;
}

const rpcMethods = (): string[] => sim.state.journal().flatMap((r) => (r.kind === 'rpc' ? [r.method] : []));

describe('read-only session', () => {
  it('lists runtime pods with one ListPodSandbox and one ListContainers, no ContainerStatus nor event stream', async () => {
    const session = await open(true);
    const pods = await session.listPods();
    expect(pods.map((p) => [p.uid, p.state, p.containersRunning, p.containersTotal]).sort()).toEqual([
      ['u-job', 'runtime', 0, 1],
      ['u-web', 'runtime', 1, 1],
    ]);
    expect(
      rpcMethods()
        .filter((m) => m !== 'Version')
        .sort(),
    ).toEqual(['ListContainers', 'ListPodSandbox']);
  });

  it('asks Version before the first listing, so its small answer is not queued behind the listing', async () => {
    const session = await open(true);
    expect(session.simulated).toBe(true);
    await session.listPods();
    // before, Version waited for the connection to be up and went out after the listing's calls
    expect(rpcMethods().slice(0, 3)).toEqual(['Version', 'ListPodSandbox', 'ListContainers']);
  });

  it('shows what a driving session left in the store, and refuses to act on pods', async () => {
    const driver = await open(false);
    await driver.requestKill({ uid: 'u-web', gracePeriodSeconds: 1 });
    expect((await driver.waitTerminated(['u-web'], { timeoutMs: 10_000 })).get('u-web')).toBe('terminated');
    await driver.close();

    const reader = await open(true);
    const web = (await reader.listPods()).find((p) => p.uid === 'u-web');
    expect(web?.state === 'terminated' || web?.state === 'finished').toBe(true);
    expect(web?.history.some((h) => h.type === 'kill-requested')).toBe(true);
    await expect(reader.requestKill({ uid: 'u-job' })).rejects.toThrow(/read-only/);
    await expect(reader.waitTerminated(['u-web'], { timeoutMs: 100 })).rejects.toThrow(/read-only/);
    await expect(reader.syncKnown([])).rejects.toThrow(/read-only/);
  });

  it('a listing right after another reuses its relist (≤ 1 s); a driving session relists every time', async () => {
    const reader = await open(true);
    await reader.listPods();
    await reader.listPods();
    expect(rpcMethods().filter((m) => m === 'ListPodSandbox')).toHaveLength(1);
    const driver = await open(false);
    await driver.listPods();
    await driver.listPods();
    expect(rpcMethods().filter((m) => m === 'ListPodSandbox').length).toBeGreaterThanOrEqual(3);
  });

  it('says once, while it opens, that the runtime has been asked (status runs its kubelet check then); never when the runtime is not there', async () => {
    const calls: boolean[] = [];
    let opened = false;
    const opening = openSession({
      stateDir: join(dir.path, 'state'),
      runtimeEndpoint: sim.endpoint,
      rpcTimeoutMs: 5_000,
      readOnly: true,
      onRuntimeAsked: () => calls.push(opened),
    });
    const session = await opening;
    opened = true;
    sessions.push(session);
    await session.listPods();
    // once, before the open ended (it waits for Version's answer)
    expect(calls).toEqual([false]);

    const missing = vi.fn();
    await expect(openSession({ stateDir: join(dir.path, 'state'), runtimeEndpoint: join(dir.path, 'none.sock'), readOnly: true, onRuntimeAsked: missing })).rejects.toThrow(/none\.sock/);
    expect(missing).not.toHaveBeenCalled();
  });

  it('a bad state dir is reported as such even though the runtime answers (the connection is closed)', async () => {
    const file = join(dir.path, 'not-a-dir');
    await writeFile(file, 'x');
    await expect(open(true, file)).rejects.toBeInstanceOf(StoreError);
  });
});
