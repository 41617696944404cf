import { describe, expect, it } from 'vitest';
import { RuntimePodCache, type RuntimeCacheEvent } from '../../../src/cri/cache/cache.js';
import { CriError, GrpcStatus, isUnavailable } from '../../../src/cri/client/errors.js';
import { useSimulator } from '../support.js';
import { until } from '../../support/wait.js';

/** The bound of a wait here (for a loaded machine, not a speed goal) and its pace. */
const WAIT = { timeoutMs: 5_000, everyMs: 10 };

describe('RuntimePodCache', () => {
  const simulator = useSimulator();

  it('getNewerThan triggers a relist and resolves with the pod status', async () => {
    const { client } = await simulator({ pods: [{ name: 'a', uid: 'ua', containers: [{ name: 'c' }] }] });
    const cache = new RuntimePodCache({ client });
    expect(cache.get('ua')).toBeUndefined();
    const status = await cache.getNewerThan('ua', Date.now());
    expect(status).toMatchObject({ id: 'ua', name: 'a', namespace: 'default' });
    expect(status.containerStatuses.map((c) => [c.name, c.state])).toEqual([['c', 'running']]);
    expect(status.sandboxStatuses.map((s) => s.state)).toEqual(['ready']);
    expect(cache.get('ua')).toEqual(status);
    cache.close();
  });

  it('returns an empty status for a pod the runtime does not know', async () => {
    const { client } = await simulator();
    const cache = new RuntimePodCache({ client });
    expect(await cache.getNewerThan('ghost', Date.now())).toEqual({ id: 'ghost', name: '', namespace: '', containerStatuses: [], sandboxStatuses: [] });
    cache.close();
  });

  it('does not serve a status older than asked for: a change is seen right after it happens', async () => {
    const { sim, client } = await simulator({ pods: [{ name: 'a', uid: 'ua', containers: [{ name: 'c', onSigterm: 'ignore' }] }] });
    const cache = new RuntimePodCache({ client });
    await cache.getNewerThan('ua', Date.now());
    const [cid] = sim.state.containerIds();
    await client.stopContainer(cid!, 0);
    const after = Date.now();
    // the cached status still says running; a newer one must come from a new relist
    expect(cache.get('ua')?.containerStatuses[0]?.state).toBe('running');
    const status = await cache.getNewerThan('ua', after);
    expect(status.containerStatuses[0]).toMatchObject({ state: 'exited', exitCode: 137 });
    expect(status.containerStatuses[0]?.finishedAt).toBeGreaterThanOrEqual(after - 1000);
    expect(cache.observedAt).toBeGreaterThanOrEqual(after);
    cache.close();
  });

  it('serves an already fresh status without a relist, and one relist for many waiters', async () => {
    const { client } = await simulator({ pods: 3 });
    const cache = new RuntimePodCache({ client });
    const t = Date.now();
    await cache.refresh();
    expect(cache.relistCount).toBe(1);
    const uids = cache.pods().map((p) => p.uid);
    await Promise.all(uids.map((uid) => cache.getNewerThan(uid, t)));
    expect(cache.relistCount).toBe(1);

    const now = Date.now();
    await Promise.all([...uids, ...uids].map((uid) => cache.getNewerThan(uid, now)));
    // one relist (or one running plus one queued) serves every waiter
    expect(cache.relistCount).toBeLessThanOrEqual(3);
    expect(cache.relistCount).toBeGreaterThan(1);
    cache.close();
  });

  it('fetches exit codes once per exited container', async () => {
    const { sim, client } = await simulator({ pods: [{ name: 'a', uid: 'ua', containers: [{ name: 'c', state: 'exited', exitCode: 3 }] }] });
    const cache = new RuntimePodCache({ client });
    await cache.refresh();
    await cache.refresh();
    expect(cache.get('ua')?.containerStatuses[0]?.exitCode).toBe(3);
    const statusCalls = sim.state.journal().filter((r) => r.kind === 'rpc' && r.method === 'ContainerStatus');
    expect(statusCalls).toHaveLength(1);
    cache.close();
  });

  it('a failed ContainerStatus leaves that container unknown instead of failing the relist, and is asked again', async () => {
    const { sim, client } = await simulator({
      pods: [
        { name: 'a', uid: 'ua', containers: [{ name: 'c', state: 'exited', exitCode: 3 }] },
        { name: 'b', uid: 'ub', containers: [{ name: 'c' }] },
      ],
      faults: [{ method: 'ContainerStatus', code: GrpcStatus.UNKNOWN, details: 'shim busy', count: 1 }],
    });
    const cache = new RuntimePodCache({ client });
    await cache.refresh();
    // the node is listed: both pods, b running; a's exit code not known yet
    expect(cache.get('ub')?.containerStatuses[0]?.state).toBe('running');
    expect(cache.get('ua')?.containerStatuses[0]?.state).toBe('exited');
    expect(cache.get('ua')?.containerStatuses[0]?.exitCode).toBeUndefined();
    expect(cache.detailsUnknownCount).toBe(1);
    await cache.refresh();
    expect(cache.get('ua')?.containerStatuses[0]?.exitCode).toBe(3);
    expect(sim.state.journal().filter((r) => r.kind === 'rpc' && r.method === 'ContainerStatus')).toHaveLength(2);
    cache.close();
  });

  it('a waiter that aborts rejects with its reason; others are unaffected', async () => {
    const { client } = await simulator({ pods: 1, faults: [{ method: 'ListPodSandbox', delayMs: 300, count: 1 }] });
    const cache = new RuntimePodCache({ client });
    const ac = new AbortController();
    const reason = new Error('worker stopped');
    const aborted = cache.getNewerThan('x', Date.now(), ac.signal);
    const patient = cache.getNewerThan('x', Date.now());
    ac.abort(reason);
    await expect(aborted).rejects.toBe(reason);
    await expect(patient).resolves.toMatchObject({ id: 'x' });
    cache.close();
  });

  it('surfaces a failed relist as CriError and keeps the last good state', async () => {
    const { sim, client } = await simulator({ pods: [{ name: 'a', uid: 'ua' }] });
    const cache = new RuntimePodCache({ client });
    await cache.refresh();
    const errors: RuntimeCacheEvent[] = [];
    cache.subscribe((e) => e.kind === 'error' && errors.push(e));
    sim.setFaults([{ method: 'ListContainers', code: GrpcStatus.UNAVAILABLE, details: 'down' }]);
    const err = await cache.getNewerThan('ua', Date.now() + 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CriError);
    expect(isUnavailable(err)).toBe(true);
    expect(errors).toHaveLength(1);
    expect(cache.get('ua')?.containerStatuses[0]?.state).toBe('running');
    sim.setFaults([]);
    await expect(cache.getNewerThan('ua', Date.now())).resolves.toMatchObject({ id: 'ua' });
    cache.close();
  });

  it('bounds a wait for a time the relists never reach', async () => {
    const { client } = await simulator();
    const cache = new RuntimePodCache({ client, clock: { now: () => 1_000 }, maxWaitMs: 200 });
    await expect(cache.getNewerThan('x', 5_000)).rejects.toThrow(/no runtime status newer than/);
    cache.close();
  });

  it('relists on runtime events without being asked', async () => {
    const { sim, client } = await simulator({ pods: [{ name: 'a', uid: 'ua' }] });
    const cache = new RuntimePodCache({ client });
    const events: RuntimeCacheEvent[] = [];
    cache.subscribe((e) => events.push(e));
    cache.start();
    await until('the GetContainerEvents stream opened', () => sim.state.journal().some((r) => r.kind === 'rpc' && r.method === 'GetContainerEvents'), WAIT);
    const [cid] = sim.state.containerIds();
    // a change made by someone else (not through the cache or the syncer)
    sim.state.markExited(cid!, 0);
    await until("ua's container exited in the cache", () => cache.get('ua')?.containerStatuses[0]?.state === 'exited', WAIT);
    expect(cache.eventsSupported).toBe(true);
    expect(events.some((e) => e.kind === 'container-event' && e.uids.includes('ua'))).toBe(true);
    expect(events.some((e) => e.kind === 'relisted' && e.uids.includes('ua'))).toBe(true);
    cache.close();
  });

  it('with an event relist interval, a burst of events reaches listeners at once and starts one relist after the interval, which reports every change', async () => {
    const pods = ['a', 'b', 'c', 'd'].map((name) => ({ name, uid: `u${name}` }));
    const { sim, client } = await simulator({ pods });
    const intervalMs = 400;
    const cache = new RuntimePodCache({ client, eventRelistIntervalMs: (n) => (n > 0 ? intervalMs : 0) });
    const events: (RuntimeCacheEvent & { seenAt: number })[] = [];
    cache.subscribe((e) => events.push({ ...e, seenAt: Date.now() }));
    cache.start();
    await until('the GetContainerEvents stream opened', () => sim.state.journal().some((r) => r.kind === 'rpc' && r.method === 'GetContainerEvents'), WAIT);
    await cache.refresh();
    const listings = () => sim.state.journal().filter((r) => r.kind === 'rpc' && r.method === 'ListContainers').length;
    const before = listings();
    events.length = 0;
    const burstAt = Date.now();
    for (const cid of sim.state.containerIds()) sim.state.markExited(cid, 0);
    // every event is delivered as it comes, naming its pod
    await until('a container event for every pod', () => events.filter((e) => e.kind === 'container-event').length >= pods.length, WAIT);
    expect(new Set(events.filter((e) => e.kind === 'container-event').flatMap((e) => e.uids))).toEqual(new Set(pods.map((p) => p.uid)));
    // the relist they asked for comes once, after the interval, and reports all four pods changed
    await until('a relist that names pods', () => events.some((e) => e.kind === 'relisted' && e.uids.length > 0), WAIT);
    const relisted = events.filter((e): e is Extract<RuntimeCacheEvent, { kind: 'relisted' }> & { seenAt: number } => e.kind === 'relisted' && e.uids.length > 0);
    expect(relisted).toHaveLength(1);
    expect(new Set(relisted[0]!.uids)).toEqual(new Set(pods.map((p) => p.uid)));
    expect(relisted[0]!.seenAt - burstAt).toBeGreaterThanOrEqual(intervalMs - 50);
    expect(listings() - before).toBe(1);
    for (const p of pods) expect(cache.get(p.uid)?.containerStatuses[0]?.state).toBe('exited');
    cache.close();
  });

  it('falls back to polling when the runtime has no event stream', async () => {
    const { sim, client } = await simulator({ pods: [{ name: 'a', uid: 'ua' }], events: false });
    const cache = new RuntimePodCache({ client, pollIntervalMs: 50 });
    const events: RuntimeCacheEvent[] = [];
    cache.subscribe((e) => events.push(e));
    cache.start();
    await until('the cache falls back to relists', () => cache.eventsSupported === false, WAIT);
    expect(events.some((e) => e.kind === 'events-unsupported')).toBe(true);
    const [cid] = sim.state.containerIds();
    sim.state.markExited(cid!, 0);
    await until("ua's container exited in the cache", () => cache.get('ua')?.containerStatuses[0]?.state === 'exited', WAIT);
    cache.close();
  });

  it('without exit details a relist is one ListPodSandbox and one ListContainers, whatever has exited', async () => {
    const { sim, client } = await simulator({ pods: [{ name: 'a', uid: 'ua', containers: [{ name: 'c', state: 'exited', exitCode: 3 }, { name: 'd' }] }] });
    const cache = new RuntimePodCache({ client, exitDetails: false });
    const [pod] = await cache.listPods();
    expect(pod?.containers.map((c) => c.name).sort()).toEqual(['c', 'd']);
    const status = cache.get('ua');
    expect(status?.containerStatuses.find((c) => c.name === 'c')).toMatchObject({ state: 'exited' });
    expect(status?.containerStatuses.find((c) => c.name === 'c')?.exitCode).toBeUndefined();
    const methods = sim.state.journal().flatMap((r) => (r.kind === 'rpc' ? [r.method] : []));
    expect(methods.filter((m) => m !== 'Version').sort()).toEqual(['ListContainers', 'ListPodSandbox']);
    cache.close();
  });

  it('exit details only for the pods exitDetailsFor names; a pod named later is asked about then', async () => {
    const { sim, client } = await simulator({
      pods: [
        { name: 'a', uid: 'ua', containers: [{ name: 'c', state: 'exited', exitCode: 3 }] },
        { name: 'b', uid: 'ub', containers: [{ name: 'c', state: 'exited', exitCode: 4 }] },
      ],
    });
    const driven = new Set(['ua']);
    const cache = new RuntimePodCache({ client, exitDetailsFor: (uid) => driven.has(uid) });
    const statusCalls = (): number => sim.state.journal().filter((r) => r.kind === 'rpc' && r.method === 'ContainerStatus').length;
    await cache.refresh();
    expect(cache.get('ua')?.containerStatuses[0]?.exitCode).toBe(3);
    expect(cache.get('ub')?.containerStatuses[0]).toMatchObject({ state: 'exited' });
    expect(cache.get('ub')?.containerStatuses[0]?.exitCode).toBeUndefined();
    expect(statusCalls()).toBe(1);
    driven.add('ub');
    await cache.refresh();
    expect(cache.get('ub')?.containerStatuses[0]?.exitCode).toBe(4);
    expect(statusCalls()).toBe(2);
    cache.close();
  });

  it('lists rebuilt pods for the session', async () => {
    const { client } = await simulator({ pods: 10 });
    const cache = new RuntimePodCache({ client });
    const pods = await cache.listPods();
    expect(pods).toHaveLength(10);
    expect(
      pods
        .filter((p) => p.static)
        .map((p) => p.name)
        .sort(),
    ).toEqual(['etcd-node-1', 'kube-apiserver-node-1']);
    cache.close();
  });

  it('rejects waits after close', async () => {
    const { client } = await simulator();
    const cache = new RuntimePodCache({ client });
    cache.close();
    await expect(cache.getNewerThan('x', Date.now())).rejects.toThrow(/closed/);
  });

  it('deferred relists: many asks share one relist, started at once by relistDeferredNow, else after deferredRelistMs; never one that started before them', async () => {
    const { sim, client } = await simulator({ pods: [{ name: 'a', uid: 'ua', containers: [{ name: 'c', onSigterm: 'ignore' }] }], events: false });
    let deferring = true;
    const cache = new RuntimePodCache({ client, deferRelists: () => deferring, deferredRelistMs: 60_000 });
    await cache.refresh();
    const [cid] = sim.state.containerIds();
    sim.state.markExited(cid!, 0);
    const after = Date.now() + 1;
    const soon = [cache.relistSoon(), cache.relistSoon()];
    const newer = cache.getNewerThan('ua', after);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(cache.relistCount).toBe(1);
    cache.relistDeferredNow();
    await Promise.all(soon);
    const status = await newer;
    expect(cache.relistCount).toBe(2);
    expect(status.containerStatuses[0]?.state).toBe('exited');

    // with a short bound, a deferred relist comes by itself; without deferral, getNewerThan relists at once
    const short = new RuntimePodCache({ client, deferRelists: () => deferring, deferredRelistMs: 50 });
    await short.relistSoon();
    expect(short.relistCount).toBe(1);
    deferring = false;
    await new Promise((resolve) => setTimeout(resolve, 5));
    await short.getNewerThan('ua', Date.now());
    expect(short.relistCount).toBe(2);
    const pending = short.relistSoon();
    short.close();
    await expect(pending).rejects.toThrow(/closed/);
    cache.close();
  });

  it('the poll counts from the last relist: one asked for meanwhile puts the next poll off', async () => {
    const { client } = await simulator({ pods: [{ name: 'a', uid: 'ua' }], events: false });
    const cache = new RuntimePodCache({ client, pollIntervalMs: 400 });
    cache.start();
    await until('the cache falls back to relists', () => cache.eventsSupported === false, WAIT);
    const relists: number[] = [];
    cache.subscribe((e) => {
      if (e.kind === 'relisted') relists.push(e.at);
    });
    // a relist asked for every 150 ms for 1.5 s: the poll (every 400 ms) finds one within its period each time
    const t0 = Date.now();
    while (Date.now() - t0 < 1_500) {
      await cache.refresh();
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    cache.close();
    const gaps = relists.slice(1).map((t, i) => t - relists[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(100);
  });
});

describe('RuntimePodCache patching from events (a follower: watch)', () => {
  const simulator = useSimulator();
  const rpcs = (sim: { state: { journal(): readonly { kind: string; method?: string }[] } }, method: string) => sim.state.journal().filter((r) => r.kind === 'rpc' && r.method === method).length;

  async function following(options: Parameters<typeof simulator>[0]) {
    const { sim, client } = await simulator(options);
    const cache = new RuntimePodCache({ client, patchFromEvents: true });
    const events: RuntimeCacheEvent[] = [];
    cache.subscribe((e) => events.push(e));
    cache.start();
    await until('the GetContainerEvents stream opened', () => sim.state.journal().some((r) => r.kind === 'rpc' && r.method === 'GetContainerEvents'), WAIT);
    await cache.refresh();
    return { sim, cache, events };
  }

  it('applies an event about a container it holds to the pod at once: state and exit code, with no relist and no ContainerStatus call', async () => {
    const { sim, cache, events } = await following({
      pods: [
        { name: 'a', uid: 'ua', containers: [{ name: 'c' }] },
        { name: 'b', uid: 'ub' },
      ],
    });
    const relists = cache.relistCount;
    const listings = rpcs(sim, 'ListContainers');
    const [cid] = sim.state.containerIds(sim.state.sandboxIds()[0]);
    const uid = cache.pods().find((p) => p.containers.some((c) => c.id === cid))!.uid;
    sim.state.markExited(cid!, 3);
    await until("the pod's container exited in the cache", () => cache.get(uid)?.containerStatuses[0]?.state === 'exited', WAIT);
    expect(cache.get(uid)?.containerStatuses[0]?.exitCode).toBe(3);
    expect(events.some((e) => e.kind === 'container-event' && e.uids.includes(uid))).toBe(true);
    // a listing that accepts an age is served by what the events kept current; one that asks for a fresh one relists
    await new Promise((r) => setTimeout(r, 1_100)); // the stream has been open a second (and delivered)
    expect((await cache.listPods(undefined, 500)).find((p) => p.uid === uid)?.containers[0]?.exitCode).toBe(3);
    expect(cache.relistCount).toBe(relists);
    expect(rpcs(sim, 'ListContainers')).toBe(listings);
    expect(rpcs(sim, 'ContainerStatus')).toBe(0);
    await cache.listPods(undefined, 0);
    expect(cache.relistCount).toBe(relists + 1);
    expect(cache.get(uid)?.containerStatuses[0]).toMatchObject({ state: 'exited', exitCode: 3 });
    expect(rpcs(sim, 'ContainerStatus')).toBe(0);
    cache.close();
  });

  it('a stopped and removed sandbox: not ready, then the pod gone, without a relist', async () => {
    const { sim, cache } = await following({ pods: [{ name: 'a', uid: 'ua', containers: [{ name: 'c' }] }] });
    const relists = cache.relistCount;
    const [sid] = sim.state.sandboxIds();
    sim.state.stopPodSandbox(sid!);
    await until("ua's sandbox not ready in the cache", () => cache.get('ua')?.sandboxStatuses[0]?.state === 'notready', WAIT);
    expect(cache.get('ua')?.containerStatuses[0]?.state).toBe('exited');
    sim.state.removePodSandbox(sid!);
    await until('ua gone from the cache', () => cache.get('ua') === undefined, WAIT);
    expect(cache.pods().map((p) => p.uid)).toEqual([]);
    expect(cache.relistCount).toBe(relists);
    cache.close();
  });

  it('an event about a container it does not hold (a new pod) relists', async () => {
    const { sim, cache } = await following({ pods: [] });
    const relists = cache.relistCount;
    const sid = sim.state.runPodSandbox({ metadata: { name: 'n', uid: 'un', namespace: 'default', attempt: 0 } });
    sim.state.startContainer(sim.state.createContainer(sid, { metadata: { name: 'c', attempt: 0 }, image: { image: 'pause' } }));
    await until("un's container running in the cache", () => cache.get('un')?.containerStatuses[0]?.state === 'running', WAIT);
    expect(cache.relistCount).toBeGreaterThan(relists);
    cache.close();
  });

  it('applies the events that came during a relist again over its result, so a listing taken before them does not undo them', async () => {
    const { sim, cache } = await following({ pods: [{ name: 'a', uid: 'ua', containers: [{ name: 'c' }] }] });
    const [cid] = sim.state.containerIds();
    // the next listing is taken now and answered 400 ms late
    sim.faults.add({ method: 'ListContainers', delayMs: 400, proceed: true, count: 1 });
    const relist = cache.refresh();
    await until('a ListContainers fault', () => sim.state.journal().some((r) => r.kind === 'fault' && r.method === 'ListContainers'), WAIT);
    sim.state.markExited(cid!, 7);
    await until("ua's container exited in the cache", () => cache.get('ua')?.containerStatuses[0]?.state === 'exited', WAIT);
    await relist;
    expect(cache.get('ua')?.containerStatuses[0]).toMatchObject({ state: 'exited', exitCode: 7 });
    expect(cache.pods()[0]?.containers[0]?.state).toBe('exited');
    cache.close();
  });

  it('without patching, the same event relists (drivers decide by listings)', async () => {
    const { sim, client } = await simulator({ pods: [{ name: 'a', uid: 'ua', containers: [{ name: 'c' }] }] });
    const cache = new RuntimePodCache({ client });
    cache.start();
    await until('the GetContainerEvents stream opened', () => sim.state.journal().some((r) => r.kind === 'rpc' && r.method === 'GetContainerEvents'), WAIT);
    await cache.refresh();
    const relists = cache.relistCount;
    sim.state.markExited(sim.state.containerIds()[0]!, 3);
    await until("ua's container exited in the cache", () => cache.get('ua')?.containerStatuses[0]?.state === 'exited', WAIT);
    expect(cache.relistCount).toBeGreaterThan(relists);
    cache.close();
  });
});

describe('RuntimePodCache check relist after patches', () => {
  const simulator = useSimulator();

  it('relists once the last relist is the evented age old when events were applied since, and not while none come', async () => {
    const { sim, client } = await simulator({ pods: [{ name: 'a', uid: 'ua', containers: [{ name: 'c' }] }] });
    const cache = new RuntimePodCache({ client, patchFromEvents: true, eventedMaxAgeMs: 400 });
    cache.start();
    await until('the GetContainerEvents stream opened', () => sim.state.journal().some((r) => r.kind === 'rpc' && r.method === 'GetContainerEvents'), WAIT);
    await cache.refresh();
    const relists = cache.relistCount;
    const relistedAt = Date.now();
    sim.state.markExited(sim.state.containerIds()[0]!, 0);
    await until("ua's container exited in the cache", () => cache.get('ua')?.containerStatuses[0]?.state === 'exited', WAIT);
    expect(cache.relistCount).toBe(relists);
    // the check: one relist, the evented age after the last one
    await until('one more relist', () => cache.relistCount === relists + 1, { ...WAIT, timeoutMs: 2_000 });
    expect(Date.now() - relistedAt).toBeGreaterThanOrEqual(350);
    // no event since: no timer, no relist of its own
    await new Promise((r) => setTimeout(r, 900));
    expect(cache.relistCount).toBe(relists + 1);
    cache.close();
  });
});
