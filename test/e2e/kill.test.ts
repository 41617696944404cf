/**
 * Killing pods on a real containerd through podctl's engine, runtime syncer and status cache, with
 * the kubelet's grace semantics: SIGTERM first, SIGKILL when the grace runs out, StopPodSandbox
 * last; grace only shrinks; runtime-only pods get grace 1; static pods are tracked as static.
 *
 * Timing bounds here check *which* grace was applied (2 s, not 30 s), with generous margins; how
 * fast podctl is lives in bench/cri.bench.ts.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { toRunningPod, toV1Pod } from '../../src/cri/cache/pods.js';
import { isStaticPod } from '../../src/engine/index.js';
import { describeContainerd } from './support/env.js';
import { useContainerd } from './support/context.js';
import { EngineStack } from './support/engine.js';
import { exitInfo, firstSigterm, sandboxReady, sigterms } from './support/observe.js';
import { readContainerLog } from './support/pods.js';
import { until, waitFor } from '../support/wait.js';

describeContainerd(import.meta.url, 'kill on containerd through the engine', () => {
  const node = useContainerd();
  let stack: EngineStack;

  beforeAll(async () => {
    stack = await EngineStack.open(node.socket);
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('honours the grace period: SIGTERM, then SIGKILL ~2 s later for a container that ignores it (exit 137)', async () => {
    const real = await node.pods.create({ name: 'grace', containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const [stubborn] = real.containers;
    await stack.adopt(real.pod);

    const started = Date.now();
    await stack.kill(real.pod, false, 2);
    const elapsed = Date.now() - started;

    const exit = await exitInfo(node.cri, stubborn!.id);
    expect(exit).toMatchObject({ state: 'exited', exitCode: 137 });
    const log = await readContainerLog(stubborn!);
    const [sigterm] = await sigterms(stubborn!);
    expect(sigterm, 'the container got SIGTERM before the kill').toBeDefined();
    // the SIGTERM is the last thing it said: the SIGKILL ended it, it did not exit by itself
    expect(log.at(-1)?.message).toMatch(/received SIGTERM, ignoring it/);
    const termToKill = exit.finishedAt! - sigterm!.time;
    expect(termToKill).toBeGreaterThanOrEqual(1_800);
    expect(termToKill).toBeLessThan(4_000);
    expect(elapsed).toBeGreaterThanOrEqual(1_800);
    expect(elapsed).toBeLessThan(8_000);

    expect(await sandboxReady(node.cri, real.sandboxId)).toBe(false);
    expect(stack.workers.isPodKnownTerminated(real.uid)).toBe(true);
    expect(stack.workers.couldHaveRunningContainers(real.uid)).toBe(false);
    const requested = stack.eventsFor(real.uid, 'termination-requested');
    expect(requested).toHaveLength(1);
    expect(requested[0]).toMatchObject({ gracePeriod: 2 });
  });

  it('stops a container that exits on SIGTERM without waiting for the grace period (exit 0)', async () => {
    const real = await node.pods.create({
      name: 'quick',
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'polite', mode: 'default' }],
    });
    const [polite] = real.containers;
    await stack.adopt(real.pod);

    const started = Date.now();
    await stack.kill(real.pod, false);
    const elapsed = Date.now() - started;

    const exit = await exitInfo(node.cri, polite!.id);
    expect(exit).toMatchObject({ state: 'exited', exitCode: 0 });
    const messages = (await readContainerLog(polite!)).map((l) => l.message);
    expect(messages.at(-2)).toMatch(/received SIGTERM/);
    expect(messages.at(-1)).toMatch(/exiting 0/);
    // the 30 s grace was available, and not used
    expect(elapsed).toBeLessThan(10_000);
    expect(await sandboxReady(node.cri, real.sandboxId)).toBe(false);
    expect(stack.workers.isPodKnownTerminated(real.uid)).toBe(true);
  });

  it('a graceful container gets the time it needs within the grace (exit 0 after ~1 s)', async () => {
    const real = await node.pods.create({ name: 'graceful', containers: [{ name: 'drainer', mode: { graceful: 1 } }] });
    const [drainer] = real.containers;
    await stack.adopt(real.pod);

    await stack.kill(real.pod, false, 5);

    const exit = await exitInfo(node.cri, drainer!.id);
    expect(exit).toMatchObject({ state: 'exited', exitCode: 0 });
    const sigterm = await firstSigterm(drainer!);
    const termToExit = exit.finishedAt! - sigterm!.time;
    expect(termToExit).toBeGreaterThanOrEqual(900);
    expect(termToExit).toBeLessThan(4_000);
  });

  it('shortens an in-flight termination: grace 30, then 1 → the kill lands ~1 s after the second request', async () => {
    const real = await node.pods.create({
      name: 'shorten',
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'stubborn', mode: 'ignore' }],
    });
    const [stubborn] = real.containers;
    await stack.adopt(real.pod);

    const first = stack.kill(real.pod, false, 30);
    await waitFor('the first SIGTERM', () => firstSigterm(stubborn!), { timeoutMs: 10_000, everyMs: 25 });
    const shortenedAt = Date.now();
    const second = stack.kill(real.pod, false, 1);
    await Promise.all([first, second]);
    const afterShortening = Date.now() - shortenedAt;

    const exit = await exitInfo(node.cri, stubborn!.id);
    expect(exit).toMatchObject({ state: 'exited', exitCode: 137 });
    const killedAfter = exit.finishedAt! - shortenedAt;
    expect(killedAfter).toBeGreaterThanOrEqual(800);
    expect(killedAfter).toBeLessThan(5_000);
    expect(afterShortening).toBeLessThan(8_000);
    const shortened = stack.eventsFor(real.uid, 'grace-shortened');
    expect(shortened).toEqual([expect.objectContaining({ from: 30, to: 1 })]);
    expect(stack.workers.snapshot().get(real.uid)?.gracePeriod).toBe(1);
  });

  it('runs a sleep preStop hook before the SIGTERM, inside the grace period', async () => {
    const real = await node.pods.create({
      name: 'prestop-sleep',
      containers: [{ name: 'app', mode: 'default', preStop: { sleep: { seconds: 1 } } }],
    });
    const [app] = real.containers;
    await stack.adopt(real.pod);

    const started = Date.now();
    await stack.kill(real.pod, false, 5);

    const sigterm = await firstSigterm(app!);
    expect(sigterm!.time - started).toBeGreaterThanOrEqual(900);
    expect(sigterm!.time - started).toBeLessThan(4_000);
    expect(await exitInfo(node.cri, app!.id)).toMatchObject({ state: 'exited', exitCode: 0 });
    expect(stack.hooks.filter((h) => h.uid === real.uid)).toEqual([expect.objectContaining({ container: 'app', ok: true })]);
  });

  it('runs an exec preStop hook in the container through ExecSync, then stops it', async () => {
    // `/pause bogus` is a usage error: exit 2, so the hook runs for real and reports its failure
    const real = await node.pods.create({
      name: 'prestop-exec',
      containers: [{ name: 'app', mode: 'default', preStop: { exec: { command: ['/pause', 'bogus'] } } }],
    });
    const [app] = real.containers;
    await stack.cache.refresh();
    // the hook comes from the container's io.kubernetes.container.preStopHandler annotation
    const rebuilt = toV1Pod(stack.cache.pod(real.uid)!);
    await stack.adopt(rebuilt);

    await stack.kill(rebuilt, false, 5);

    expect(stack.hooks.filter((h) => h.uid === real.uid)).toEqual([expect.objectContaining({ container: 'app', ok: false, message: expect.stringMatching(/exit(ed)? 2/) })]);
    expect(await exitInfo(node.cri, app!.id)).toMatchObject({ state: 'exited', exitCode: 0 });
    expect(stack.workers.isPodKnownTerminated(real.uid)).toBe(true);
  });

  it('terminates an orphaned runtime pod (no spec) with grace 1, whatever its own grace says', async () => {
    const real = await node.pods.create({
      name: 'orphan',
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'stubborn', mode: 'ignore' }],
    });
    const [stubborn] = real.containers;
    await stack.cache.refresh();
    const runtimePod = stack.cache.pod(real.uid);
    expect(runtimePod, 'the cache sees the pod').toBeDefined();

    let completed = false;
    stack.workers.updatePod({
      updateType: 'kill',
      runningPod: toRunningPod(runtimePod!),
      killPodOptions: { onComplete: () => (completed = true) },
    });
    await until('the runtime pod to terminate', () => completed, { timeoutMs: 15_000, everyMs: 25 });

    const exit = await exitInfo(node.cri, stubborn!.id);
    expect(exit).toMatchObject({ state: 'exited', exitCode: 137 });
    const sigterm = await firstSigterm(stubborn!);
    const termToKill = exit.finishedAt! - sigterm!.time;
    expect(termToKill).toBeGreaterThanOrEqual(800);
    expect(termToKill).toBeLessThan(3_500);
    expect(stack.eventsFor(real.uid, 'sync-started').map((e) => (e as { phase: string }).phase)).toContain('terminating-runtime');
    expect(await sandboxReady(node.cri, real.sandboxId)).toBe(false);

    // nothing to remember about a pod with no spec: finished and forgotten at once
    expect(
      stack
        .eventsFor(real.uid)
        .map((e) => e.type)
        .slice(-2),
    ).toEqual(['finished', 'forgotten']);
    expect(stack.workers.snapshot().has(real.uid)).toBe(false);
    expect(stack.workers.syncKnownPods([]).has(real.uid)).toBe(false);
  });

  it('tracks a static pod (config.source=file, rebuilt from the runtime) as static through its kill', async () => {
    const real = await node.pods.create({
      name: 'static',
      configSource: 'file',
      containers: [{ name: 'stubborn', mode: 'ignore' }],
    });
    const [stubborn] = real.containers;
    await stack.cache.refresh();
    const pod = toV1Pod(stack.cache.pod(real.uid)!);
    expect(isStaticPod(pod)).toBe(true);
    await stack.adopt(pod);
    expect(stack.workers.syncKnownPods([pod]).get(real.uid)).toEqual({
      state: 'sync',
      orphan: false,
      hasConfig: true,
      static: true,
    });

    const fullname = `${real.name}_${real.namespace}`;
    const kill = stack.kill(pod, false, 2);
    await waitFor('the SIGTERM', () => firstSigterm(stubborn!), { timeoutMs: 10_000, everyMs: 25 });
    expect(stack.workers.isPodForMirrorPodTerminatingByFullName(fullname)).toBe(true);
    await kill;

    expect(await exitInfo(node.cri, stubborn!.id)).toMatchObject({ state: 'exited', exitCode: 137 });
    expect(stack.workers.isPodForMirrorPodTerminatingByFullName(fullname)).toBe(false);
    expect(stack.workers.syncKnownPods([pod]).get(real.uid)).toMatchObject({ state: 'terminated', static: true });
  });
});
