import { describe, expect, it } from 'vitest';
import { initialUiState, promptText, reduceKey, splitKeys, type KeyContext, type KeyPress, type UiState } from '../../src/tui/controller.js';
import { pod } from './support/fake-session.js';
import { screenRules } from '../../src/services/watch/screen-rules.js';

const web = pod('default/web');
const db = pod('default/db', { state: 'terminating', gracePeriod: 30, graceDeadline: 25_000 });
const done = pod('default/done', { state: 'finished' });
/** Kill is ctrl-k (k moves up, as j moves down). */
const CTRL_K = { input: 'k', ctrl: true };
const ctx: KeyContext = { visible: [web, db, done], now: 10_000, pageSize: 10, rules: screenRules };

function press(state: UiState, ...keys: (string | Partial<KeyPress>)[]): { state: UiState; effects: unknown[] } {
  const effects: unknown[] = [];
  for (const k of keys) {
    const key: KeyPress = typeof k === 'string' ? { input: k } : { input: '', ...k };
    const r = reduceKey(state, key, ctx);
    state = r.state;
    if (r.effect) effects.push(r.effect);
  }
  return { state, effects };
}

describe('watch keys', () => {
  it('moves the selection with the arrows and stays within the list', () => {
    let { state } = press(initialUiState, { downArrow: true });
    expect(state.selectedUid).toBe(db.uid);
    ({ state } = press(state, { downArrow: true }, { downArrow: true }, { downArrow: true }));
    expect(state.selectedUid).toBe(done.uid);
    ({ state } = press(state, { upArrow: true }, { home: true }));
    expect(state.selectedUid).toBe(web.uid);
  });

  it('kill asks the grace, then confirmation, and only y sends the request', () => {
    let { state, effects } = press(initialUiState, CTRL_K);
    expect(state.mode).toMatchObject({ kind: 'grace', action: 'kill', uid: web.uid, text: '30' });
    ({ state, effects } = press(state, { backspace: true }, { backspace: true }, '5', { return: true }));
    expect(state.mode).toMatchObject({ kind: 'confirm', action: 'kill', grace: 5 });
    expect(effects).toEqual([]);
    expect(promptText(state.mode)).toBe('Kill default/web with grace 5s? [y/N]');
    ({ state, effects } = press(state, 'y'));
    expect(effects).toEqual([{ type: 'request', action: 'kill', ref: 'default/web', request: { uid: web.uid, gracePeriodSeconds: 5 } }]);
    expect(state.mode.kind).toBe('normal');
  });

  it('any other key than y cancels the confirmation', () => {
    const { state, effects } = press(initialUiState, CTRL_K, { return: true }, 'n');
    expect(effects).toEqual([]);
    expect(state.mode.kind).toBe('normal');
    expect(state.message?.text).toContain('cancelled');
  });

  it('rejects a grace that is not whole seconds and stays in the prompt', () => {
    const { state } = press(initialUiState, CTRL_K, { backspace: true }, { backspace: true }, { return: true });
    expect(state.mode).toMatchObject({ kind: 'grace', error: expect.stringContaining('whole seconds') });
  });

  it("evict confirms and sends an evict request with the pod's own grace", () => {
    const { effects } = press(initialUiState, 'e', 'y');
    expect(effects).toEqual([{ type: 'request', action: 'evict', ref: 'default/web', request: { uid: web.uid, evict: true, reason: 'Evicted', message: 'Evicted from podctl watch' } }]);
  });

  it("the confirmation of a static or system-critical pod says why it is special, in podctl kill's words", () => {
    const etcd = pod('kube-system/etcd', { static: true });
    const only = (p: typeof web): KeyContext => ({ ...ctx, visible: [p] });
    let state = reduceKey(initialUiState, CTRL_K, only(etcd)).state;
    state = reduceKey(state, { input: '', return: true }, only(etcd)).state;
    expect(promptText(state.mode)).toMatch(/^Kill 1 static or system-critical pod\(s\): kube-system\/etcd \(static\) with grace \d+s\? \[y\/N\]$/);
    // an ordinary pod is named alone
    state = reduceKey(initialUiState, { input: 'e' }, only(web)).state;
    expect(promptText(state.mode)).toBe('Evict default/web with its own grace? [y/N]');
  });

  it('evict of a static or system-critical pod is refused, as podctl evict refuses it without --force (one rule: evictRefusal): no question, no request', () => {
    const etcd = pod('kube-system/etcd', { static: true });
    const critical = pod('kube-system/coredns', { pod: { metadata: { name: 'coredns', namespace: 'kube-system' }, spec: { containers: [], priorityClassName: 'system-cluster-critical' } } });
    for (const special of [etcd, critical]) {
      const only: KeyContext = { ...ctx, visible: [special] };
      let state = initialUiState;
      const effects: unknown[] = [];
      for (const input of ['e', 'y']) {
        const r = reduceKey(state, { input }, only);
        state = r.state;
        if (r.effect) effects.push(r.effect);
      }
      expect(effects).toEqual([]);
      expect(state.mode.kind).toBe('normal');
      expect(state.message).toMatchObject({ level: 'error' });
      expect(state.message?.text).toMatch(
        /^evict refuses static and system-critical pods, as the kubelet's eviction manager does: kube-system\/(etcd \(static\)|coredns \(system-critical\)); kill it \(ctrl-k\), or podctl evict --force$/,
      );
    }
  });

  it('g only shortens a terminating pod, and only to a shorter grace', () => {
    let { state } = press(initialUiState, 'g');
    expect(state.mode.kind).toBe('normal');
    expect(state.message?.level).toBe('warn');
    ({ state } = press(initialUiState, { downArrow: true }, 'g'));
    expect(state.mode).toMatchObject({ kind: 'grace', action: 'shorten', current: 30 });
    const longer = press(state, { backspace: true }, { backspace: true }, '4', '5', { return: true });
    expect(longer.state.mode).toMatchObject({ kind: 'grace', error: expect.stringContaining('only shrinks') });
    const shorter = press(longer.state, { backspace: true }, { backspace: true }, '2', { return: true }, 'y');
    expect(shorter.effects).toEqual([{ type: 'request', action: 'shorten', ref: 'default/db', request: { uid: db.uid, gracePeriodSeconds: 2 } }]);
  });

  it('does not offer to kill a pod that is already done', () => {
    const { state } = press(initialUiState, { end: true }, CTRL_K);
    expect(state.mode.kind).toBe('normal');
    expect(state.message?.text).toContain('already finished');
  });

  it('filters as you type; enter keeps the filter and esc clears it', () => {
    let { state } = press(initialUiState, '/', 'w', 'e');
    expect(state.mode).toEqual({ kind: 'filter', text: 'we' });
    expect(state.filter).toBe('we');
    ({ state } = press(state, { backspace: true }, { return: true }));
    expect(state.mode.kind).toBe('normal');
    expect(state.filter).toBe('w');
    ({ state } = press(state, '/'));
    // a new filter, not the old one to append to
    expect(state.mode).toEqual({ kind: 'filter', text: '' });
    expect(state.filter).toBe('');
    ({ state } = press(state, 'x', { return: true }));
    expect(state.filter).toBe('x');
    ({ state } = press(state, '/', 'x', { escape: true }));
    expect(state.filter).toBe('');
  });

  it('cycles the sort key, opens help, and q quits (but only from the normal mode)', () => {
    let { state } = press(initialUiState, 's');
    expect(state.sort).toBe('age');
    ({ state } = press(state, 's', 's', 's'));
    expect(state.sort).toBe('state');
    ({ state } = press(state, '?'));
    expect(state.mode.kind).toBe('help');
    const inHelp = press(state, 'q');
    expect(inHelp.effects).toEqual([]);
    expect(inHelp.state.mode.kind).toBe('normal');
    expect(press(inHelp.state, 'q').effects).toEqual([{ type: 'quit' }]);
    // In the filter prompt q is text, not quit.
    expect(press(initialUiState, '/', 'q').effects).toEqual([]);
  });

  it('splits keys that arrived in one read, so a fast "⌫⌫3⏎" edits and submits the prompt', () => {
    expect(splitKeys({ input: '\u007f\u007f3\r' })).toEqual([{ input: '', backspace: true }, { input: '', backspace: true }, { input: '3' }, { input: '', return: true }]);
    expect(splitKeys({ input: 'k' })).toEqual([{ input: 'k' }]);
    expect(splitKeys({ input: '', upArrow: true })).toEqual([{ input: '', upArrow: true }]);
    let state = press(initialUiState, CTRL_K).state;
    for (const key of splitKeys({ input: '\u007f\u007f3\r' })) state = reduceKey(state, key, ctx).state;
    expect(state.mode).toMatchObject({ kind: 'confirm', grace: 3 });
  });

  it('j and k move like ↓ and ↑ (vim, k9s); only ctrl-k kills', () => {
    let { state, effects } = press(initialUiState, 'j');
    expect(state.selectedUid).toBe(db.uid);
    ({ state } = press(state, 'j', 'j', 'j'));
    expect(state.selectedUid).toBe(done.uid);
    ({ state, effects } = press(state, 'k', 'k'));
    expect(state.selectedUid).toBe(web.uid);
    expect(state.mode.kind).toBe('normal');
    expect(effects).toEqual([]);
    ({ state } = press(state, CTRL_K));
    expect(state.mode).toMatchObject({ kind: 'grace', action: 'kill', uid: web.uid });
    // other ctrl keys do nothing (ctrl-e is not evict)
    expect(press(initialUiState, { input: 'e', ctrl: true }).state.mode.kind).toBe('normal');
  });

  it("enter or d opens the selected pod's explain view; arrows scroll it, any other key closes it", () => {
    let { state } = press(initialUiState, { downArrow: true }, { return: true });
    expect(state.mode).toEqual({ kind: 'explain', uid: db.uid, ref: 'default/db', scroll: 0 });
    ({ state } = press(state, { downArrow: true }, 'j', { pageDown: true }));
    expect(state.mode).toMatchObject({ kind: 'explain', scroll: 12 });
    ({ state } = press(state, { upArrow: true }, { pageUp: true }, { pageUp: true }));
    expect(state.mode).toMatchObject({ kind: 'explain', scroll: 0 });
    ({ state } = press(state, 'q'));
    expect(state.mode.kind).toBe('normal');
    // q closed the view, it did not quit
    ({ state } = press(state, 'd'));
    expect(state.mode).toMatchObject({ kind: 'explain', uid: db.uid });
    const none = reduceKey(initialUiState, { input: 'd' }, { ...ctx, visible: [] });
    expect(none.state.mode.kind).toBe('normal');
    expect(none.state.message?.text).toBe('no pod selected');
  });
});
