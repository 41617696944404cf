import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { killFromScreen, runWatch, type WatchRecord } from '../../../src/services/watch/watch.js';
import type { KubeletStatus } from '../../../src/kube/kubelet.js';
import { FakeSession as ServiceFakeSession } from '../fake-session.js';
import { FakeSession, pod } from '../../tui/support/fake-session.js';

// The JSON stream must never load Ink or React: importing either fails this file.
vi.mock('ink', () => {
  throw new Error('ink was loaded by the JSON stream');
});
vi.mock('react', () => {
  throw new Error('react was loaded by the JSON stream');
});

class Capture extends Writable {
  lines: string[] = [];
  /** Lines per write call, in order. */
  writes: number[] = [];
  #buffer = '';
  #waiters: { n: number; resolve: () => void }[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, done: (e?: Error | null) => void): void {
    this.writes.push(chunk.toString().split('\n').length - 1);
    this.#buffer += chunk.toString();
    const parts = this.#buffer.split('\n');
    this.#buffer = parts.pop() ?? '';
    this.lines.push(...parts);
    this.#waiters = this.#waiters.filter((w) => (this.lines.length >= w.n ? (w.resolve(), false) : true));
    done();
  }
  records(): WatchRecord[] {
    return this.lines.map((l) => JSON.parse(l) as WatchRecord);
  }
  /** Resolves once `n` lines were written. */
  waitLines(n: number): Promise<void> {
    if (this.lines.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ n, resolve }));
  }
}

describe('watch JSON stream', () => {
  it('streams one JSON object per line: pods at start, then transitions and events, until aborted', async () => {
    const a = pod('default/a', { since: 10 });
    const b = pod('default/b', { since: 10 });
    const session = new FakeSession([a, b]);
    const out = new Capture();
    const abort = new AbortController();
    const done = runWatch(session, { format: 'json', signal: abort.signal, stdout: out as unknown as NodeJS.WriteStream, color: false, coalesceMs: 1 });
    await out.waitLines(2);
    await session.requestKill({ uid: a.uid, gracePeriodSeconds: 2 });
    // Another process finishes b: seen through the store.
    session.set({ ...b, state: 'terminated', since: 99 });
    session.emit({ source: 'store', uid: b.uid, at: 99, kind: 'checkpoint-changed' });
    await out.waitLines(5);
    abort.abort();
    const result = await done;
    expect(result).toMatchObject({ format: 'json', endedBy: 'signal', pods: 2 });
    const records = out.records();
    expect(records.slice(0, 2).map((r) => [r.type, 'name' in r ? r.name : '', 'state' in r ? r.state : ''])).toEqual([
      ['pod', 'a', 'sync'],
      ['pod', 'b', 'sync'],
    ]);
    const rest = records.slice(2);
    expect(rest.filter((r) => r.type === 'transition')).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'transition', name: 'a', from: 'sync', to: 'terminating', source: 'engine', gracePeriodSeconds: 2 }),
        expect.objectContaining({ type: 'transition', name: 'b', from: 'sync', to: 'terminated', source: 'store' }),
      ]),
    );
    expect(rest.find((r) => r.type === 'event')).toMatchObject({ type: 'event', kind: 'termination-requested', pod: 'default/a' });
    // state-changed would repeat the transition record: it is not streamed as an event.
    expect(rest.some((r) => r.type === 'event' && r.kind === 'state-changed')).toBe(false);
    // the one JSON vocabulary: ISO 8601 times, every key of a record type present (null when unknown)
    for (const r of records) expect(r.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const keysOf = (type: string) => records.filter((r) => r.type === type).map((r) => Object.keys(r).sort().join(','));
    expect(new Set(keysOf('transition')).size).toBe(1);
    expect(keysOf('transition')[0]).toBe('at,from,fromSince,gracePeriodSeconds,name,namespace,ownerPid,source,to,type,uid');
    expect(keysOf('event')[0]).toBe('at,detail,kind,level,pod,source,type,uid');
    expect(session.listenerCount).toBe(0);
  });

  it('writes the records of one change in one write (a burst of transitions), and the first snapshot a record a write', async () => {
    const pods = Array.from({ length: 40 }, (_, i) => pod(`default/p${i}`, { since: 10 }));
    const session = new FakeSession(pods);
    const out = new Capture();
    const abort = new AbortController();
    const done = runWatch(session, { format: 'json', signal: abort.signal, stdout: out as unknown as NodeJS.WriteStream, color: false, coalesceMs: 50, probeRuntime: false });
    await out.waitLines(40);
    expect(out.writes).toEqual(Array.from({ length: 40 }, () => 1));
    // 40 pods finished by another process at once: one re-read, one change, one write
    for (const p of pods) {
      session.set({ ...p, state: 'terminated', since: 99 });
      session.emit({ source: 'store', uid: p.uid, at: 99, kind: 'checkpoint-changed' });
    }
    await out.waitLines(80);
    abort.abort();
    await done;
    expect(out.records().filter((r) => r.type === 'transition')).toHaveLength(40);
    expect(out.writes.slice(40).length).toBeLessThanOrEqual(2);
    expect(out.writes.reduce((a, b) => a + b, 0)).toBe(out.lines.length);
  });

  it('ends cleanly when the reader goes away (EPIPE)', async () => {
    const session = new FakeSession([pod('default/a')]);
    const out = new Capture();
    const done = runWatch(session, { format: 'json', signal: new AbortController().signal, stdout: out as unknown as NodeJS.WriteStream, color: false });
    await out.waitLines(1);
    out.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    await expect(done).resolves.toMatchObject({ endedBy: 'epipe' });
    // A late EPIPE after the end does not crash the process.
    out.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
  });

  it('writes the metrics file when the watch ends', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'podctl-watch-'));
    const file = join(dir, 'podctl.prom');
    const a = pod('default/a');
    const session = new FakeSession([a, pod('default/b', { state: 'runtime' })]);
    const out = new Capture();
    const abort = new AbortController();
    const done = runWatch(session, { format: 'json', signal: abort.signal, stdout: out as unknown as NodeJS.WriteStream, color: false, coalesceMs: 1, metricsFile: file });
    await out.waitLines(2);
    await session.requestKill({ uid: a.uid, gracePeriodSeconds: 2 });
    await out.waitLines(4);
    abort.abort();
    await done;
    const text = await readFile(file, 'utf8');
    expect(text).toContain('podctl_working_pods{lifecycle="terminating",config="desired",static="false"} 1');
    expect(text).toContain('podctl_untracked_runtime_pods 1');
    expect(text).toContain('podctl_pod_transitions_total{from="sync",to="terminating"} 1');
    // the killed pod is on its way out: counted by what holds it; every reason has a series
    // (the fake session records no owner for it, so nobody drives it: undriven)
    expect(text).toContain('podctl_stuck_pods{reason="undriven"} 1');
    expect(text).toContain('podctl_stuck_pods{reason="grace"} 0');
    expect(text).toContain('podctl_stuck_pods{reason="cni-teardown"} 0');
    await rm(dir, { recursive: true, force: true });
  });
});

describe("the screen's React build", () => {
  it('is the production one unless the environment names another mode', async () => {
    const { useProductionReact } = await import('../../../src/services/watch/watch.js');
    const unset: NodeJS.ProcessEnv = {};
    useProductionReact(unset);
    expect(unset.NODE_ENV).toBe('production');
    const empty: NodeJS.ProcessEnv = { NODE_ENV: '' };
    useProductionReact(empty);
    expect(empty.NODE_ENV).toBe('production');
    const testing: NodeJS.ProcessEnv = { NODE_ENV: 'test' };
    useProductionReact(testing);
    expect(testing.NODE_ENV).toBe('test');
  });
});

describe('a kill from the screen beside a running kubelet', () => {
  const running: KubeletStatus = { state: 'running', via: 'healthz', detail: 'healthz 127.0.0.1:10248 answered ok' };
  const node = (): ServiceFakeSession =>
    new ServiceFakeSession([
      { namespace: 'kube-system', name: 'etcd', static: true, annotations: { 'kubernetes.io/config.source': 'file' } },
      { namespace: 'web', name: 'api', annotations: { 'kubernetes.io/config.source': 'api' } },
      { namespace: 'default', name: 'adhoc' },
    ]);

  it('obeys the kubelet rule as `podctl kill` does: a pod the kubelet desires or may desire is refused, naming --force; nothing is requested', async () => {
    const session = node();
    await expect(killFromScreen(session, running, { uid: session.uidOf('kube-system', 'etcd') })).rejects.toThrow(
      /kubelet is running .*desires kube-system\/etcd.*`podctl kill --force` stops it anyway/,
    );
    await expect(killFromScreen(session, running, { uid: session.uidOf('web', 'api'), evict: true })).rejects.toThrow(/may desire web\/api/);
    expect(session.kills).toEqual([]);
  });

  it('a pod the kubelet did not make, or any pod with the kubelet down (or not known), is killed as asked', async () => {
    const session = node();
    await killFromScreen(session, running, { uid: session.uidOf('default', 'adhoc') });
    await killFromScreen(session, { ...running, state: 'down' }, { uid: session.uidOf('kube-system', 'etcd') });
    await killFromScreen(session, undefined, { uid: session.uidOf('web', 'api') });
    expect(session.kills.map((k) => k.uid)).toEqual([session.uidOf('default', 'adhoc'), session.uidOf('kube-system', 'etcd'), session.uidOf('web', 'api')]);
  });
  it('hands the pod as the API server holds it (the watch follows it there) with the kill', async () => {
    const session = node();
    const uid = session.uidOf('default', 'adhoc');
    const apiPod = { metadata: { uid, name: 'adhoc', namespace: 'default' }, spec: { containers: [{ name: 'main' }], initContainers: [{ name: 'proxy', restartPolicy: 'Always' }] } };
    await killFromScreen(session, { ...running, state: 'down' }, { uid }, (u) => (u === uid ? apiPod : undefined));
    expect(session.kills).toEqual([expect.objectContaining({ uid, pod: apiPod })]);
  });
});
