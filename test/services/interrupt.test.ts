/**
 * SIGINT/SIGTERM reach `sync-known` and `status` as an abort signal: the session stops waiting at
 * once (the pods it drives stay in its hands), and `close()` then persists their state and releases
 * their leases, so the next podctl run resumes them from a valid checkpoint.
 * Real session, CRI client and store against the embedded simulator in real time (timeScale 1), so
 * nothing finishes by itself within a test: only the abort can end the waits.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import type { FaultRule, SimPodSpec } from '../../src/cri/simulator/index.js';
import { openSession } from '../../src/session/open.js';
import type { NodeSession } from '../../src/domain/session-api.js';
import { podStatus } from '../../src/services/diagnose/status.js';
import { syncKnown } from '../../src/services/housekeeping/sync-known.js';
import { openStore } from '../../src/store/index.js';
import { auditCheckpoints } from '../store/support/harness.js';
import { tempDir } from '../store/support/fixtures.js';
import { until } from '../support/wait.js';

/** Far longer than an interrupted call may take, far shorter than what it would wait for otherwise. */
const PROMPT_MS = 5_000;

const STUBBORN: SimPodSpec = { name: 'stubborn', namespace: 'default', terminationGracePeriodSeconds: 600, containers: [{ name: 'c', onSigterm: 'ignore' }] };

let dir: { path: string; cleanup: () => Promise<void> };
let stateDir: string;
let sim: RunningSimulator | undefined;
let sessions: NodeSession[];

beforeEach(async () => {
  dir = await tempDir('podctl-interrupt-');
  stateDir = join(dir.path, 'state');
  sessions = [];
});
afterEach(async () => {
  await Promise.all(sessions.map((s) => s.close()));
  await sim?.close();
  sim = undefined;
  await dir.cleanup();
});

async function node(pods: SimPodSpec[], faults: FaultRule[] = []): Promise<RunningSimulator> {
  sim = await startSimulator({ socketPath: join(dir.path, 'cri.sock'), pods, faults, timeScale: 1 });
  return sim;
}

async function open(rpcTimeoutMs = 30_000): Promise<NodeSession> {
  const session = await openSession({ stateDir, runtimeEndpoint: sim!.endpoint, rpcTimeoutMs });
  sessions.push(session);
  return session;
}

/** Resolves with how the promise ended and after how long; a hang fails the test after PROMPT_MS. */
async function settleWithin<T>(promise: Promise<T>, what: string): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} still running ${PROMPT_MS} ms after the abort`)), PROMPT_MS);
  });
  try {
    const error = await Promise.race([
      promise.then(
        () => undefined,
        (e: unknown) => e,
      ),
      hung,
    ]);
    return { error, ms: Date.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

describe('sync-known interrupted', () => {
  it('stops waiting for a resumed pod that ignores SIGTERM; close() leaves a valid terminating checkpoint and no lease', async () => {
    await node([STUBBORN]);
    // A first process starts the kill (grace 600 s from the pod's spec) and exits without waiting.
    const first = await open();
    const uid = (await first.listPods()).find((p) => p.name === 'stubborn')!.uid;
    await first.requestKill({ uid });
    await first.close();

    // sync-known resumes it from its checkpoint and would wait for it up to the killPodNow bound.
    const session = await open();
    const desired = join(dir.path, 'none.json');
    await writeFile(desired, '{"kind":"PodList","items":[]}');
    const controller = new AbortController();
    const running = syncKnown({ session, source: { kind: 'file', path: desired }, yes: true, signal: controller.signal });
    await until('the pod resumed by this session', async () => (await session.getPod(uid))?.owner?.pid === process.pid, 10_000);
    controller.abort(new DOMException('interrupted by SIGINT', 'AbortError'));
    const { error } = await settleWithin(running, 'syncKnown');
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toBe('AbortError');

    await session.close();
    expect(await auditCheckpoints(stateDir)).toEqual({ valid: 1, invalid: [], quarantined: [] });
    const store = await openStore({ stateDir });
    const checkpoint = await store.checkpoints.read(uid);
    expect(checkpoint?.status.terminatingAt).toBeDefined();
    expect(checkpoint?.status.finished).toBe(false);
    expect(checkpoint?.status.gracePeriod).toBe(600);
    expect(checkpoint?.history.map((h) => h.type)).toContain('lease-taken');
    const lease = await store.leases.inspect(uid);
    expect(lease?.released).toBe(true);
    // the container still runs, ignoring its SIGTERM: only the wait was given up, not the pod
    expect((await (await open()).getPod(uid))?.containersRunning).toBe(1);
  });

  it('an already aborted signal changes nothing', async () => {
    await node([STUBBORN]);
    const session = await open();
    const controller = new AbortController();
    controller.abort(new DOMException('interrupted by SIGTERM', 'AbortError'));
    await expect(session.syncKnown([], { signal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' });
    expect((await session.listPods()).find((p) => p.name === 'stubborn')?.state).toBe('runtime');
  });
});

describe('status interrupted', () => {
  it('stops waiting for a runtime listing that does not come', async () => {
    await node([STUBBORN], [{ method: 'ListPodSandbox', delayMs: 60_000 }]);
    const session = await open(120_000);
    const controller = new AbortController();
    const running = podStatus({ session, selection: { refs: [], all: true, namespace: undefined }, explain: false, signal: controller.signal });
    setTimeout(() => controller.abort(new DOMException('interrupted by SIGINT', 'AbortError')), 100);
    const { error } = await settleWithin(running, 'podStatus');
    expect((error as Error | undefined)?.name).toBe('AbortError');
  });
});
