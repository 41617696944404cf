import { EventEmitter } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { createStyler } from '../../../src/lib/output.js';
import { parseSelection } from '../../../src/lib/refs.js';
import type { PodInfo } from '../../../src/domain/session-api.js';
import { statusRow, type StatusRow } from '../../../src/services/diagnose/status.js';
import { rowChanges, watchStatus, type StatusWatchRecord } from '../../../src/services/watch/status-watch.js';
import { statusChangeLines } from '../../../src/services/watch/output.js';
import { FakeSession, pod } from '../../tui/support/fake-session.js';

// status -w must never load Ink or React: importing either fails this file.
vi.mock('ink', () => {
  throw new Error('ink was loaded by status -w');
});
vi.mock('react', () => {
  throw new Error('react was loaded by status -w');
});

const NOW = Date.parse('2026-01-01T00:10:00Z');

/** A pod with a runtime status: `running` of its containers running, its sandbox ready or not. */
const withRuntime = (p: PodInfo, containers: { name: string; state: 'running' | 'exited' }[], sandboxReady = true): PodInfo => ({
  ...p,
  runtime: {
    id: p.uid,
    name: p.name,
    namespace: p.namespace,
    containerStatuses: containers.map((c, i) => ({ id: `c${i}`, ...c })),
    sandboxStatuses: [{ id: 's0', state: sandboxReady ? 'ready' : 'notready' }],
  },
});

/** Captures written lines; `waitLines(n)` resolves once n lines were written. */
class Out extends EventEmitter {
  lines: string[] = [];
  #waiters: { n: number; resolve: () => void }[] = [];
  write(chunk: string): boolean {
    this.lines.push(...chunk.split('\n').filter((l) => l !== ''));
    this.#waiters = this.#waiters.filter((w) => (this.lines.length >= w.n ? (w.resolve(), false) : true));
    return true;
  }
  waitLines(n: number): Promise<void> {
    if (this.lines.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ n, resolve }));
  }
}

const all = parseSelection({ args: [], allNamespaces: true, allowEmpty: true });
const rowsOf = (pods: PodInfo[], now = NOW): StatusRow[] => pods.map((p) => statusRow(p, now));

describe('status -w: what is a change', () => {
  it('a state, READY, sandbox or grace-in-force change is one; a grace counting down or time passing is not', () => {
    const base = withRuntime(pod('web/a', { state: 'terminating', gracePeriod: 30, graceDeadline: NOW + 20_000, owner: { pid: 1, startedAt: 0, heartbeatAt: NOW, alive: true } }), [
      { name: 'app', state: 'running' },
    ]);
    const before = new Map(rowsOf([base]).map((r) => [r.uid, r]));
    // 5 s later: the grace left and the time in state changed, nothing else
    expect(rowChanges(before, rowsOf([base], NOW + 5_000))).toEqual([]);
    const shortened = { ...base, gracePeriod: 2 };
    expect(rowChanges(before, rowsOf([shortened])).map((c) => c.type)).toEqual(['modified']);
    const stopped = withRuntime(base, [{ name: 'app', state: 'exited' }]);
    expect(rowChanges(before, rowsOf([stopped])).map((c) => c.type)).toEqual(['modified']);
    const sandboxDown = withRuntime(base, [{ name: 'app', state: 'running' }], false);
    expect(rowChanges(before, rowsOf([sandboxDown])).map((c) => c.type)).toEqual(['modified']);
    const terminated = { ...base, state: 'terminated' as const };
    expect(rowChanges(before, rowsOf([terminated])).map((c) => c.type)).toEqual(['modified']);
    expect(rowChanges(before, rowsOf([base, pod('web/b')])).map((c) => [c.type, c.row.name])).toEqual([['added', 'b']]);
    expect(rowChanges(before, []).map((c) => [c.type, c.row.name])).toEqual([['deleted', 'a']]);
  });
});

describe('status -w: the stream', () => {
  it('-o json: one object per line per change (added, modified, deleted), rows as status -o json; ends on the signal', async () => {
    const a = pod('web/a');
    const b = pod('web/b');
    const other = pod('kube-system/c');
    const session = new FakeSession([a, b, other]);
    const out = new Out();
    const abort = new AbortController();
    const selection = parseSelection({ args: [], namespace: 'web', allowEmpty: true });
    const initial = rowsOf([a, b]);
    const done = watchStatus({ session, selection, line: statusChangeLines({ format: 'json', initial, styler: createStyler(false) }), initial, out, signal: abort.signal });
    // the first listing equals what the table showed: nothing is written for it
    await vi.waitFor(() => expect(session.listenerCount).toBe(1));
    await session.requestKill({ uid: a.uid, gracePeriodSeconds: 2 });
    await out.waitLines(1);
    session.pods.delete(b.uid);
    session.emit({ source: 'runtime', at: NOW, kind: 'relisted', uids: [b.uid] });
    session.set(pod('web/d'));
    session.emit({ source: 'runtime', at: NOW, kind: 'relisted', uids: ['uid-web-d'] });
    // a pod outside the selection changes: no line
    session.set({ ...other, state: 'terminated' });
    session.emit({ source: 'store', uid: other.uid, at: NOW, kind: 'checkpoint-changed' });
    await out.waitLines(3);
    abort.abort();
    await expect(done).resolves.toMatchObject({ endedBy: 'signal', changes: 3 });
    const records = out.lines.map((l) => JSON.parse(l) as StatusWatchRecord);
    expect(records.map((r) => [r.type, r.pod.name, r.pod.state])).toEqual([
      ['modified', 'a', 'terminating'],
      // one re-read saw both: the listing's order, then the pods gone
      ['added', 'd', 'sync'],
      ['deleted', 'b', 'sync'],
    ]);
    for (const r of records) {
      expect(r.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(Object.keys(r.pod)).toEqual(Object.keys(initial[0]!));
    }
    expect(records[0]?.pod.gracePeriodSeconds).toBe(2);
    expect(session.listenerCount).toBe(0);
  });

  it("table: a change is one row aligned under the first table's header; a pod gone says so", async () => {
    const a = withRuntime(pod('web/a'), [
      { name: 'app', state: 'running' },
      { name: 'side', state: 'running' },
    ]);
    const session = new FakeSession([a]);
    const out = new Out();
    const abort = new AbortController();
    const done = watchStatus({
      session,
      selection: all,
      line: statusChangeLines({ format: 'table', initial: rowsOf([a]), styler: createStyler(false) }),
      initial: rowsOf([a]),
      out,
      signal: abort.signal,
      now: () => NOW,
    });
    await vi.waitFor(() => expect(session.listenerCount).toBe(1));
    session.set(
      withRuntime(a, [
        { name: 'app', state: 'running' },
        { name: 'side', state: 'exited' },
      ]),
    );
    session.emit({ source: 'runtime', at: NOW, kind: 'container-event', uids: [a.uid] });
    await out.waitLines(1);
    session.pods.delete(a.uid);
    session.emit({ source: 'runtime', at: NOW, kind: 'relisted', uids: [a.uid] });
    await out.waitLines(2);
    abort.abort();
    await done;
    const [changed, gone] = out.lines;
    expect(changed?.split(/\s{2,}/).slice(0, 4)).toEqual(['web/a', 'uid-web-', 'running', '1/2']);
    // READY starts where the header puts it ('NAMESPACE/NAME  UID       STATE    READY')
    expect(changed?.indexOf('1/2')).toBe('NAMESPACE/NAME  UID       STATE    '.length);
    expect(gone?.split(/\s{2,}/).slice(0, 3)).toEqual(['web/a', 'uid-web-', 'gone']);
  });

  it('ends by itself when the bound passes, with nothing left behind', async () => {
    const session = new FakeSession([pod('web/a')]);
    const out = new Out();
    const result = await watchStatus({
      session,
      selection: all,
      line: statusChangeLines({ format: 'name', initial: [], styler: createStyler(false) }),
      initial: [],
      out,
      signal: new AbortController().signal,
      forMs: 1,
    });
    expect(result.endedBy).toBe('bound');
    // the pod was not in the first listing: it is added, by name
    expect(out.lines).toEqual(['web/a']);
    expect(session.listenerCount).toBe(0);
    expect(out.listenerCount('error')).toBe(0);
  });

  it('ends when the reader goes away (EPIPE)', async () => {
    const session = new FakeSession([pod('web/a')]);
    const out = new Out();
    const done = watchStatus({
      session,
      selection: all,
      line: statusChangeLines({ format: 'json', initial: rowsOf([pod('web/a')]), styler: createStyler(false) }),
      initial: rowsOf([pod('web/a')]),
      out,
      signal: new AbortController().signal,
    });
    await vi.waitFor(() => expect(session.listenerCount).toBe(1));
    out.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    await expect(done).resolves.toMatchObject({ endedBy: 'epipe' });
  });
});
