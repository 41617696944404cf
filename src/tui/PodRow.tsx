/**
 * One pod of the table: its cells fitted to the layout, the state in its colour, the countdown bar of
 * a terminating pod, and the selection shown inverted with a marker (visible without colour too).
 * The row's trailing blanks are dropped: less text for Ink to lay out on every frame.
 *
 * Rows are memoised: a row whose text, selection and colour are those of its last frame is not
 * re-rendered, so Ink neither rebuilds nor re-measures it. A row's segments are computed once per
 * (pod object, layout, clock) and kept beside the pod object (a WeakMap: gone with the pod). A row
 * whose time in state alone moves with the clock (view-model.ts `clockMovesAgeAlone`) is made once
 * for the frame's clock instead: that cell is written from the clock when Ink composes the frame
 * (StyledLine's `fill`), so a clock tick re-renders none of those rows.
 *
 * In colour the countdown bar is drawn with background colours on blanks, not with `█` and `░`:
 * Ink measures the width of every row it draws, in every frame, and a row with any character
 * beyond printable ASCII takes string-width's grapheme-by-grapheme path (~100 µs for a row of ~150
 * columns, against ~0.5 µs), which in a drain was a third of a frame (docs/bench/history.md, "Eighth
 * step"). The bar's cells get the same colour as foreground and background, so the selected row's
 * inversion keeps them apart. Without colour the characters are the bar.
 *
 * A row is one StyledLine (StyledLine.tsx): Ink lays out and measures its text as printable ASCII
 * (the marker and the bar's characters as blanks) and its transform writes the colours and symbols,
 * so a row is one text node whatever its colours, and no frame measures or sanitises colour codes.
 */
import { memo } from 'react';
import type { PodInfo } from '../domain/session-api.js';
import type { NodeFacts } from '../services/diagnose/status.js';
import type { ScreenRules } from '../services/watch/screen-rules.js';
import { lineModel, StyledLine, type Colour, type LineModel, type Span } from './StyledLine.js';
import { ageCell, clockMovesAgeAlone, rowCells, stateColor, type ColumnId, type TableLayout } from './view-model.js';

/** The clock reading of the frame being drawn: set by the screen at each render, read when a row's time in state is written. */
export interface FrameClock {
  at: number;
}

export interface PodRowProps {
  pod: PodInfo;
  layout: TableLayout;
  now: number;
  selected: boolean;
  color: boolean;
  /** What holds a pod and whether anybody drives it (the watch service's rules). */
  rules: ScreenRules;
  /** The node's facts for pods on their way out (names causes the listing alone cannot). */
  facts?: NodeFacts | undefined;
  /**
   * The frame's clock: a row whose time in state alone moves with the clock (clockMovesAgeAlone)
   * writes that cell from it when the frame is composed, so a clock tick re-renders no such row.
   */
  clock?: FrameClock | undefined;
}

/** `bar`: a run of the countdown bar, the share of the grace left or the share spent; `fill`: the time in state written from the frame's clock. */
type Segment = { text: string; color?: Colour; bar?: 'left' | 'spent'; fill?: () => string };

const BAR_COLOR = { left: 'yellow', spent: 'gray' } as const;

/** The grace cell's segments: the bar's two runs apart from the seconds after them. */
function graceSegments(text: string, color: Colour): Segment[] {
  const m = /^( ?)(█*)(░*)(.*)$/su.exec(text);
  if (m === null || m[2]!.length + m[3]!.length === 0) return [{ text, color }];
  return [{ text: m[1]! }, { text: m[2]!, bar: 'left' }, { text: m[3]!, bar: 'spent' }, { text: m[4]!, color }];
}

/** The row as coloured segments, in column order, separated by one space. */
function rowSegments(pod: PodInfo, layout: TableLayout, now: number, rules: ScreenRules, facts?: NodeFacts, clock?: FrameClock): Segment[] {
  const cells = rowCells(pod, layout, now, rules, facts);
  const colorOf: Partial<Record<ColumnId, Colour>> = {
    state: stateColor(pod.state),
    ...(pod.state === 'terminating' ? { grace: 'yellow' } : {}),
    error: 'red',
  };
  const segments = layout.columns.flatMap((c, i): Segment[] => {
    const text = i === 0 ? cells[c] : ` ${cells[c]}`;
    const color = colorOf[c];
    if (c === 'grace' && color !== undefined) return graceSegments(text, color);
    if (c === 'age' && clock !== undefined) return [{ text, fill: () => ` ${ageCell(pod, layout, clock.at)}` }];
    return [color !== undefined ? { text, color } : { text }];
  });
  const last = segments.at(-1);
  if (last !== undefined) last.text = last.text.trimEnd();
  return segments.filter((s) => s.text !== '');
}

/**
 * A row's segments for one layout, clock reading, set of rules and of node facts; its line models by
 * selection and colour. A row whose time in state alone moves with the clock is kept for the frame
 * clock instead of a clock reading (`clock`): its text names its start (`since`) in that cell's place.
 */
interface RowEntry {
  layout: TableLayout;
  now: number;
  clock: FrameClock | undefined;
  rules: ScreenRules;
  facts: NodeFacts | undefined;
  segments: Segment[];
  text: string;
  lines: (LineModel | undefined)[];
}

const segmentCache = new WeakMap<PodInfo, RowEntry>();

/** The row's segments and their text, cached per pod object for one layout, clock reading, set of rules and set of node facts. */
export function cachedRow(pod: PodInfo, layout: TableLayout, now: number, rules: ScreenRules, facts?: NodeFacts, frameClock?: FrameClock): RowEntry {
  const clock = frameClock !== undefined && clockMovesAgeAlone(pod, layout, rules, facts) ? frameClock : undefined;
  const hit = segmentCache.get(pod);
  if (hit !== undefined && hit.layout === layout && hit.clock === clock && (clock !== undefined || hit.now === now) && hit.rules === rules && hit.facts === facts) return hit;
  const segments = rowSegments(pod, layout, now, rules, facts, clock);
  let text = '';
  for (const s of segments) text += s.fill !== undefined ? `\u0002${pod.since}\u0001` : `${s.color ?? s.bar ?? ''}\u0000${s.text}\u0001`;
  const entry: RowEntry = { layout, now, clock, rules, facts, segments, text, lines: [] };
  segmentCache.set(pod, entry);
  return entry;
}

/** The row's line model for a selection and colour: made once per row entry (a row re-renders only when its text, selection or colour changed). */
function rowLine(row: RowEntry, selected: boolean, color: boolean): LineModel {
  const slot = (selected ? 2 : 0) + (color ? 1 : 0);
  return (row.lines[slot] ??= lineModel(rowSpans(row.segments, selected, color), color, selected));
}

/** Whether two renders of a row would draw the same thing. */
export function sameRow(a: PodRowProps, b: PodRowProps): boolean {
  if (a.selected !== b.selected || a.color !== b.color || a.clock !== b.clock) return false;
  if (a.pod === b.pod && a.layout === b.layout && a.now === b.now && a.rules === b.rules && a.facts === b.facts) return true;
  return cachedRow(a.pod, a.layout, a.now, a.rules, a.facts, a.clock).text === cachedRow(b.pod, b.layout, b.now, b.rules, b.facts, b.clock).text;
}

/** The row as spans: the selection marker, then the segments, the bar's runs as coloured blanks in colour. */
function rowSpans(segments: readonly Segment[], selected: boolean, color: boolean): Span[] {
  const spans: Span[] = [{ text: selected ? '▶ ' : '  ' }];
  for (const s of segments) {
    if (s.bar !== undefined && color) spans.push({ text: ' '.repeat(s.text.length), color: BAR_COLOR[s.bar], backgroundColor: BAR_COLOR[s.bar] });
    else if (s.fill !== undefined) spans.push({ text: s.text, fill: s.fill });
    else spans.push(s.color !== undefined ? { text: s.text, color: s.color } : { text: s.text });
  }
  return spans;
}

export const PodRow = memo(function PodRow({ pod, layout, now, selected, color, rules, facts, clock }: PodRowProps) {
  return <StyledLine line={rowLine(cachedRow(pod, layout, now, rules, facts, clock), selected, color)} />;
}, sameRow);
