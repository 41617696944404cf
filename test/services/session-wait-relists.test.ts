/**
 * A wait for pods this session drives asks the runtime for no relist of its own: their workers
 * decide when they are terminated (each by its check relist), so while the runtime stops them it
 * serves only the session's relists (its 1 s poll, the workers' checks), however often the wait
 * wakes up. A wait for a pod nobody here drives still looks at a recent listing.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { openSession } from '../../src/session/open.js';
import type { NodeSession } from '../../src/domain/session-api.js';
import { tempDir } from '../store/support/fixtures.js';

let dir: { path: string; cleanup: () => Promise<void> };
let sim: RunningSimulator;
const sessions: NodeSession[] = [];

/** Seconds each container takes to exit after SIGTERM: long enough for many wake-ups of the wait. */
const EXIT_AFTER_SECONDS = 3;

beforeEach(async () => {
  dir = await tempDir('podctl-session-wait-relists-');
  sim = await startSimulator({
    socketPath: join(dir.path, 'cri.sock'),
    pods: ['a', 'b', 'c'].map((name) => ({
      name,
      namespace: 'web',
      uid: `u-${name}`,
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'app', onSigterm: { exitAfterSeconds: EXIT_AFTER_SECONDS } }],
    })),
  });
});
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await sim.close();
  await dir.cleanup();
});

/** A session whose waits look again every 50 ms (the default is 1 s): each look is a chance to relist. */
async function open(): Promise<NodeSession> {
  const session = await openSession({ stateDir: join(dir.path, 'state'), runtimeEndpoint: sim.endpoint, rpcTimeoutMs: 5_000 }, { rescanMs: 50 });
  sessions.push(session);
  return session;
}

const listingsSince = (at: number): number => sim.state.journal().filter((r) => r.kind === 'rpc' && r.method === 'ListPodSandbox' && r.at >= at).length;

describe('waitTerminated and the runtime', () => {
  it('waiting for pods driven here adds no relist to the poll and the workers’ checks, however often the wait looks', async () => {
    const session = await open();
    const uids = ['u-a', 'u-b', 'u-c'];
    await Promise.all(uids.map((uid) => session.requestKill({ uid, gracePeriodSeconds: 30 })));
    const startedAt = Date.now();
    const t0 = performance.now();
    const outcomes = await session.waitTerminated(uids, { timeoutMs: 60_000 });
    const seconds = (performance.now() - t0) / 1000;
    expect([...outcomes.values()]).toEqual(['terminated', 'terminated', 'terminated']);
    expect(seconds).toBeGreaterThan(EXIT_AFTER_SECONDS - 1);
    // at most one relist a second (the poll), plus the workers' checks after their stops (shared);
    // a wait that relisted whenever its listing was over 250 ms old made about four a second
    expect(listingsSince(startedAt)).toBeLessThanOrEqual(Math.ceil(seconds) + 3);
  });
});
