import { describe, expect, it } from 'vitest';
import type { KubeClient } from '../../../src/services/terminate/terminate.js';
import { PodNotFoundError } from '../../../src/lib/errors.js';
import { parseSelection } from '../../../src/lib/refs.js';
import { Reporter } from '../../../src/lib/reporter.js';
import { evictPods } from '../../../src/services/terminate/evict.js';
import { killPods } from '../../../src/services/terminate/kill.js';
import { terminateExitCode, podsToHandOff } from '../../../src/services/terminate/terminate.js';
import { terminateSummary } from '../../../src/services/terminate/output.js';
import { FakeSession } from '../fake-session.js';

const node = (): FakeSession =>
  new FakeSession([
    { namespace: 'web', name: 'frontend', grace: 30, labels: { app: 'frontend' } },
    { namespace: 'web', name: 'api', grace: 45, labels: { app: 'api' }, behaviour: 'stuck' },
    { namespace: 'default', name: 'worker', grace: 10 },
    { namespace: 'default', name: 'done', state: 'finished' },
    { namespace: 'default', name: 'broken', behaviour: 'fails' },
  ]);

const capture = (): { lines: string[]; reporter: Reporter } => {
  const lines: string[] = [];
  return { lines, reporter: new Reporter('info', { write: (s: string) => lines.push(s) > 0, isTTY: false }) };
};

describe('kill service', () => {
  it('kills and waits with the killPodNow bound of the longest grace, reporting it', async () => {
    const session = node();
    const { lines, reporter } = capture();
    const result = await killPods({ session, selection: parseSelection({ args: ['web/frontend', 'default/worker'] }), wait: true, reporter, now: session.now });
    expect(result.status).toBe('done');
    expect(terminateExitCode(result)).toBe(0);
    expect(result.timeoutSeconds).toBe(45); // max(10, 1.5 × 30)
    expect(result.timeoutSource).toBe('killPodNow');
    expect(session.waits).toEqual([{ uids: [session.uidOf('default', 'worker'), session.uidOf('web', 'frontend')], timeoutMs: 45_000 }]);
    expect(result.pods.map((p) => [p.name, p.outcome, p.gracePeriodSeconds])).toEqual([
      ['worker', 'terminated', 10],
      ['frontend', 'terminated', 30],
    ]);
    expect(lines.join('')).toContain('waiting up to 45s for 2 pod(s) (killPodNow bound: max(10s, 1.5 × grace 30s)');
    expect(lines.join('')).toMatch(/kill: 2\/2 terminated/);
  });

  it('passes --grace as an override that only shortens: the grace sent is the one shown', async () => {
    const session = node();
    const result = await killPods({ session, selection: parseSelection({ args: ['web/frontend', 'default/worker'] }), gracePeriodSeconds: 15, wait: true, now: session.now });
    // frontend's own grace is 10 s: --grace 15 must not lengthen it
    expect(session.kills.map((k) => k.gracePeriodSeconds)).toEqual([10, 15]);
    expect(result.pods.map((p) => p.gracePeriodSeconds)).toEqual([10, 15]);
    // the kubelet's killPodNow bound in whole seconds: 15 + 15/2 (integer division) = 22 s
    expect(result.timeoutSeconds).toBe(22);
  });

  it('a stuck pod times out: status timed-out, exit 3, the others terminated', async () => {
    const session = node();
    const { lines, reporter } = capture();
    const result = await killPods({ session, selection: parseSelection({ args: [], all: true, namespace: 'web' }), timeoutMs: 2000, wait: true, reporter, now: session.now });
    expect(result.timeoutSource).toBe('flag');
    expect(result.timeoutSeconds).toBe(2);
    expect(result.pods.map((p) => [p.name, p.outcome])).toEqual([
      ['api', 'timeout'],
      ['frontend', 'terminated'],
    ]);
    expect(result.status).toBe('timed-out');
    expect(terminateExitCode(result)).toBe(3);
    expect(lines.join('')).toContain('web/api still terminating after 2s');
  });

  it('missing refs: the found pods are killed, status not-found, exit 4', async () => {
    const session = node();
    const result = await killPods({ session, selection: parseSelection({ args: ['web/frontend', 'web/nope'] }), wait: true, now: session.now });
    expect(result.pods.map((p) => p.outcome)).toEqual(['terminated']);
    expect(result.missing).toEqual(['web/nope']);
    expect(terminateExitCode(result)).toBe(4);
    // no API server: the stop had no pod spec to order it, and the summary says so
    expect(terminateSummary(result)).toBe(
      "kill: 1 terminated; not found: web/nope; ordering: parallel, no pod spec (no API server's spec: sidecars, if any, were not stopped after the main containers)",
    );
  });

  it('nothing matched at all is PodNotFoundError (exit 4) and kills nothing', async () => {
    const session = node();
    await expect(killPods({ session, selection: parseSelection({ args: ['nope'] }), wait: true })).rejects.toBeInstanceOf(PodNotFoundError);
    await expect(killPods({ session, selection: parseSelection({ args: [], selector: 'app=zzz' }), wait: true })).rejects.toThrow(/no pod matches -l app=zzz in namespace default/);
    expect(session.kills).toEqual([]);
  });

  it('nothing matched in the namespace: the hint names where it does match (-n NS, or -A for several)', async () => {
    const session = new FakeSession([
      { namespace: 'web', name: 'api-1', labels: { app: 'api' } },
      { namespace: 'shop', name: 'api-2', labels: { app: 'api' } },
      { namespace: 'web', name: 'cache', labels: { app: 'cache' } },
    ]);
    const one = await killPods({ session, selection: parseSelection({ args: [], selector: 'app=cache' }), wait: true }).catch((e: unknown) => e);
    expect(one).toBeInstanceOf(PodNotFoundError);
    expect((one as PodNotFoundError).hint).toBe('1 matches in namespace web: add -n web');
    const two = await killPods({ session, selection: parseSelection({ args: [], selector: 'app=api' }), wait: true }).catch((e: unknown) => e);
    expect((two as PodNotFoundError).hint).toBe('2 match in namespaces shop, web: add -A (or -n NAMESPACE)');
    const byName = await killPods({ session, selection: parseSelection({ args: ['cache'] }), wait: true }).catch((e: unknown) => e);
    expect((byName as PodNotFoundError).hint).toBe('1 matches in namespace web: add -n web');
    const none = await killPods({ session, selection: parseSelection({ args: [], selector: 'app=zzz' }), wait: true }).catch((e: unknown) => e);
    expect((none as PodNotFoundError).hint).toMatch(/podctl status -A/);
    expect(session.kills).toEqual([]);
  });

  it('a runtime error on one pod is reported on that pod (exit 1); the others proceed', async () => {
    const session = node();
    const result = await killPods({ session, selection: parseSelection({ args: ['broken', 'worker'] }), wait: true, now: session.now });
    const broken = result.pods.find((p) => p.name === 'broken');
    expect(broken?.outcome).toBe('failed');
    expect(broken?.error).toBe('StopContainer: rpc error: code = DeadlineExceeded');
    expect(result.pods.find((p) => p.name === 'worker')?.outcome).toBe('terminated');
    expect(terminateExitCode(result)).toBe(1);
  });

  it('already finished pods are not killed again', async () => {
    const session = node();
    const result = await killPods({ session, selection: parseSelection({ args: ['done'] }), wait: true });
    expect(result.pods[0]?.outcome).toBe('already-terminated');
    expect(session.kills).toEqual([]);
    expect(session.waits).toEqual([]);
    expect(result.status).toBe('done');
  });

  it('--no-wait requests and returns: status requested, exit 0, no wait', async () => {
    const session = node();
    const result = await killPods({ session, selection: parseSelection({ args: ['web/api'] }), wait: false });
    expect(result.status).toBe('requested');
    expect(result.timeoutSeconds).toBeNull();
    expect(result.pods[0]).toMatchObject({ outcome: 'requested', handledBy: 'local', ownerPid: 4242 });
    expect(session.waits).toEqual([]);
    expect(terminateExitCode(result)).toBe(0);
  });

  it('an aborted wait returns the partial result: unfinished pods are interrupted (exit 130) and to be handed on', async () => {
    const session = node();
    const controller = new AbortController();
    controller.abort(new DOMException('interrupted by SIGINT', 'AbortError'));
    session.waitTerminated = async (uids) => new Map(uids.map((uid) => [uid, 'timeout' as const]));
    const result = await killPods({ session, selection: parseSelection({ args: ['web/frontend'] }), wait: true, signal: controller.signal });
    expect(result.status).toBe('interrupted');
    expect(result.pods.map((p) => p.outcome)).toEqual(['interrupted']);
    expect(terminateExitCode(result)).toBe(130);
    expect(podsToHandOff(result)).toEqual([session.uidOf('web', 'frontend')]);
  });
});

describe('evict service', () => {
  const recordingKube = (fail = false): KubeClient & { calls: string[] } => {
    const calls: string[] = [];
    return {
      node: 'node-1',
      calls,
      postEvent: async (pod, type, reason, message) => {
        if (fail) throw new Error('post event failed (HTTP 403)');
        calls.push(`event ${pod.metadata?.name} ${type} ${reason}: ${message}`);
      },
      markEvicted: async (pod, message) => {
        calls.push(`status ${pod.metadata?.name} Evicted: ${message}`);
      },
    };
  };

  it('kills with evict semantics and a default reason and message', async () => {
    const session = node();
    const result = await evictPods({ session, selection: parseSelection({ args: ['worker'] }), wait: true, now: session.now });
    expect(result.action).toBe('evict');
    expect(session.kills[0]).toMatchObject({ evict: true, reason: 'Evicted' });
    expect(session.kills[0]?.message).toMatch(/is evicting this pod with podctl/);
    expect(result.apiServer).toBeUndefined();
  });

  it('with an API server: a Warning Event before the kill and status Failed/Evicted after it', async () => {
    const session = node();
    const kube = recordingKube();
    const result = await evictPods({ session, selection: parseSelection({ args: ['worker'] }), wait: true, kube, reason: 'DiskPressure', message: 'low disk' });
    // the kubelet's words: reason Evicted for the Event and the status; the operator's reason leads the message
    expect(kube.calls).toEqual(['event worker Warning Evicted: DiskPressure: low disk', 'status worker Evicted: DiskPressure: low disk']);
    expect(result.apiServer).toEqual({ statusPatched: 1, eventsPosted: 1, errors: [] });
  });

  it('API server errors are reported, the eviction still happens', async () => {
    const session = node();
    const result = await evictPods({ session, selection: parseSelection({ args: ['worker'] }), wait: true, kube: recordingKube(true) });
    expect(result.pods[0]?.outcome).toBe('terminated');
    expect(result.apiServer?.errors).toEqual(['post event failed (HTTP 403)']);
    expect(result.apiServer?.statusPatched).toBe(1);
  });
});

describe('verification after the wait', () => {
  it('a pod another process reported terminated while the runtime still runs a container is a failure, not a success', async () => {
    const session = new FakeSession([{ namespace: 'kube-system', name: 'etcd', static: true, ownerPid: 777 }]);
    const uid = session.uidOf('kube-system', 'etcd');
    const original = session.waitTerminated.bind(session);
    session.waitTerminated = async (uids, options) => {
      const outcomes = await original(uids, options);
      Object.assign(session.pod(uid) ?? {}, { containersRunning: 1 });
      return outcomes;
    };
    const result = await killPods({ session, selection: parseSelection({ args: ['kube-system/etcd'] }), wait: true, yes: true, now: session.now });
    expect(result.pods[0]).toMatchObject({ outcome: 'failed', error: 'reported terminated, but 1 container(s) still run in the runtime' });
    expect(terminateExitCode(result)).toBe(1);
  });

  it('several pods are checked on one listing: only the one still running fails', async () => {
    const session = new FakeSession([
      { namespace: 'default', name: 'a', ownerPid: 777 },
      { namespace: 'default', name: 'b', ownerPid: 777 },
      { namespace: 'default', name: 'c', ownerPid: 777 },
    ]);
    const b = session.uidOf('default', 'b');
    const original = session.waitTerminated.bind(session);
    session.waitTerminated = async (uids, options) => {
      const outcomes = await original(uids, options);
      Object.assign(session.pod(b) ?? {}, { containersRunning: 2 });
      return outcomes;
    };
    const result = await killPods({ session, selection: parseSelection({ args: ['default/a', 'default/b', 'default/c'] }), wait: true, now: session.now });
    const outcomes = Object.fromEntries(result.pods.map((p) => [p.name, p.outcome]));
    expect(outcomes).toEqual({ a: 'terminated', b: 'failed', c: 'terminated' });
    expect(result.pods.find((p) => p.name === 'b')?.error).toBe('reported terminated, but 2 container(s) still run in the runtime');
    expect(terminateExitCode(result)).toBe(1);
    // the selection and the check: one listing each; the check's may be any listing that
    // started after the pods were seen terminated (the fake clock stood still since)
    expect(session.listings).toBe(2);
    expect(session.listingOptions[1]).toEqual({ scope: 'runtime', runtimeMaxAgeMs: session.now() - session.pod(b)!.since });
  });

  it('pods driven here are not listed again: their own terminating sync verified the runtime', async () => {
    const session = new FakeSession([
      { namespace: 'default', name: 'a' },
      { namespace: 'default', name: 'b', ownerPid: 777 },
    ]);
    const a = session.uidOf('default', 'a');
    const original = session.waitTerminated.bind(session);
    session.waitTerminated = async (uids, options) => {
      const outcomes = await original(uids, options);
      // what a listing would show (it cannot for a pod whose sync checked after its stops)
      Object.assign(session.pod(a) ?? {}, { containersRunning: 1 });
      return outcomes;
    };
    const result = await killPods({ session, selection: parseSelection({ args: ['default/a', 'default/b'] }), wait: true, now: session.now });
    expect(Object.fromEntries(result.pods.map((p) => [p.name, [p.outcome, p.handledBy]]))).toEqual({ a: ['terminated', 'local'], b: ['terminated', 'delegated'] });
    expect(session.listings).toBe(2);
  });

  it('with only pods driven here there is no listing after the wait', async () => {
    const session = new FakeSession([{ namespace: 'default', name: 'a' }]);
    const result = await killPods({ session, selection: parseSelection({ args: ['default/a'] }), wait: true, now: session.now });
    expect(result.pods[0]?.outcome).toBe('terminated');
    expect(session.listings).toBe(1);
  });
});
