/**
 * What the watch screen shows, computed from a snapshot: pure functions with no Ink or React, so the
 * layout rules (which columns fit, which panes show, how a row reads) are testable on their own.
 *
 * Invariants:
 * - Every line produced here is at most the terminal width; text is truncated with "…", never wrapped.
 * - The selection is a pod UID, not an index: it survives re-sorting, filtering and new listings.
 * - The countdown bar only shrinks as time passes and is empty once the grace has run out.
 */
import type { PodInfo } from '../domain/session-api.js';
import type { FeedEntry } from '../services/watch/watch-entries.js';
import type { NodeFacts } from '../services/diagnose/status.js';
import type { ScreenRules } from '../services/watch/screen-rules.js';

export type SortKey = 'name' | 'state' | 'age' | 'grace';
export const SORT_KEYS: readonly SortKey[] = ['state', 'age', 'grace', 'name'];

export type StateColor = 'green' | 'yellow' | 'red' | 'gray' | 'magenta' | 'cyan';

export function stateColor(state: PodInfo['state']): StateColor {
  switch (state) {
    case 'sync':
      return 'green';
    case 'terminating':
      return 'yellow';
    case 'terminated':
      return 'red';
    case 'finished':
      return 'gray';
    case 'runtime':
      return 'magenta';
  }
}

/** Order of states for sorting: what needs attention first. */
const STATE_ORDER: Record<PodInfo['state'], number> = { terminating: 0, sync: 1, runtime: 2, terminated: 3, finished: 4 };

/**
 * `5s`, `3m12s`, `2h05m`, `3d4h`: compact, at most 6 characters. `coarse` drops the seconds past the
 * first minute (`3m`), so a row's text changes once a minute rather than every second.
 */
export function formatDuration(ms: number, coarse = false): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return coarse ? `${m}m` : `${m}m${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  const d = Math.floor(h / 24);
  return `${d}d${h % 24}h`;
}

/**
 * Whether a row's duration moves every second at `now`: a terminating pod (its grace countdown, and
 * its time in state in m:ss) or a pod less than a minute in its state (formatDuration shows seconds).
 * While one does, the screen redraws every second; otherwise the shortest step shown is a minute.
 */
export function countsSeconds(pods: readonly PodInfo[], now: number): boolean {
  return pods.some((p) => p.state === 'terminating' || now - p.since < 60_000);
}

/** Truncates to `width` columns, ending with "…" when cut. */
export function truncate(text: string, width: number): string {
  if (width <= 0) return '';
  if (text.length <= width) return text;
  if (width === 1) return '…';
  return `${text.slice(0, width - 1)}…`;
}

export function fit(text: string, width: number): string {
  return truncate(text, width).padEnd(width);
}

/** Seconds of grace left for a terminating pod (undefined when not terminating or unknown). */
export function graceLeftMs(pod: PodInfo, now: number): number | undefined {
  if (pod.state !== 'terminating' || pod.graceDeadline === undefined) return undefined;
  return Math.max(0, pod.graceDeadline - now);
}

/**
 * A countdown bar of `width` cells: filled cells are the share of the grace period still left.
 * `█` filled, `░` used up.
 */
export function graceBar(leftMs: number, totalSeconds: number, width: number): string {
  if (width <= 0) return '';
  const total = Math.max(totalSeconds * 1000, 1);
  const share = Math.min(1, Math.max(0, leftMs / total));
  const filled = leftMs <= 0 ? 0 : Math.max(1, Math.round(share * width));
  return '█'.repeat(filled) + '░'.repeat(width - filled);
}

export function podRef(pod: Pick<PodInfo, 'namespace' | 'name'>): string {
  return `${pod.namespace}/${pod.name}`;
}

/** Keeps pods whose `namespace/name` or state contains the filter (case-insensitive). */
export function filterPods(pods: readonly PodInfo[], filter: string): PodInfo[] {
  const f = filter.trim().toLowerCase();
  if (f === '') return [...pods];
  return pods.filter((p) => cachedRef(p).toLowerCase().includes(f) || p.state.includes(f));
}

/** One collator for every comparison (`localeCompare` sets one up per call). */
const collator = new Intl.Collator();
/** `namespace/name` of each pod object, built once (a sort compares each pod ~log n times). */
const refCache = new WeakMap<PodInfo, string>();
function cachedRef(pod: PodInfo): string {
  let ref = refCache.get(pod);
  if (ref === undefined) {
    ref = podRef(pod);
    refCache.set(pod, ref);
  }
  return ref;
}

/**
 * Each `namespace/name`'s place in the collator's order (names the collator holds equal share one),
 * for the names of the pods last sorted: a sort then compares two numbers instead of asking the
 * collator ~n log n times. Rebuilt, with one collator sort of the names, when a pod's name is not in
 * it (a new pod); a drain's hundreds of sorts of the same names reuse it.
 */
let nameRanks = new Map<string, number>();
function nameRanksOf(pods: readonly PodInfo[]): Map<string, number> {
  if (pods.every((p) => nameRanks.has(cachedRef(p)))) return nameRanks;
  const refs = [...new Set(pods.map(cachedRef))].sort((a, b) => collator.compare(a, b));
  const ranks = new Map<string, number>();
  let rank = 0;
  for (const [i, ref] of refs.entries()) {
    if (i > 0 && collator.compare(refs[i - 1]!, ref) !== 0) rank += 1;
    ranks.set(ref, rank);
  }
  nameRanks = ranks;
  return ranks;
}

export function sortPods(pods: readonly PodInfo[], key: SortKey, now: number): PodInfo[] {
  const ranks = nameRanksOf(pods);
  const byName = (a: PodInfo, b: PodInfo) => ranks.get(cachedRef(a))! - ranks.get(cachedRef(b))! || collator.compare(a.uid, b.uid);
  const sorted = [...pods];
  switch (key) {
    case 'name':
      return sorted.sort(byName);
    case 'state':
      return sorted.sort((a, b) => STATE_ORDER[a.state] - STATE_ORDER[b.state] || byName(a, b));
    case 'age':
      // Longest in its state first: what is stuck shows on top.
      return sorted.sort((a, b) => a.since - b.since || byName(a, b));
    case 'grace': {
      const left = (p: PodInfo) => graceLeftMs(p, now) ?? Number.POSITIVE_INFINITY;
      return sorted.sort((a, b) => left(a) - left(b) || byName(a, b));
    }
  }
}

/** Columns of the pod table, in the order they are dropped when the terminal is narrow (last first). */
export type ColumnId = 'name' | 'state' | 'grace' | 'ctrs' | 'age' | 'owner' | 'error';

export interface TableLayout {
  /** Width of each visible column (the name and error columns take what is left). */
  widths: Partial<Record<ColumnId, number>>;
  columns: ColumnId[];
  /** Cells of the countdown bar (0: only the seconds are shown). */
  barWidth: number;
}

const FIXED: Record<Exclude<ColumnId, 'name' | 'error' | 'grace'>, number> = { state: 11, ctrs: 5, age: 8, owner: 7 };
/** The grace column with its countdown bar, and with the seconds (or `undriven`) only. */
const GRACE_WITH_BAR = 16;
const GRACE_SECONDS = 8;
const BAR = 10;
const MIN_NAME = 22;
/** The longest name the table makes room for (longer ones are cut in the middle). */
const MAX_NAME = 64;
/** The last error is shown only when the name still gets this much room. */
const MIN_NAME_WITH_ERROR = 24;
const MIN_ERROR = 12;
/** The selection marker before each row. */
const MARKER = 2;

type Optional = Exclude<ColumnId, 'name' | 'state'>;

/**
 * The layouts tried, richest first. The name column comes before the others: while names do not
 * fit whole, the last error, then the countdown bar, then the owner go first; only then is a name
 * cut (in the middle, keeping the end that tells replicas apart), and columns drop from the right
 * before a name gets less than MIN_NAME.
 */
const LAYOUTS: ReadonlyArray<{ columns: Optional[]; bar: boolean }> = [
  { columns: ['grace', 'ctrs', 'age', 'owner', 'error'], bar: true },
  { columns: ['grace', 'ctrs', 'age', 'owner'], bar: true },
  { columns: ['grace', 'ctrs', 'age', 'owner'], bar: false },
  { columns: ['grace', 'ctrs', 'age'], bar: false },
  { columns: ['grace', 'ctrs'], bar: false },
  { columns: ['grace'], bar: false },
  { columns: [], bar: false },
];

function layoutOf(avail: number, columns: Optional[], bar: boolean): { layout: TableLayout; rest: number } {
  const all: ColumnId[] = ['name', 'state', ...columns];
  const widths: TableLayout['widths'] = {};
  let fixed = 0;
  for (const c of all) {
    if (c === 'name' || c === 'error') continue;
    const w = c === 'grace' ? (bar ? GRACE_WITH_BAR : GRACE_SECONDS) : FIXED[c];
    widths[c] = w;
    fixed += w;
  }
  // what is left for the name (and the last error), after fixed columns and one space between columns
  const rest = avail - fixed - (all.length - 1);
  return { layout: { widths, columns: all, barWidth: bar && columns.includes('grace') ? BAR : 0 }, rest };
}

/** The room the names of these pods need (the title's at least; at most MAX_NAME). */
export function nameNeed(pods: readonly Pick<PodInfo, 'namespace' | 'name'>[]): number {
  let need = 0;
  for (const p of pods) need = Math.max(need, p.namespace.length + 1 + p.name.length);
  return Math.min(MAX_NAME, Math.max(MIN_NAME, need));
}

/**
 * Chooses columns for a terminal `width` columns wide, for these pods (their names decide the
 * name column's room; or that room itself, from `nameNeed`): see LAYOUTS. The name and state columns always show.
 */
export function tableLayout(width: number, pods: readonly Pick<PodInfo, 'namespace' | 'name'>[] | number = []): TableLayout {
  const avail = Math.max(0, width - MARKER);
  const need = typeof pods === 'number' ? pods : nameNeed(pods);
  // the richest layout in which every name fits whole
  for (const { columns, bar } of LAYOUTS) {
    const { layout, rest } = layoutOf(avail, columns, bar);
    if (columns.includes('error')) {
      const name = Math.max(need, MIN_NAME_WITH_ERROR);
      if (rest < name + MIN_ERROR) continue;
      layout.widths.name = name;
      layout.widths.error = rest - name;
      return layout;
    }
    if (rest >= need && columns.length >= 3) {
      layout.widths.name = rest;
      return layout;
    }
  }
  // names are cut: the richest layout that still leaves MIN_NAME (the owner and bar already gone)
  for (const { columns, bar } of LAYOUTS.slice(3)) {
    const { layout, rest } = layoutOf(avail, columns, bar);
    if (rest < MIN_NAME && columns.length > 0) continue;
    layout.widths.name = Math.max(1, rest);
    return layout;
  }
  throw new Error('unreachable: the two fixed columns always fit');
}

/** Cuts a `namespace/name` to `width` in the middle ("kube-sys…manager-node-1"), padded to `width`. */
export function fitName(text: string, width: number): string {
  if (width <= 0) return '';
  if (text.length <= width) return text.padEnd(width);
  if (width <= 2) return truncate(text, width);
  const head = Math.floor((width - 1) * 0.4);
  const tail = width - 1 - head;
  return `${text.slice(0, head)}…${text.slice(text.length - tail)}`;
}

/** A header label for each column. */
export const COLUMN_TITLES: Record<ColumnId, string> = {
  name: 'NAMESPACE/NAME',
  state: 'STATE',
  grace: 'GRACE',
  ctrs: 'CTRS',
  age: 'IN STATE',
  owner: 'OWNER',
  error: 'LAST ERROR',
};

/**
 * The last-error cell: the cause first when something other than the grace holds the pod (why a pod
 * on its way out is not finishing, from what the listing shows and the node's facts when gathered).
 */
function causeText(pod: PodInfo, now: number, rules: ScreenRules, facts?: NodeFacts): string {
  const cause = rules.blockedBy(pod, now, facts);
  const error = pod.lastError?.message.replace(/\s+/g, ' ');
  if (!cause || cause.kind === 'grace') return error ?? '';
  return `${cause.kind}: ${error ?? cause.detail}`;
}

type ClockFreeCells = Pick<Record<ColumnId, string>, 'name' | 'state' | 'ctrs' | 'owner'>;

/**
 * The cells of a row that do not read the clock, per pod object and layout: a pod object is a
 * listing's snapshot, never changed in place, so a frame drawn for the clock reuses them and makes
 * only the grace, time-in-state and last-error cells again.
 */
const clockFreeCells = new WeakMap<PodInfo, { layout: TableLayout; cells: ClockFreeCells }>();

function cellsWithoutClock(pod: PodInfo, layout: TableLayout): ClockFreeCells {
  const hit = clockFreeCells.get(pod);
  if (hit !== undefined && hit.layout === layout) return hit.cells;
  const w = layout.widths;
  const cells = {
    name: fitName(podRef(pod), w.name ?? 0),
    state: fit(pod.state, w.state ?? 0),
    ctrs: fit(`${pod.containersRunning}/${pod.containersTotal}`, w.ctrs ?? 0),
    owner: fit(pod.owner === undefined ? '-' : `${pod.owner.pid}${pod.owner.alive ? '' : '✝'}`, w.owner ?? 0),
  };
  clockFreeCells.set(pod, { layout, cells });
  return cells;
}

/** The time-in-state cell, fitted to its column (minutes past the first minute unless terminating). */
export function ageCell(pod: PodInfo, layout: TableLayout, now: number): string {
  return fit(formatDuration(now - pod.since, pod.state !== 'terminating'), layout.widths.age ?? 0);
}

/**
 * Whether the clock moves this row's time-in-state cell alone, at a width that does not change: not
 * terminating (no countdown; that cell in minutes past the first), nothing can hold it whatever the
 * time (`rules.neverHeld`: its last-error cell does not read the clock), and a column follows the
 * age (the last column is cut of its trailing blanks, so its width would move with the text).
 */
export function clockMovesAgeAlone(pod: PodInfo, layout: TableLayout, rules: ScreenRules, facts?: NodeFacts): boolean {
  if (pod.state === 'terminating' || rules.neverHeld === undefined) return false;
  const at = layout.columns.indexOf('age');
  return at >= 0 && at < layout.columns.length - 1 && rules.neverHeld(pod, facts);
}

/** The text of every cell of a row, already fitted to its column; `rules` say what holds the pod and whether anybody drives it. */
export function rowCells(pod: PodInfo, layout: TableLayout, now: number, rules: ScreenRules, facts?: NodeFacts): Record<ColumnId, string> {
  const w = layout.widths;
  const left = graceLeftMs(pod, now);
  let grace = '';
  if (pod.state === 'terminating' && rules.isUndriven(pod)) {
    // nobody counts its grace down: no countdown, and the mark says so (`podctl sync-known` resumes it)
    grace = 'undriven';
  } else if (left !== undefined && pod.gracePeriod !== undefined) {
    const secs = `${Math.ceil(left / 1000)}s`;
    grace = layout.barWidth > 0 ? `${graceBar(left, pod.gracePeriod, layout.barWidth)} ${secs}` : secs;
  } else if (pod.state === 'terminating' && pod.gracePeriod !== undefined) {
    grace = `${pod.gracePeriod}s`;
  }
  return {
    ...cellsWithoutClock(pod, layout),
    grace: fit(grace, w.grace ?? 0),
    age: ageCell(pod, layout, now),
    error: fit(causeText(pod, now, rules, facts), w.error ?? 0),
  };
}

/** The window of rows to draw so that the selected row is visible. */
function visibleWindow(count: number, selected: number, height: number, previousTop: number): { top: number; end: number } {
  if (height <= 0 || count === 0) return { top: 0, end: 0 };
  let top = Math.min(Math.max(0, previousTop), Math.max(0, count - height));
  if (selected < top) top = selected;
  if (selected >= top + height) top = selected - height + 1;
  return { top, end: Math.min(count, top + height) };
}

/**
 * The rows of the table to draw in `rows` lines: when not all pods fit, the last line becomes a
 * "N more" marker, and the window scrolls so the selected pod is always drawn.
 */
export function tableWindow(count: number, selected: number, rows: number, previousTop: number): { top: number; end: number; more: boolean } {
  const more = count > rows;
  const body = more ? Math.max(1, rows - 1) : rows;
  const w = visibleWindow(count, Math.max(0, selected), body, previousTop);
  return { ...w, more };
}

/** Which panes fit a terminal `rows` lines high. */
export interface ScreenLayout {
  headerLines: number;
  tableRows: number;
  eventLines: number;
  showHelpLine: boolean;
}

/**
 * Header (2 lines), table title and help line (1 each), and the events pane (title + up to 8 lines)
 * only on terminals of 24 lines or more. Below 8 lines the header shrinks to one line and the help
 * line goes (prompts still show). One line is left free so the frame is shorter than the terminal
 * (Ink then updates in place instead of clearing the screen).
 */
export function screenLayout(rows: number): ScreenLayout {
  const usable = Math.max(3, rows - 1);
  if (usable < 8) {
    const showHelpLine = usable >= 5;
    return { headerLines: 1, tableRows: Math.max(1, usable - 2 - (showHelpLine ? 1 : 0)), eventLines: 0, showHelpLine };
  }
  const base = 2 + 1 + 1;
  const eventLines = usable >= 23 ? Math.min(8, Math.floor((usable - base) / 3)) : 0;
  const tableRows = usable - base - (eventLines > 0 ? eventLines + 1 : 0);
  return { headerLines: 2, tableRows, eventLines, showHelpLine: true };
}

function formatClock(at: number): string {
  const d = new Date(at);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** One line of the events pane. */
export function entryLine(entry: FeedEntry, width: number): string {
  const who = entry.pod ?? entry.uid?.slice(0, 8) ?? '';
  const text = `${formatClock(entry.at)} ${entry.source.padEnd(7)} ${who ? `${who} ` : ''}${entry.kind}: ${entry.detail}`;
  return truncate(text, width);
}

/** Parses a grace answer: whole seconds ≥ 0, or an error message. */
export function parseGrace(text: string): { seconds: number } | { error: string } {
  const t = text.trim().replace(/s$/, '');
  if (!/^\d+$/.test(t)) return { error: `grace must be whole seconds, got "${text}"` };
  const seconds = Number(t);
  if (seconds > 24 * 3600) return { error: 'grace must be at most 86400s' };
  return { seconds };
}
