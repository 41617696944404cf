import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { render as inkRender } from 'ink';
import { cleanup, render } from 'ink-testing-library';
import { afterEach, describe, expect, it } from 'vitest';
import type { PodInfo } from '../../src/domain/session-api.js';
import { WatchFeed } from '../../src/services/watch/watch-feed.js';
import { WatchApp } from '../../src/tui/WatchApp.js';
import { FakeSession, pod } from './support/fake-session.js';
import { screenRules } from '../../src/services/watch/screen-rules.js';
import { waitForText } from '../support/wait.js';

const NOW = 100_000;
const ARROW_DOWN = '\u001b[B';
/** ctrl-k: kill (plain k moves up). */
const CTRL_K = '\u000b';
const ENTER = '\r';
const ESC = '\u001b';

const feeds: WatchFeed[] = [];
afterEach(() => {
  cleanup();
  for (const f of feeds.splice(0)) f.close();
});

/** Strips ANSI codes (the state colours) so frames compare as text. */
const plain = (s: string | undefined) => (s ?? '').replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '');

/** The first frame (as read by `read`, 3 s bound, every 5 ms) for which `predicate` holds; a failure shows the last frame. */
const until = (read: () => string | undefined, predicate: (frame: string) => boolean, what: string): Promise<string> =>
  waitForText(what, () => plain(read()), predicate, { timeoutMs: 3_000, everyMs: 5 });

function nodePods(): PodInfo[] {
  return [
    pod('default/web', { since: NOW - 65_000, owner: { pid: 4242, startedAt: 0, heartbeatAt: 0, alive: true } }),
    pod('default/db', {
      state: 'terminating',
      since: NOW - 5_000,
      gracePeriod: 20,
      graceDeadline: NOW + 10_000,
      containersRunning: 1,
      containersTotal: 2,
      lastError: { message: 'StopContainer: DeadlineExceeded', at: NOW - 1_000 },
    }),
    pod('kube-system/etcd', { static: true, since: NOW - 3_600_000 }),
    pod('default/old', { state: 'finished', since: NOW - 10_000, containersRunning: 0 }),
    pod('default/stray', { state: 'runtime', pod: undefined, since: NOW - 1_000 }),
  ];
}

async function mount(pods: PodInfo[], size = { columns: 140, rows: 30 }, kubelet?: string) {
  const session = new FakeSession(pods, () => NOW);
  const feed = new WatchFeed(session, { coalesceMs: 1, now: () => NOW });
  feeds.push(feed);
  await feed.start();
  const quits: number[] = [];
  const app = render(
    <WatchApp
      source={feed}
      rules={screenRules}
      requestKill={(r) => session.requestKill(r)}
      node="node-1"
      {...(kubelet ? { kubelet } : {})}
      color={true}
      now={() => NOW}
      size={size}
      onQuit={() => quits.push(1)}
    />,
  );
  const first = await until(app.lastFrame, (f) => f.includes('NAMESPACE/NAME'), 'the table');
  return { app, session, feed, quits, first };
}

describe('watch screen', () => {
  it('shows the node, the endpoint and the working-pods breakdown in the header', async () => {
    const { first } = await mount(nodePods());
    const lines = first.split('\n');
    expect(lines[0]).toContain('podctl watch · node node-1 · unix:///run/fake.sock (simulated) · 5/5 pods · sort state');
    expect(lines[1]).toBe('sync 2  terminating 1  terminated 1 │ desired 4  orphan 0  runtime-only 0 │ untracked 1');
  });

  it('says in the header whether a kubelet runs beside podctl', async () => {
    const { first } = await mount(nodePods(), { columns: 160, rows: 30 }, 'running');
    expect(first.split('\n')[1]).toBe('sync 2  terminating 1  terminated 1 │ desired 4  orphan 0  runtime-only 0 │ untracked 1 │ kubelet running');
  });

  it('lists every pod with its state, countdown, containers, time in state, owner and last error', async () => {
    const { first } = await mount(nodePods());
    const row = (name: string) => first.split('\n').find((l) => l.includes(name)) ?? '';
    // nobody drives db (no owner): marked, no countdown
    expect(row('default/db')).toMatch(/default\/db\s+terminating\s+undriven\s+1\/2\s+5s\s+-\s+undriven: StopContainer: DeadlineExceeded/);
    expect(row('default/db')).not.toMatch(/[█░]|10s/);
    expect(row('default/web')).toMatch(/default\/web\s+sync\s+1\/1\s+1m\s+4242/);
    expect(row('kube-system/etcd')).toMatch(/sync\s+1\/1\s+1h00m/);
    expect(row('default/old')).toMatch(/finished\s+0\/1/);
    expect(row('default/stray')).toMatch(/runtime/);
    // Sorted by state: the terminating pod first, and it is selected.
    const firstRow = first.split('\n')[3] ?? '';
    expect(firstRow.startsWith('▶ default/db')).toBe(true);
  });

  it("opens the selected pod's --explain view with enter, live, and goes back on a key", async () => {
    const { app, session } = await mount(nodePods());
    app.stdin.write(ENTER); // default/db, terminating, is selected first
    const view = await until(app.lastFrame, (f) => f.includes('explain default/db'), 'the explain view');
    const text = plain(view);
    expect(text).toContain('state:        terminating');
    expect(text).toContain('waiting for:');
    expect(text).toContain('blocked by:   undriven');
    expect(text).toContain('engine predicates:');
    expect(text).toContain('timeline');
    expect(text).not.toContain('NAMESPACE/NAME');
    // it follows the listing: the pod finishing shows there
    session.set({ ...session.pods.get('uid-default-db')!, state: 'terminated', since: NOW });
    session.emit({ source: 'store', uid: 'uid-default-db', at: NOW, kind: 'checkpoint-changed' });
    await until(app.lastFrame, (f) => plain(f).includes('state:        terminated'), 'the new state in the view');
    app.stdin.write(ESC);
    await until(app.lastFrame, (f) => f.includes('NAMESPACE/NAME'), 'the table again');
  });

  it('shows the latest events in their pane', async () => {
    const { session, app } = await mount(nodePods());
    session.emit({ source: 'session', at: NOW, kind: 'warning', message: 'runtime relist slow' });
    const frame = await until(app.lastFrame, (f) => f.includes('runtime relist slow'), 'the warning');
    expect(frame).toContain('─ events');
    expect(frame).toMatch(/session warning: runtime relist slow/);
  });

  it('kills the selected pod after asking the grace and a confirmation', async () => {
    const { app, session } = await mount(nodePods());
    app.stdin.write(ARROW_DOWN); // default/web (sync) is second in state order
    await until(app.lastFrame, (f) => f.includes('▶ default/web'), 'selection on web');
    app.stdin.write(CTRL_K);
    await until(app.lastFrame, (f) => f.includes('Kill default/web — grace seconds: 30'), 'the grace prompt');
    app.stdin.write('\u007f');
    app.stdin.write('\u007f');
    app.stdin.write('7');
    app.stdin.write(ENTER);
    await until(app.lastFrame, (f) => f.includes('Kill default/web with grace 7s? [y/N]'), 'the confirmation');
    expect(session.kills).toEqual([]);
    app.stdin.write('y');
    const frame = await until(app.lastFrame, (f) => f.includes('kill default/web grace 7s: driven here'), 'the result');
    expect(session.kills).toEqual([{ uid: 'uid-default-web', gracePeriodSeconds: 7 }]);
    // The engine's events reach the pane and the pod's new state the table.
    const after = await until(app.lastFrame, (f) => /default\/web\s+terminating/.test(f), 'web terminating');
    expect(after).toContain('termination-requested: kill, grace 7s');
    void frame;
  });

  it('asks to kill a static pod naming it static, as podctl kill does', async () => {
    const { app, session } = await mount(nodePods().filter((p) => p.name === 'etcd'));
    app.stdin.write(CTRL_K);
    await until(app.lastFrame, (f) => f.includes('grace seconds'), 'the grace prompt');
    app.stdin.write(ENTER);
    const frame = await until(app.lastFrame, (f) => f.includes('[y/N]'), 'the confirmation');
    expect(frame).toContain('Kill 1 static or system-critical pod(s): kube-system/etcd (static) with grace');
    app.stdin.write('n');
    await until(app.lastFrame, (f) => f.includes('cancelled'), 'cancelled');
    expect(session.kills).toEqual([]);
  });

  it('does nothing when the confirmation is declined', async () => {
    const { app, session } = await mount(nodePods());
    app.stdin.write('e');
    await until(app.lastFrame, (f) => f.includes('Evict default/db with its own grace? [y/N]'), 'the confirmation');
    app.stdin.write('n');
    await until(app.lastFrame, (f) => f.includes('evict default/db: cancelled'), 'cancelled');
    expect(session.kills).toEqual([]);
  });

  it('shortens the grace of a terminating pod with g', async () => {
    const { app, session } = await mount(nodePods());
    app.stdin.write('g');
    await until(app.lastFrame, (f) => f.includes('New grace for default/db — grace seconds (in force 20s)'), 'the prompt');
    app.stdin.write('\u007f');
    app.stdin.write('\u007f');
    app.stdin.write('3');
    app.stdin.write(ENTER);
    await until(app.lastFrame, (f) => f.includes('Shorten the grace of default/db with grace 3s? [y/N]'), 'the confirmation');
    app.stdin.write('y');
    await until(app.lastFrame, (f) => f.includes('grace-shortened: grace 20s → 3s'), 'the engine event');
    expect(session.kills).toEqual([{ uid: 'uid-default-db', gracePeriodSeconds: 3 }]);
  });

  it('filters with / and sorts with s', async () => {
    const { app } = await mount(nodePods());
    app.stdin.write('/');
    app.stdin.write('e');
    app.stdin.write('t');
    app.stdin.write('c');
    let frame = await until(app.lastFrame, (f) => f.includes('1/5 pods'), 'the filtered list');
    expect(frame).toContain('kube-system/etcd');
    expect(frame).not.toContain('default/web');
    expect(frame).toContain('/etc▏');
    app.stdin.write(ESC);
    frame = await until(app.lastFrame, (f) => f.includes('5/5 pods'), 'the full list');
    app.stdin.write('s'); // age: longest in its state first
    frame = await until(app.lastFrame, (f) => f.includes('sort age'), 'sorted by age');
    const names = frame
      .split('\n')
      .slice(3, 8)
      .map((l) => l.slice(2).split(/\s+/)[0]);
    expect(names).toEqual(['kube-system/etcd', 'default/web', 'default/old', 'default/db', 'default/stray']);
  });

  it('/ starts a new filter: the old one is replaced, not appended to', async () => {
    const { app } = await mount(nodePods());
    app.stdin.write('/etc');
    app.stdin.write(ENTER);
    let frame = await until(app.lastFrame, (f) => f.includes('1/5 pods') && !f.includes('▏'), 'the kept filter');
    expect(frame).toContain('kube-system/etcd');
    app.stdin.write('/');
    frame = await until(app.lastFrame, (f) => f.includes('/▏'), 'an empty filter prompt');
    expect(frame).toContain('5/5 pods');
    app.stdin.write('web');
    app.stdin.write(ENTER);
    frame = await until(app.lastFrame, (f) => f.includes('1/5 pods') && !f.includes('▏'), 'the new filter');
    expect(frame).toContain('default/web');
    expect(frame).not.toContain('kube-system/etcd');
  });

  it('opens the help on ? and closes it with any key; q quits', async () => {
    const { app, quits } = await mount(nodePods());
    app.stdin.write('?');
    const help = await until(app.lastFrame, (f) => f.includes('podctl watch — keys'), 'the help');
    expect(help).toContain('shorten the grace of a terminating pod');
    app.stdin.write('x');
    await until(app.lastFrame, (f) => f.includes('NAMESPACE/NAME'), 'the table again');
    app.stdin.write('q');
    await until(
      () => String(quits.length),
      (n) => n === '1',
      'quit',
    );
  });

  it('fits a small terminal: fewer columns, no events pane, a "more" line', async () => {
    const many = Array.from({ length: 30 }, (_, i) => pod(`default/pod-${String(i).padStart(2, '0')}`, { since: NOW - i * 1000 }));
    const { first } = await mount(many, { columns: 40, rows: 10 });
    const lines = first.split('\n');
    expect(lines.length).toBeLessThanOrEqual(9);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(40);
    expect(first).not.toContain('─ events');
    expect(first).not.toContain('LAST ERROR');
    expect(first).toMatch(/↓ \d+ below/);
  });

  it('follows a terminal resize', async () => {
    const session = new FakeSession(nodePods(), () => NOW);
    const feed = new WatchFeed(session, { coalesceMs: 1, now: () => NOW });
    feeds.push(feed);
    await feed.start();
    const app = render(<WatchApp source={feed} rules={screenRules} requestKill={(r) => session.requestKill(r)} color={false} now={() => NOW} />);
    const wide = await until(app.lastFrame, (f) => f.includes('NAMESPACE/NAME'), 'the table');
    expect(wide).toContain('LAST ERROR'); // 100 columns
    let columns = 70;
    Object.defineProperty(app.stdout, 'columns', { get: () => columns, configurable: true });
    app.stdout.emit('resize');
    await until(app.lastFrame, (f) => !f.includes('LAST ERROR') && f.includes('GRACE'), 'the table without the error column');
    columns = 36;
    app.stdout.emit('resize');
    const narrow = await until(app.lastFrame, (f) => !f.includes('GRACE') && f.includes('STATE'), 'the narrow table');
    for (const l of narrow.split('\n')) expect(l.length).toBeLessThanOrEqual(36);
  });

  it('stays read-only without a keyboard instead of crashing (stdin not a TTY)', async () => {
    const session = new FakeSession(nodePods(), () => NOW);
    const feed = new WatchFeed(session, { coalesceMs: 1, now: () => NOW });
    feeds.push(feed);
    await feed.start();
    // A plain pipe as stdin: no isTTY, no setRawMode. Ink throws if raw mode is asked of it.
    const stdin = new PassThrough() as unknown as NodeJS.ReadStream;
    const out = Object.assign(new EventEmitter(), {
      columns: 120,
      rows: 30,
      frames: [] as string[],
      write(f: string) {
        out.frames.push(f);
        return true;
      },
    });
    const errors: unknown[] = [];
    const instance = inkRender(<WatchApp source={feed} rules={screenRules} requestKill={(r) => session.requestKill(r)} color={false} now={() => NOW} />, {
      stdout: out as unknown as NodeJS.WriteStream,
      stderr: out as unknown as NodeJS.WriteStream,
      stdin,
      debug: true,
      patchConsole: false,
      exitOnCtrlC: false,
    });
    instance.waitUntilExit().catch((e: unknown) => errors.push(e));
    const frame = await until(
      () => out.frames.at(-1) ?? '',
      (f) => f.includes('NAMESPACE/NAME'),
      'the table',
    );
    expect(frame).toContain('read-only: stdin is not a terminal');
    stdin.write(CTRL_K);
    await new Promise((r) => setTimeout(r, 20));
    expect(plain(out.frames.at(-1))).not.toContain('grace seconds');
    instance.unmount();
    expect(errors).toEqual([]);
  });

  it('redraws countdowns on a tick only while a row counts seconds', async () => {
    let now = NOW;
    // db driven by a live process: its grace counts down
    const pods = nodePods().map((p) => (p.name === 'db' ? { ...p, owner: { pid: 4243, startedAt: 0, heartbeatAt: 0, alive: true } } : p));
    const session = new FakeSession(pods, () => now);
    const feed = new WatchFeed(session, { coalesceMs: 1, now: () => now });
    feeds.push(feed);
    await feed.start();
    const app = render(<WatchApp source={feed} rules={screenRules} requestKill={(r) => session.requestKill(r)} color={false} now={() => now} size={{ columns: 140, rows: 30 }} tickMs={20} />);
    await until(app.lastFrame, (f) => f.includes('█████░░░░░ 10s'), 'the bar at 10s');
    now = NOW + 6_000;
    await until(app.lastFrame, (f) => f.includes('██░░░░░░░░ 4s'), 'the bar at 4s');
    session.set({ ...session.pods.get('uid-default-db')!, state: 'terminated', since: now });
    session.emit({ source: 'store', uid: 'uid-default-db', at: now, kind: 'checkpoint-changed' });
    await until(app.lastFrame, (f) => /default\/db\s+terminated/.test(f), 'db terminated');
    // Nothing terminates and nothing changes (a quiet node), but db's time in state counts seconds:
    // the clock still ticks, without a key press.
    now += 3_000;
    await until(app.lastFrame, (f) => /default\/db\s+terminated.*\s3s\s/.test(f), "db's time in state at 3s");
    now += 5_000;
    await until(app.lastFrame, (f) => /default\/db\s+terminated.*\s8s\s/.test(f), "db's time in state at 8s");
    // Every row past a minute in its state and none terminating: no tick, the frame count stays put.
    now += 120_000;
    await until(app.lastFrame, (f) => /default\/db\s+terminated.*\s2m\s/.test(f), "db's time in state at 2m");
    await new Promise((r) => setTimeout(r, 100));
    const frames = app.frames.length;
    await new Promise((r) => setTimeout(r, 100));
    expect(app.frames.length).toBe(frames);
  });
  it('moves the time in state of rows that count seconds every tick, and shows a transition on such a row', async () => {
    let now = NOW;
    const pods = [
      pod('default/api', { since: NOW - 3_000 }),
      pod('default/job', { state: 'runtime', pod: undefined, since: NOW - 58_000 }),
      pod('default/cache', { since: NOW - 30_000, owner: { pid: 4243, startedAt: 0, heartbeatAt: 0, alive: true } }),
    ];
    const session = new FakeSession(pods, () => now);
    const feed = new WatchFeed(session, { coalesceMs: 1, now: () => now });
    feeds.push(feed);
    await feed.start();
    const app = render(<WatchApp source={feed} rules={screenRules} requestKill={(r) => session.requestKill(r)} color={true} now={() => now} size={{ columns: 140, rows: 30 }} tickMs={20} />);
    const ages = (f: string) =>
      ['api', 'job', 'cache'].map(
        (n) =>
          /\s(\S+)\s+\S+\s*$/.exec(
            f
              .split('\n')
              .find((l) => l.includes(`default/${n} `))
              ?.replace(/\s+-?\s*$/, ' -') ?? '',
          )?.[1],
      );
    await until(app.lastFrame, (f) => /default\/api\s+sync.*\s3s\s/.test(f), 'api at 3s');
    for (const step of [1, 2, 3]) {
      now = NOW + step * 1_000;
      const frame = await until(app.lastFrame, (f) => new RegExp(`default/api\\s+sync.*\\s${3 + step}s\\s`).test(f), `api at ${3 + step}s`);
      // every row of the frame reads the same clock
      expect(ages(frame)).toEqual([`${3 + step}s`, step < 2 ? `${58 + step}s` : '1m', `${30 + step}s`]);
    }
    // a transition on a row whose age moved alone: the row shows its new state and its new time in state
    session.set({ ...session.pods.get('uid-default-cache')!, state: 'terminating', since: now, gracePeriod: 30, graceDeadline: now + 30_000 });
    session.emit({ source: 'store', uid: 'uid-default-cache', at: now, kind: 'checkpoint-changed' });
    await until(app.lastFrame, (f) => /default\/cache\s+terminating.*30s.*\s0s\s/.test(f), 'cache terminating, 0s in state');
    now += 2_000;
    const frame = await until(app.lastFrame, (f) => /default\/cache\s+terminating.*28s.*\s2s\s/.test(f), 'cache counting down, 2s in state');
    expect(frame).toMatch(/default\/api\s+sync.*\s8s\s/);
  });

  it('ticks the countdowns no faster than frames may come (the frame gate’s interval)', async () => {
    const pods = nodePods().map((p) => (p.name === 'db' ? { ...p, owner: { pid: 4243, startedAt: 0, heartbeatAt: 0, alive: true } } : p));
    const session = new FakeSession(pods, () => NOW);
    const feed = new WatchFeed(session, { coalesceMs: 1, now: () => NOW });
    feeds.push(feed);
    await feed.start();
    const app = render(
      <WatchApp source={feed} rules={screenRules} requestKill={(r) => session.requestKill(r)} color={false} now={() => NOW} size={{ columns: 140, rows: 30 }} tickMs={20} frameIntervalMs={300} />,
    );
    await until(app.lastFrame, (f) => f.includes('█████░░░░░ 10s'), 'the bar at 10s');
    const before = app.frames.length;
    await new Promise((r) => setTimeout(r, 1_000));
    // a tick every 20 ms would be ~50 frames; every 300 ms at most 4
    expect(app.frames.length - before).toBeGreaterThanOrEqual(2);
    expect(app.frames.length - before).toBeLessThanOrEqual(4);
  });
});

describe('watch screen at the frame cap', () => {
  it('coalesces a burst of transitions into few frames, each row never older than the frame before, the last one final', async () => {
    const pods = Array.from({ length: 30 }, (_, i) => pod(`default/p${String(i).padStart(2, '0')}`, { since: NOW - 1_000 }));
    const session = new FakeSession(pods, () => NOW);
    const feed = new WatchFeed(session, { coalesceMs: 0, now: () => NOW });
    feeds.push(feed);
    await feed.start();
    const app = render(
      <WatchApp source={feed} rules={screenRules} requestKill={(r) => session.requestKill(r)} color={false} now={() => NOW} size={{ columns: 120, rows: 45 }} frameIntervalMs={100} />,
    );
    await until(app.lastFrame, (f) => f.includes('30/30 pods'), 'the table');
    const framesBefore = app.frames.length;
    const order = { sync: 0, terminating: 1, terminated: 2, finished: 3 } as const;
    // Every pod goes sync → terminating → terminated → finished, one feed change per step, within ~60 ms.
    const published = { n: 0 };
    const startedAt = performance.now();
    const off = feed.subscribe(() => (published.n += 1));
    for (const to of ['terminating', 'terminated', 'finished'] as const) {
      for (const p of pods) {
        session.set({ ...session.pods.get(p.uid)!, state: to, since: NOW });
        session.emit({ source: 'store', uid: p.uid, at: NOW, kind: 'checkpoint-changed' });
        await feed.whenSettled();
      }
    }
    const elapsed = performance.now() - startedAt;
    await feed.whenSettled();
    const last = await until(app.lastFrame, (f) => (f.match(/ finished /g) ?? []).length === 30, 'every pod finished');
    off();
    expect(last).toContain('30/30 pods');
    const frames = app.frames.slice(framesBefore).map(plain);
    // Many feed changes, far fewer frames (≤ 10 a second plus the leading one).
    expect(published.n).toBeGreaterThanOrEqual(90);
    expect(frames.length).toBeLessThan(published.n / 2);
    expect(frames.length).toBeLessThanOrEqual(Math.ceil(elapsed / 100) + 3);
    // A pod's row only moves forward from one frame to the next.
    const seen = new Map<string, number>();
    for (const frame of frames) {
      for (const m of frame.matchAll(/default\/(p\d\d)\s+(sync|terminating|terminated|finished)\b/g)) {
        const rank = order[m[2] as keyof typeof order];
        expect(rank).toBeGreaterThanOrEqual(seen.get(m[1]!) ?? 0);
        seen.set(m[1]!, rank);
      }
    }
    expect(seen.size).toBe(30);
    expect([...seen.values()].every((r) => r === order.finished)).toBe(true);
  });
});
