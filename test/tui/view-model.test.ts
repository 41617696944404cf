import { describe, expect, it } from 'vitest';
import { filterPods, formatDuration, graceBar, parseGrace, rowCells, screenLayout, sortPods, tableLayout, fitName, tableWindow, truncate } from '../../src/tui/view-model.js';
import { pod } from './support/fake-session.js';
import type { PodInfo } from '../../src/domain/session-api.js';
import { screenRules } from '../../src/services/watch/screen-rules.js';
import { blockedBy } from '../../src/services/diagnose/blocked-by.js';
import { NO_NODE_FACTS, stuckFactsOf, type NodeFacts } from '../../src/services/diagnose/status.js';

describe('view model', () => {
  it('formats durations compactly', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(59_999)).toBe('59s');
    expect(formatDuration(192_000)).toBe('3m12s');
    expect(formatDuration(2 * 3600_000 + 5 * 60_000)).toBe('2h05m');
    expect(formatDuration(3 * 86400_000 + 4 * 3600_000)).toBe('3d4h');
    expect(formatDuration(-5)).toBe('0s');
    expect(formatDuration(192_000, true)).toBe('3m');
    expect(formatDuration(2 * 3600_000 + 5 * 60_000 + 7_000, true)).toBe('2h05m');
  });

  it('truncates with an ellipsis only when needed', () => {
    expect(truncate('abcdef', 6)).toBe('abcdef');
    expect(truncate('abcdef', 4)).toBe('abc…');
    expect(truncate('abcdef', 0)).toBe('');
  });

  it('draws a countdown bar that shrinks with the grace left and is empty once it ran out', () => {
    expect(graceBar(30_000, 30, 10)).toBe('██████████');
    expect(graceBar(15_000, 30, 10)).toBe('█████░░░░░');
    expect(graceBar(100, 30, 10)).toBe('█░░░░░░░░░');
    expect(graceBar(0, 30, 10)).toBe('░░░░░░░░░░');
    // More time left than the grace (clock skew) never overflows the bar.
    expect(graceBar(90_000, 30, 10)).toHaveLength(10);
  });

  it('drops columns from the right as the terminal narrows, never exceeding its width', () => {
    const wide = tableLayout(160);
    expect(wide.columns).toEqual(['name', 'state', 'grace', 'ctrs', 'age', 'owner', 'error']);
    const medium = tableLayout(80);
    expect(medium.columns).not.toContain('error');
    expect(medium.columns.slice(0, 3)).toEqual(['name', 'state', 'grace']);
    // A name stays readable: the bar and the owner go, then columns, before the name drops under 22 characters.
    const sixty = tableLayout(60);
    expect(sixty.columns).toEqual(['name', 'state', 'grace', 'ctrs', 'age']);
    expect(sixty.barWidth).toBe(0);
    expect(sixty.widths.name).toBeGreaterThanOrEqual(22);
    const narrow = tableLayout(30);
    expect(narrow.columns).toEqual(['name', 'state']);
    for (const width of [20, 30, 45, 60, 80, 100, 120, 200]) {
      const layout = tableLayout(width);
      const p = pod('kube-system/a-very-long-pod-name-that-will-not-fit-anywhere', {
        state: 'terminating',
        gracePeriod: 30,
        graceDeadline: 20_000,
        lastError: { message: 'StopContainer: DeadlineExceeded '.repeat(5), at: 1 },
        owner: { pid: 4242, startedAt: 0, heartbeatAt: 0, alive: true },
      });
      const cells = rowCells(p, layout, 10_000, screenRules);
      const line = `  ${layout.columns.map((c) => cells[c]).join(' ')}`;
      expect(line.length, `width ${width}`).toBeLessThanOrEqual(width);
    }
  });

  it('fills a terminating row with the bar and the seconds left', () => {
    const p = pod('default/web', {
      state: 'terminating',
      gracePeriod: 10,
      graceDeadline: 15_000,
      containersRunning: 1,
      containersTotal: 2,
      owner: { pid: 7, startedAt: 0, heartbeatAt: 0, alive: true },
    });
    const cells = rowCells(p, tableLayout(120), 10_000, screenRules);
    expect(cells.grace.trim()).toBe('█████░░░░░ 5s');
    expect(cells.ctrs.trim()).toBe('1/2');
    expect(cells.age.trim()).toBe('9s');
  });

  it('filters on namespace/name and state, case-insensitively', () => {
    const pods = [pod('default/web'), pod('kube-system/dns', { state: 'terminating' }), pod('default/Worker')];
    expect(filterPods(pods, 'WEB').map((p) => p.name)).toEqual(['web']);
    expect(filterPods(pods, 'kube-').map((p) => p.name)).toEqual(['dns']);
    expect(filterPods(pods, 'terminating').map((p) => p.name)).toEqual(['dns']);
    expect(filterPods(pods, '')).toHaveLength(3);
  });

  it('sorts by state (terminating first), age, grace left and name', () => {
    const a = pod('default/a', { since: 500 });
    const b = pod('default/b', { state: 'terminating', gracePeriod: 30, graceDeadline: 40_000, since: 900 });
    const c = pod('default/c', { state: 'terminating', gracePeriod: 30, graceDeadline: 20_000, since: 100 });
    const d = pod('default/d', { state: 'finished', since: 50 });
    expect(sortPods([a, b, c, d], 'state', 10_000).map((p) => p.name)).toEqual(['b', 'c', 'a', 'd']);
    expect(sortPods([a, b, c, d], 'age', 10_000).map((p) => p.name)).toEqual(['d', 'c', 'a', 'b']);
    expect(sortPods([a, b, c, d], 'grace', 10_000).map((p) => p.name)).toEqual(['c', 'b', 'a', 'd']);
    expect(sortPods([d, c, b, a], 'name', 10_000).map((p) => p.name)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('sorts by name in the collator order as pods come and go; pods of one name (as the collator sees it) by uid', () => {
    const collator = new Intl.Collator();
    const byCollator = (refs: string[]) => [...refs].sort((x, y) => collator.compare(x, y));
    const refOf = (p: PodInfo) => `${p.namespace}/${p.name}`;
    // uids in the opposite order of the names, so that an order by uid is not taken for one by name
    const make = (refs: string[], from: number) => refs.map((r, i) => pod(r, { uid: `u-${String(999 - from - i).padStart(3, '0')}` }));
    const names = ['kube-system/etcd', 'default/web-10', 'default/Web-2', 'default/web-2', 'batch/a'];
    const pods = make(names, 0);
    expect(sortPods(pods, 'name', 0).map(refOf)).toEqual(byCollator(names));
    // pods whose names the last sort did not have, placed where the collator puts them
    const added = ['default/db', 'zz/last', 'a/first'];
    const later = [...pods, ...make(added, 10)];
    expect(sortPods(later, 'name', 0).map(refOf)).toEqual(byCollator([...names, ...added]));
    // one name written two ways (é, and e with a combining accent: the collator holds them equal): by uid
    const composed = pod('default/caf\u00e9', { uid: 'u-200' });
    const combining = pod('default/cafe\u0301', { uid: 'u-100' });
    expect(collator.compare(refOf(composed), refOf(combining))).toBe(0);
    const cafes = sortPods([...later, composed, combining], 'name', 0).filter((p) => p.name.startsWith('caf'));
    expect(cafes.map((p) => p.uid)).toEqual(['u-100', 'u-200']);
  });

  it('hides panes on short terminals and always leaves a free line', () => {
    const tall = screenLayout(40);
    expect(tall.eventLines).toBeGreaterThan(0);
    expect(tall.headerLines + 1 + tall.tableRows + (tall.eventLines ? tall.eventLines + 1 : 0) + 1).toBe(39);
    const medium = screenLayout(15);
    expect(medium.eventLines).toBe(0);
    expect(medium.headerLines + 1 + medium.tableRows + 1).toBe(14);
    const tiny = screenLayout(6);
    expect(tiny.headerLines).toBe(1);
    expect(tiny.tableRows).toBeGreaterThanOrEqual(1);
  });

  it('scrolls the table window to keep the selection visible, with a "more" line', () => {
    expect(tableWindow(5, 0, 10, 0)).toEqual({ top: 0, end: 5, more: false });
    const w = tableWindow(100, 50, 10, 0);
    expect(w.more).toBe(true);
    expect(50).toBeGreaterThanOrEqual(w.top);
    expect(50).toBeLessThan(w.end);
    expect(w.end - w.top).toBe(9);
    // Moving back up scrolls up only when the selection leaves the window.
    expect(tableWindow(100, 45, 10, w.top).top).toBe(w.top);
    expect(tableWindow(100, 10, 10, w.top).top).toBe(10);
  });

  it('parses a grace answer or says what is wrong', () => {
    expect(parseGrace('5')).toEqual({ seconds: 5 });
    expect(parseGrace(' 12s ')).toEqual({ seconds: 12 });
    expect(parseGrace('0')).toEqual({ seconds: 0 });
    expect(parseGrace('')).toHaveProperty('error');
    expect(parseGrace('-1')).toHaveProperty('error');
    expect(parseGrace('1.5')).toHaveProperty('error');
  });

  it('gives names the room the other columns do not need: pods stay distinguishable at 80 columns', () => {
    const pods = [
      pod('kube-system/kube-controller-manager-node-1'),
      pod('kube-system/kube-controller-manager-node-2'),
      pod('monitoring/prometheus-node-exporter-7x2kq'),
      pod('monitoring/prometheus-node-exporter-9bqzd'),
    ];
    const layout = tableLayout(80, pods);
    // the bar and the owner make room before a name is cut; grace, containers and age stay
    expect(layout.columns).toEqual(['name', 'state', 'grace', 'ctrs', 'age']);
    const names = pods.map((p) => rowCells(p, layout, 10_000, screenRules).name.trim());
    expect(names).toEqual(pods.map((p) => `${p.namespace}/${p.name}`));
    // at 60 columns names are cut in the middle, keeping the ends that tell them apart
    const narrow = tableLayout(60, pods);
    const cut = pods.map((p) => rowCells(p, narrow, 10_000, screenRules).name);
    expect(new Set(cut).size).toBe(pods.length);
    for (const c of cut) expect(c).toContain('…');
    expect(cut[0]).toMatch(/node-1$/);
    // a short name list keeps every column, the bar included
    expect(tableLayout(120, [pod('default/web')]).columns).toEqual(['name', 'state', 'grace', 'ctrs', 'age', 'owner', 'error']);
    expect(fitName('kube-system/kube-controller-manager-node-1', 20)).toBe('kube-sy…nager-node-1');
    expect(fitName('kube-system/kube-controller-manager-node-1', 20)).toHaveLength(20);
    expect(fitName('default/web', 20)).toBe('default/web'.padEnd(20));
  });

  it('marks a terminating pod nobody drives instead of counting its grace down', () => {
    const base = { state: 'terminating' as const, gracePeriod: 30, graceDeadline: 20_000 };
    const undriven = rowCells(pod('default/a', base), tableLayout(140), 10_000, screenRules);
    expect(undriven.grace.trim()).toBe('undriven');
    const dead = rowCells(pod('default/a', { ...base, owner: { pid: 9, startedAt: 0, heartbeatAt: 0, alive: false } }), tableLayout(140), 10_000, screenRules);
    expect(dead.grace.trim()).toBe('undriven');
    const driven = rowCells(pod('default/a', { ...base, owner: { pid: 9, startedAt: 0, heartbeatAt: 0, alive: true } }), tableLayout(140), 10_000, screenRules);
    expect(driven.grace.trim()).toMatch(/^[█░]{10} 10s$/);
  });

  it('makes a row’s cells for each layout and clock the same pod object is drawn with (a clock frame remakes only what moves)', () => {
    const p = pod('default/web', { since: 0, owner: { pid: 7, startedAt: 0, heartbeatAt: 0, alive: false } });
    const wide = tableLayout(160);
    const narrow = tableLayout(60);
    const first = rowCells(p, wide, 5_000, screenRules);
    const later = rowCells(p, wide, 17_000, screenRules);
    expect(first.age.trim()).toBe('5s');
    expect(later.age.trim()).toBe('17s');
    // the cells that do not read the clock are those of the layout asked for
    expect(later.owner.trim()).toBe('7✝');
    expect(later.name).toHaveLength(wide.widths.name!);
    const cut = rowCells(p, narrow, 17_000, screenRules);
    expect(cut.name).toHaveLength(narrow.widths.name!);
    expect(rowCells(p, wide, 17_000, screenRules).name).toHaveLength(wide.widths.name!);
    // a new listing's object for the same pod shows its own state
    const next = rowCells({ ...p, state: 'terminated', containersRunning: 0 }, wide, 17_000, screenRules);
    expect(next.state.trim()).toBe('terminated');
    expect(next.ctrs.trim()).toBe('0/1');
  });

  it('names the same cause as `status --explain` for every pod, those on their way out and those not', () => {
    const apiDeleting = { metadata: { name: 'gone', namespace: 'default', uid: 'uid-default-gone', deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['example.com/hold'] } };
    const owner = { pid: 9, startedAt: 0, heartbeatAt: 0, alive: true };
    const pods = [
      pod('default/a'),
      pod('default/b', { lastError: { message: 'rpc error: code = Unavailable desc = connection refused', at: 1_000 } }),
      pod('default/c', { state: 'terminating', gracePeriod: 30, graceDeadline: 5_000, owner }),
      pod('default/d', { state: 'terminating', gracePeriod: 30, graceDeadline: 50_000 }),
      pod('default/e', { state: 'terminated', containersRunning: 0, owner }),
      pod('default/f', { state: 'finished', containersRunning: 0 }),
      pod('default/gone', { containersRunning: 0 }),
      pod('default/gone2', { pod: apiDeleting as unknown as PodInfo['pod'], containersRunning: 0 }),
    ];
    const withApi: NodeFacts = { ...NO_NODE_FACTS, kubeletRunning: true, api: new Map([['uid-default-gone', apiDeleting as never]]) };
    for (const facts of [undefined, withApi]) {
      for (const p of pods) expect(screenRules.blockedBy(p, 40_000, facts)).toEqual(blockedBy(stuckFactsOf(p, 40_000, facts)));
    }
    // the pods deleted in the API are on their way out: a cause, from the facts or the listing's object
    expect(screenRules.blockedBy(pods[6]!, 40_000, withApi)?.kind).toBe('finalizer');
    expect(screenRules.blockedBy(pods[7]!, 40_000)?.kind).toBe('finalizer');
  });
});
