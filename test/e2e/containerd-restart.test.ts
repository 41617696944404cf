/**
 * containerd goes away in the middle of a termination and comes back: the engine sees the runtime
 * errors, retries with backoff, and the termination completes (the container is SIGKILLed once
 * its grace is spent), as a kubelet rides out a runtime restart.
 *
 * The same through the CLI: a `podctl kill` whose wait ends while containerd is down hands the pod
 * to a background driver, which waits for containerd instead of exiting and finishes the pod once
 * it is back.
 *
 * This file runs a containerd node of its own (support/node.ts): stopping the shared one would
 * break the other e2e files running at the same time.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { collect, requireBuild, runPodctl, spawnPodctl } from './support/cli.js';
import { describeContainerd } from './support/env.js';
import { EngineStack } from './support/engine.js';
import { usePrivateNode } from './support/context.js';
import { exitInfo, firstSigterm, sandboxReady } from './support/observe.js';
import { alive } from '../support/process.js';
import { until, waitFor } from '../support/wait.js';

describeContainerd(import.meta.url, 'containerd restarted during a termination', () => {
  const node = usePrivateNode('restart');

  it('retries through the outage and completes the kill once containerd is back', async () => {
    const real = await node.pods.create({
      name: 'restart',
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'stubborn', mode: 'ignore' }],
    });
    const [stubborn] = real.containers;
    const stack = await EngineStack.open(node.socket, { backOffPeriodMs: 300, rpcTimeoutMs: 3_000 });
    try {
      await stack.adopt(real.pod);
      let completedAt: number | undefined;
      stack.workers.updatePod({
        updateType: 'kill',
        pod: real.pod,
        killPodOptions: { gracePeriodSecondsOverride: 3, onComplete: () => (completedAt = Date.now()) },
      });
      await waitFor('the SIGTERM', () => firstSigterm(stubborn!), { timeoutMs: 10_000, everyMs: 25 });

      await node.privateNode.stopRuntime();
      // the worker keeps failing while the runtime is away, and retries
      await until('a failed sync while containerd is down', () => stack.eventsFor(real.uid, 'sync-failed').length > 0, { timeoutMs: 10_000, everyMs: 25 });
      expect(completedAt).toBeUndefined();
      await node.privateNode.up();

      await waitFor('the termination to complete', () => completedAt, { timeoutMs: 30_000, everyMs: 25 });

      const exit = await exitInfo(node.cri, stubborn!.id);
      expect(exit).toMatchObject({ state: 'exited', exitCode: 137 });
      expect(await sandboxReady(node.cri, real.sandboxId)).toBe(false);
      expect(stack.workers.isPodKnownTerminated(real.uid)).toBe(true);
      const failures = stack.eventsFor(real.uid, 'sync-failed') as { error: string; retryInMs: number }[];
      expect(failures.length).toBeGreaterThan(0);
      for (const f of failures) {
        expect(f.error).not.toContain('\n');
        expect(f.retryInMs).toBeGreaterThan(0);
      }
      expect(failures.some((f) => /Unavailable|closed|Cancelled/i.test(f.error))).toBe(true);
      // grace never grew while retrying
      expect(stack.workers.snapshot().get(real.uid)?.gracePeriod).toBe(3);
    } finally {
      await stack.close();
    }
  }, 120_000);

  it('a background driver started while containerd is down waits for it, then finishes the pod', async () => {
    requireBuild();
    const stateDir = await mkdtemp(join(tmpdir(), 'podctl-e2e-restart-state-'));
    const real = await node.pods.create({ name: 'handed', terminationGracePeriodSeconds: 30, containers: [{ name: 'stubborn', mode: 'ignore' }] });
    const [stubborn] = real.containers;
    const options = { endpoint: node.socket, stateDir };
    let driver = 0;
    let runtimeDown = false;
    try {
      // the kill's wait (2 s) ends while containerd is down: it hands the pod on
      const child = spawnPodctl(['kill', `${real.namespace}/${real.name}`, '--grace', '6', '--timeout', '2s'], options);
      const killing = collect(child, 60_000);
      let early = '';
      child.stderr?.on('data', (d: string) => (early += d));
      await waitFor('the SIGTERM', () => firstSigterm(stubborn!), { timeoutMs: 10_000, everyMs: 25, detail: () => `podctl kill said:\n${early}` });
      await node.privateNode.stopRuntime();
      runtimeDown = true;
      const kill = await killing;
      expect(kill.code, kill.stderr).toBe(3);
      const handed = /handed to background podctl pid (\d+), which drives them until terminated \(log ([^)]+)\)/.exec(kill.stderr);
      driver = Number(handed?.[1]);
      const log = handed?.[2] ?? '';
      expect(driver, kill.stderr).toBeGreaterThan(0);

      // the driver does not exit on the missing socket: it waits, and says so
      await until('the driver to say it waits', async () => (await readFile(log, 'utf8')).includes('waiting for the runtime'), { timeoutMs: 20_000, everyMs: 25 });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(alive(driver), await readFile(log, 'utf8')).toBe(true);

      await node.privateNode.up();
      runtimeDown = false;
      await until(`driver ${driver} to finish`, () => !alive(driver), { timeoutMs: 60_000, everyMs: 25 });
      const written = await readFile(log, 'utf8');
      expect(written).toContain('the runtime answered again');
      expect(JSON.parse(written.slice(written.indexOf('{'))).pods).toMatchObject([{ name: real.name, outcome: 'terminated' }]);
      // SIGKILLed once its 6 s grace was spent (it ignores SIGTERM), its sandbox stopped
      expect(await exitInfo(node.cri, stubborn!.id)).toMatchObject({ state: 'exited', exitCode: 137 });
      expect(await sandboxReady(node.cri, real.sandboxId)).toBe(false);
      const status = await runPodctl(['status', `${real.namespace}/${real.name}`, '--json'], options);
      expect(JSON.parse(status.stdout).pods[0]).toMatchObject({ containersRunning: 0 });
    } finally {
      if (driver > 0 && alive(driver)) process.kill(driver, 'SIGKILL');
      // a failure while containerd was down: bring it back, or the pods of this file stay behind
      if (runtimeDown) await node.privateNode.up();
      await rm(stateDir, { recursive: true, force: true });
    }
  }, 150_000);
});
