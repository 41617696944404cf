/**
 * The session under the command services, end to end in one process: the embedded CRI simulator
 * with a demo node, the real CRI client/cache/syncer, the engine and the store. Checks the seam the
 * commands rely on: a drain terminates every pod (static pods included), `status --explain` reads
 * the timeline, a second process's shorter kill shortens the first, sync-known forgets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { demoNode, startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { openSession } from '../../src/session/open.js';
import type { NodeSession } from '../../src/domain/session-api.js';
import { drainNode } from '../../src/services/drain/drain.js';
import { defaultGroups } from '../../src/services/drain/drain-plan.js';
import { podStatus } from '../../src/services/diagnose/status.js';
import { killPods } from '../../src/services/terminate/kill.js';
import { syncKnown } from '../../src/services/housekeeping/sync-known.js';
import { auditCheckpoints } from '../store/support/harness.js';
import { tempDir } from '../store/support/fixtures.js';

let dir: { path: string; cleanup: () => Promise<void> };
let sim: RunningSimulator;
let stateDir: string;
const opened: NodeSession[] = [];

beforeAll(async () => {
  dir = await tempDir('podctl-integration-');
  stateDir = join(dir.path, 'state');
  sim = await startSimulator({ socketPath: join(dir.path, 'sim.sock'), pods: demoNode(36), timeScale: 0.05 });
});
afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
  await sim.close();
  await dir.cleanup();
});

async function session(): Promise<NodeSession> {
  const s = await openSession({ stateDir, runtimeEndpoint: sim.endpoint, rpcTimeoutMs: 5_000 });
  opened.push(s);
  return s;
}

const ALL = { refs: [], all: true, namespace: undefined };

describe('session under the command services', () => {
  it('kill from two sessions, drain, status --explain, sync-known', async () => {
    const first = await session();
    const pods = await first.listPods();
    expect(pods).toHaveLength(36);
    expect(pods.every((p) => p.state === 'runtime')).toBe(true);
    const victim = pods.find((p) => !p.static && p.namespace !== 'kube-system')!;

    // A kill that does not wait, then a second process's shorter kill of the same pod.
    const noWait = await killPods({ session: first, selection: { refs: [{ kind: 'uid', uid: victim.uid }], all: false, namespace: undefined }, gracePeriodSeconds: 20, wait: false });
    expect(noWait.pods[0]).toMatchObject({ handledBy: 'local', outcome: 'requested' });
    const second = await session();
    const shorter = await killPods({
      session: second,
      selection: { refs: [{ kind: 'uid', uid: victim.uid }], all: false, namespace: undefined },
      gracePeriodSeconds: 1,
      wait: true,
      timeoutMs: 15_000,
    });
    expect(shorter.pods[0]).toMatchObject({ handledBy: 'delegated', ownerPid: process.pid, outcome: 'terminated' });

    const explained = await podStatus({ session: second, selection: { refs: [{ kind: 'uid', uid: victim.uid }], all: false, namespace: undefined }, explain: true });
    expect(JSON.stringify(explained)).toContain('request-applied');

    // Drain the rest: every pod ends terminated, the static control-plane pods included.
    const drained = await drainNode({ session: second, selection: ALL, groups: defaultGroups(20, 5), dryRun: false });
    expect(drained.summary).toMatchObject({ failed: 0, timedOut: 0 });
    expect(drained.status).toBe('done');
    const after = await second.listPods();
    expect(after.filter((p) => p.containersRunning > 0).map((p) => `${p.namespace}/${p.name}`)).toEqual([]);
    expect(after.filter((p) => p.static).every((p) => p.state === 'finished' || p.state === 'terminated')).toBe(true);

    // Housekeeping with nothing desired forgets every finished worker; checkpoints stay valid.
    await first.close();
    const synced = await syncKnown({ session: second, source: { kind: 'file', path: join(dir.path, 'none.json') } }).catch((e: unknown) => e);
    expect((synced as Error).message).toContain('cannot read');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(join(dir.path, 'none.json'), '{"kind":"PodList","items":[]}');
    const result = await syncKnown({ session: second, source: { kind: 'file', path: join(dir.path, 'none.json') } });
    expect(result.forgotten.length).toBe(36);
    const audit = await auditCheckpoints(stateDir);
    expect(audit).toEqual({ valid: 0, invalid: [], quarantined: [] });
  }, 60_000);
});
