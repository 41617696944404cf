/**
 * containerd goes away in the middle of a termination and comes back: the engine sees the runtime
 * errors, retries with backoff, and the termination completes (the container is SIGKILLed once
 * its grace is spent), as a kubelet rides out a runtime restart.
 *
 * This file runs a containerd node of its own (support/node.ts): stopping the shared one would
 * break the other e2e files running at the same time.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectCri, type CriClient } from '../../src/cri/client.js';
import { describeContainerd } from './support/env.js';
import { EngineStack, waitFor } from './support/engine.js';
import { PrivateNode } from './support/node.js';
import { exitInfo, firstSigterm, sandboxReady } from './support/observe.js';
import { PodFactory } from './support/pods.js';

describeContainerd(import.meta.url, 'containerd restarted during a termination', () => {
  const node = new PrivateNode(`/tmp/podctl-e2e-restart-${process.pid}`);
  let cri: CriClient | undefined;
  let pods: PodFactory | undefined;

  beforeAll(async () => {
    await node.up();
    cri = await connectCri({ endpoint: node.socket, timeoutMs: 30_000 });
    pods = new PodFactory(cri, join(node.nodeDir, 'logs', 'pods'));
  });
  afterAll(async () => {
    try {
      await pods?.removeAll();
    } finally {
      cri?.close();
      await node.down();
      await rm(`${node.nodeDir}.lock`, { force: true });
    }
  });

  it('retries through the outage and completes the kill once containerd is back', async () => {
    const real = await pods!.create({
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
      await waitFor('the SIGTERM', () => firstSigterm(stubborn!));

      await node.stopRuntime();
      // the worker keeps failing while the runtime is away, and retries
      await waitFor('a failed sync while containerd is down', () => (stack.eventsFor(real.uid, 'sync-failed').length > 0 ? true : undefined));
      expect(completedAt).toBeUndefined();
      await node.up();

      await waitFor('the termination to complete', () => completedAt, 30_000);

      const exit = await exitInfo(cri!, stubborn!.id);
      expect(exit).toMatchObject({ state: 'exited', exitCode: 137 });
      expect(await sandboxReady(cri!, real.sandboxId)).toBe(false);
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
});
