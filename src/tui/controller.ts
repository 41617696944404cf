/**
 * The watch screen's key handling as a pure transition: (UI state, key, visible pods) → next UI state
 * and at most one effect (quit, or a kill request for the session). The Ink app only runs the effects.
 *
 * Modes: normal → help (`?`) | explain (`⏎`, `d`) | filter (`/`) | grace prompt (`ctrl-k`, `g`) →
 * confirm → normal; `e` goes straight to confirm. Destructive actions always pass through confirm,
 * and only `y` confirms; the confirmation of a static or system-critical pod says so as `podctl kill` does. Moving is ↑/↓ or `j`/`k` (vim and k9s habit), so killing is `ctrl-k` as in
 * k9s.
 *
 * Invariants:
 * - The selection is a pod UID, so it follows its pod through re-sorting and new listings; when that
 *   pod leaves the visible list (filtered out, gone), the first row is selected.
 * - A grace shortening (`g`) is offered only for a terminating pod and only accepts a grace shorter
 *   than the one in force (grace periods only shrink).
 * - No effect is produced outside confirm, except quit.
 */
import type { KillRequest, PodInfo } from '../domain/session-api.js';
import type { ScreenRules } from '../services/watch/screen-rules.js';
import { graceLeftMs, parseGrace, podRef, SORT_KEYS, type SortKey } from './view-model.js';

type Action = 'kill' | 'evict' | 'shorten';

export type Mode =
  | { kind: 'normal' }
  | { kind: 'help' }
  /** The selected pod's `status --explain` view; `scroll` is the first line shown. */
  | { kind: 'explain'; uid: string; ref: string; scroll: number }
  | { kind: 'filter'; text: string }
  | { kind: 'grace'; action: Action; uid: string; ref: string; text: string; current?: number; error?: string; special?: string }
  /** `special`: why the pod's kind asks for care (criticalScope), named in the question as `podctl kill` names it. */
  | { kind: 'confirm'; action: Action; uid: string; ref: string; grace?: number; special?: string };

export interface UiState {
  mode: Mode;
  selectedUid?: string;
  filter: string;
  sort: SortKey;
  message?: { text: string; level: 'info' | 'warn' | 'error' };
}

/** The keys the screen reacts to, reduced from Ink's Key. */
export interface KeyPress {
  input: string;
  upArrow?: boolean;
  downArrow?: boolean;
  pageUp?: boolean;
  pageDown?: boolean;
  home?: boolean;
  end?: boolean;
  return?: boolean;
  escape?: boolean;
  backspace?: boolean;
  delete?: boolean;
  ctrl?: boolean;
}

export type Effect = { type: 'quit' } | { type: 'request'; action: Action; ref: string; request: KillRequest };

export interface KeyContext {
  /** The pods as shown (filtered and sorted). */
  visible: readonly PodInfo[];
  now: number;
  /** Rows of the table, for page up/down. */
  pageSize: number;
  /** The commands' rules the keys follow: the kill prompt's grace, kill's question, evict's refusal. */
  rules: ScreenRules;
}

export const initialUiState: UiState = { mode: { kind: 'normal' }, filter: '', sort: 'state' };

/** The index of the selected pod in the visible list (0 when none is selected). */
export function selectedIndex(state: UiState, visible: readonly PodInfo[]): number {
  if (visible.length === 0) return -1;
  const i = state.selectedUid === undefined ? -1 : visible.findIndex((p) => p.uid === state.selectedUid);
  return i < 0 ? 0 : i;
}

function moveSelection(state: UiState, visible: readonly PodInfo[], delta: number): UiState {
  if (visible.length === 0) return state;
  const i = Math.min(visible.length - 1, Math.max(0, selectedIndex(state, visible) + delta));
  return { ...state, selectedUid: visible[i]!.uid, message: undefined };
}

const ACTION_VERB: Record<Action, string> = { kill: 'Kill', evict: 'Evict', shorten: 'Shorten the grace of' };

function startKill(state: UiState, pod: PodInfo, rules: ScreenRules): UiState {
  if (pod.state === 'terminated' || pod.state === 'finished') {
    return { ...state, message: { text: `${podRef(pod)} is already ${pod.state}`, level: 'warn' } };
  }
  const current = pod.state === 'terminating' ? pod.gracePeriod : undefined;
  // the grace a kill without --grace runs with (as kill --dry-run shows it), which already takes the
  // grace in force into account (it only shrinks)
  const mode: Mode = { kind: 'grace', action: 'kill', uid: pod.uid, ref: podRef(pod), text: String(rules.plannedGraceSeconds(pod)) };
  if (current !== undefined) mode.current = current;
  const special = rules.criticalScope([pod]);
  if (special !== undefined) mode.special = special;
  return { ...state, mode, message: undefined };
}

function startEvict(state: UiState, pod: PodInfo, rules: ScreenRules): UiState {
  if (pod.state === 'terminated' || pod.state === 'finished') {
    return { ...state, message: { text: `${podRef(pod)} is already ${pod.state}`, level: 'warn' } };
  }
  // podctl evict's rule: a static or system-critical pod is refused (the screen has no --force)
  const refused = rules.evictRefusal([pod], false);
  if (refused !== undefined) return { ...state, message: { text: `${refused.message}; kill it (ctrl-k), or podctl evict --force`, level: 'error' } };
  const mode: Mode = { kind: 'confirm', action: 'evict', uid: pod.uid, ref: podRef(pod) };
  return { ...state, mode, message: undefined };
}

function startShorten(state: UiState, pod: PodInfo, now: number): UiState {
  if (pod.state !== 'terminating' || pod.gracePeriod === undefined) {
    return { ...state, message: { text: `g shortens a terminating pod's grace; ${podRef(pod)} is ${pod.state}`, level: 'warn' } };
  }
  const left = graceLeftMs(pod, now);
  const suggestion = Math.max(0, Math.min(pod.gracePeriod - 1, left === undefined ? 1 : Math.floor(left / 2000)));
  return {
    ...state,
    mode: { kind: 'grace', action: 'shorten', uid: pod.uid, ref: podRef(pod), text: String(suggestion), current: pod.gracePeriod },
    message: undefined,
  };
}

function onNormalKey(state: UiState, key: KeyPress, ctx: KeyContext): { state: UiState; effect?: Effect } {
  const { visible } = ctx;
  if (key.upArrow || (key.input === 'k' && !key.ctrl)) return { state: moveSelection(state, visible, -1) };
  if (key.downArrow || (key.input === 'j' && !key.ctrl)) return { state: moveSelection(state, visible, 1) };
  if (key.pageUp) return { state: moveSelection(state, visible, -Math.max(1, ctx.pageSize)) };
  if (key.pageDown) return { state: moveSelection(state, visible, Math.max(1, ctx.pageSize)) };
  if (key.home) return { state: moveSelection(state, visible, -visible.length) };
  if (key.end) return { state: moveSelection(state, visible, visible.length) };
  if (key.escape) return { state: { ...state, filter: '', message: undefined } };
  const selected = visible[selectedIndex(state, visible)];
  if (key.return || key.input === 'd') {
    if (selected === undefined) return { state: { ...state, message: { text: 'no pod selected', level: 'warn' } } };
    return { state: { ...state, mode: { kind: 'explain', uid: selected.uid, ref: podRef(selected), scroll: 0 }, message: undefined } };
  }
  if (key.ctrl && key.input !== 'k') return { state };
  switch (key.input) {
    case 'q':
      return { state, effect: { type: 'quit' } };
    case '?':
      return { state: { ...state, mode: { kind: 'help' }, message: undefined } };
    case '/':
      // `/` starts a new filter, as in less, vim and k9s: the old one is dropped, not appended to
      return { state: { ...state, mode: { kind: 'filter', text: '' }, filter: '', message: undefined } };
    case 's': {
      const sort = SORT_KEYS[(SORT_KEYS.indexOf(state.sort) + 1) % SORT_KEYS.length]!;
      return { state: { ...state, sort, message: { text: `sorted by ${sort}`, level: 'info' } } };
    }
    case 'k':
    case 'e':
    case 'g':
      // plain k moved up above: only ctrl-k reaches here as 'k'
      if (selected === undefined) return { state: { ...state, message: { text: 'no pod selected', level: 'warn' } } };
      if (key.input === 'k') return { state: startKill(state, selected, ctx.rules) };
      if (key.input === 'e') return { state: startEvict(state, selected, ctx.rules) };
      return { state: startShorten(state, selected, ctx.now) };
    default:
      return { state };
  }
}

function onFilterKey(state: UiState, mode: Extract<Mode, { kind: 'filter' }>, key: KeyPress): UiState {
  if (key.escape) return { ...state, mode: { kind: 'normal' }, filter: '' };
  if (key.return) return { ...state, mode: { kind: 'normal' }, filter: mode.text };
  if (key.backspace || key.delete) {
    const text = mode.text.slice(0, -1);
    return { ...state, mode: { kind: 'filter', text }, filter: text };
  }
  if (key.ctrl || key.input === '' || /[\x00-\x1f]/.test(key.input)) return state;
  const text = mode.text + key.input;
  return { ...state, mode: { kind: 'filter', text }, filter: text };
}

function onGraceKey(state: UiState, mode: Extract<Mode, { kind: 'grace' }>, key: KeyPress): UiState {
  if (key.escape) return { ...state, mode: { kind: 'normal' }, message: { text: 'cancelled', level: 'info' } };
  if (key.backspace || key.delete) return { ...state, mode: { ...mode, text: mode.text.slice(0, -1), error: undefined } };
  if (key.return) {
    const parsed = parseGrace(mode.text);
    if ('error' in parsed) return { ...state, mode: { ...mode, error: parsed.error } };
    if (mode.action === 'shorten' && mode.current !== undefined && parsed.seconds >= mode.current) {
      return { ...state, mode: { ...mode, error: `grace only shrinks: give less than ${mode.current}s` } };
    }
    const confirm: Mode = { kind: 'confirm', action: mode.action, uid: mode.uid, ref: mode.ref, grace: parsed.seconds };
    if (mode.special !== undefined) confirm.special = mode.special;
    return { ...state, mode: confirm };
  }
  if (/^[0-9]+$/.test(key.input)) return { ...state, mode: { ...mode, text: mode.text + key.input, error: undefined } };
  return state;
}

/** In the explain view: ↑/↓ j/k PgUp/PgDn scroll, q quits the view (not the watch), anything else closes it. */
function onExplainKey(state: UiState, mode: Extract<Mode, { kind: 'explain' }>, key: KeyPress, ctx: KeyContext): UiState {
  const page = Math.max(1, ctx.pageSize);
  let delta: number | undefined;
  if (key.upArrow || key.input === 'k') delta = -1;
  else if (key.downArrow || key.input === 'j') delta = 1;
  else if (key.pageUp) delta = -page;
  else if (key.pageDown) delta = page;
  if (delta !== undefined) return { ...state, mode: { ...mode, scroll: Math.max(0, mode.scroll + delta) } };
  return { ...state, mode: { kind: 'normal' } };
}

function onConfirmKey(state: UiState, mode: Extract<Mode, { kind: 'confirm' }>, key: KeyPress): { state: UiState; effect?: Effect } {
  if (key.input !== 'y' && key.input !== 'Y') {
    return { state: { ...state, mode: { kind: 'normal' }, message: { text: `${ACTION_VERB[mode.action].toLowerCase()} ${mode.ref}: cancelled`, level: 'info' } } };
  }
  const request: KillRequest = { uid: mode.uid };
  if (mode.grace !== undefined) request.gracePeriodSeconds = mode.grace;
  if (mode.action === 'evict') {
    request.evict = true;
    request.reason = 'Evicted';
    request.message = 'Evicted from podctl watch';
  }
  return {
    state: { ...state, mode: { kind: 'normal' }, message: { text: `${ACTION_VERB[mode.action].toLowerCase()} ${mode.ref}: requested…`, level: 'info' } },
    effect: { type: 'request', action: mode.action, ref: mode.ref, request },
  };
}

/** One key press: the next UI state, and the effect to run if any. */
export function reduceKey(state: UiState, key: KeyPress, ctx: KeyContext): { state: UiState; effect?: Effect } {
  const mode = state.mode;
  switch (mode.kind) {
    case 'normal':
      return onNormalKey(state, key, ctx);
    case 'help':
      return { state: { ...state, mode: { kind: 'normal' } } };
    case 'explain':
      return { state: onExplainKey(state, mode, key, ctx) };
    case 'filter':
      return { state: onFilterKey(state, mode, key) };
    case 'grace':
      return { state: onGraceKey(state, mode, key) };
    case 'confirm':
      return onConfirmKey(state, mode, key);
  }
}

/**
 * The key presses in one read of the terminal. Keys typed faster than they are read (or sent by a
 * script, or pasted) arrive together as one string: each character is then its own key, with enter,
 * backspace and escape recognised, so "⌫⌫3⏎" in a prompt edits and submits as if typed.
 */
export function splitKeys(press: KeyPress): KeyPress[] {
  const { input } = press;
  const special = press.upArrow || press.downArrow || press.pageUp || press.pageDown || press.home || press.end || press.ctrl;
  if (special || input.length <= 1 || input.startsWith('\u001b')) return [press];
  return [...input].map((ch): KeyPress => {
    if (ch === '\r' || ch === '\n') return { input: '', return: true };
    if (ch === '\u007f' || ch === '\b') return { input: '', backspace: true };
    return { input: ch };
  });
}

/** The question shown for a prompt or confirmation. */
export function promptText(mode: Mode): string | undefined {
  switch (mode.kind) {
    case 'grace': {
      const limit = mode.current !== undefined ? ` (in force ${mode.current}s)` : '';
      const verb = mode.action === 'shorten' ? 'New grace for' : `${ACTION_VERB[mode.action]}`;
      return `${verb} ${mode.ref} — grace seconds${limit}: ${mode.text}▏ ⏎ ok · esc cancel${mode.error ? `  ✗ ${mode.error}` : ''}`;
    }
    case 'confirm': {
      const grace = mode.grace !== undefined ? ` with grace ${mode.grace}s` : ' with its own grace';
      // a static or critical pod is named with its kind, in `podctl kill`'s words
      return `${ACTION_VERB[mode.action]} ${mode.special ?? mode.ref}${grace}? [y/N]`;
    }
    case 'filter':
      return `/${mode.text}▏ ⏎ keep · esc clear`;
    default:
      return undefined;
  }
}
