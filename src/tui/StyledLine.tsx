/**
 * One line of the screen as a single Ink text node whose text, as Ink lays it out and measures it,
 * is printable ASCII; the line's styles and symbols are put back by its transform when the frame is
 * composed.
 *
 * Ink measures the width of every text node on every frame (string-width) and lays out again every
 * node whose text changed. A line with any character beyond printable ASCII takes string-width's
 * grapheme-by-grapheme path (~100 times the ASCII one), a text holding colour codes is tokenised
 * again by Ink's sanitiser each time, and nested `<Text color>` children are more nodes to reconcile
 * and squash. Here a one-column symbol (the arrows, dots, rules, bars and marks the screen draws
 * with) stands as a blank in the laid-out text, and the transform, handed that text back at output
 * time, returns the styled line with its symbols: a comparison, no measuring.
 *
 * Invariants:
 * - The laid-out text has the line's display width: only characters that are one column wide and a
 *   grapheme of their own are stood in for. A line with any other character beyond printable ASCII
 *   is laid out as itself (its styles still come from the transform).
 * - Styles are written only when `color` is set, as SGR codes (those of the CLI's Styler).
 * - A line Ink hands back otherwise than laid out (cut by a box narrower than the line was fitted
 *   to) is written as Ink made it: symbols stay blank, never misplaced.
 * - A line's model is made once per text and style (`styledLine` keeps the latest models): rows
 *   compare it by identity.
 */
import { createElement, memo } from 'react';
import { Transform } from 'ink';
import stringWidth from 'string-width';

export type Colour = 'red' | 'green' | 'yellow' | 'blue' | 'magenta' | 'cyan' | 'white' | 'gray';

interface SpanStyle {
  color?: Colour | undefined;
  backgroundColor?: Colour | undefined;
  bold?: boolean | undefined;
  dim?: boolean | undefined;
  underline?: boolean | undefined;
}

/** A run of the line's text in one style. */
export interface Span extends SpanStyle {
  text: string;
  /**
   * Writes the run at output time in place of `text`: a cell that moves with the clock while the
   * rest of the line does not (a row's time in state). Its text is printable ASCII of `text`'s
   * length, so the line Ink laid out stands; a line has at most one such run.
   */
  fill?: () => string;
}

/** What Ink lays out (`text`) and what its transform writes in its place (`styled`). */
export interface LineModel {
  readonly text: string;
  readonly styled: string;
  readonly transform: (line: string) => string;
  /** The laid-out text is printable ASCII: its width is its length, and the line is drawn at that size. */
  readonly fixed: boolean;
}

const FOREGROUND: Record<Colour, number> = { red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, cyan: 36, white: 37, gray: 90 };
const sgr = (code: number) => `\u001b[${code}m`;

/** A span with its style's SGR codes around it (none without colour). */
function styledSpan(span: Span, color: boolean): string {
  if (!color) return span.text;
  let open = '';
  let close = '';
  const add = (on: number, off: number) => {
    open += sgr(on);
    close = sgr(off) + close;
  };
  if (span.color !== undefined) add(FOREGROUND[span.color], 39);
  if (span.backgroundColor !== undefined) add(FOREGROUND[span.backgroundColor] + 10, 49);
  if (span.bold === true) add(1, 22);
  if (span.dim === true) add(2, 22);
  if (span.underline === true) add(4, 24);
  return `${open}${span.text}${close}`;
}

/** Characters that are each a grapheme of their own, none joining the one before (frame-output.ts's SIMPLE_LINE). */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const SYMBOL_RANGE = /^[\u00a0-\u02ff\u2010-\u2027\u2030-\u205e\u2190-\u23ff\u2500-\u27bf]$/;
const oneColumn = new Map<string, boolean>();

function isOneColumnSymbol(ch: string): boolean {
  let known = oneColumn.get(ch);
  if (known === undefined) {
    known = SYMBOL_RANGE.test(ch) && stringWidth(ch) === 1;
    oneColumn.set(ch, known);
  }
  return known;
}

/** The text with each one-column symbol as a blank; the text itself when it holds any other character beyond printable ASCII. */
export function standIn(text: string): string {
  if (PRINTABLE_ASCII.test(text)) return text;
  let out = '';
  for (const ch of text) {
    const code = ch.charCodeAt(0);
    if (code >= 0x20 && code <= 0x7e) out += ch;
    else if (isOneColumnSymbol(ch)) out += ' ';
    else return text;
  }
  return out;
}

/**
 * A new model of a line of `spans` (styledLine keeps them by text and style; a caller that keeps
 * its own, such as a pod's row, makes them here).
 */
export function lineModel(spans: readonly Span[], color: boolean, inverse = false): LineModel {
  let plain = '';
  let body = '';
  let head: string | undefined;
  let filled: Span | undefined;
  for (const s of spans) {
    plain += s.text;
    if (s.fill !== undefined && filled === undefined) {
      head = body;
      body = '';
      filled = s;
    } else body += styledSpan(s, color);
  }
  const text = standIn(plain);
  const [open, close] = inverse && color ? [sgr(7), sgr(27)] : ['', ''];
  const fixed = text !== '' && PRINTABLE_ASCII.test(text);
  if (filled === undefined || head === undefined) {
    const styled = `${open}${body}${close}`;
    return { text, styled, transform: (line: string) => (line === text ? styled : line), fixed };
  }
  const [before, after, fill, slot] = [`${open}${head}`, `${body}${close}`, filled.fill!, filled];
  const styledNow = () => `${before}${styledSpan({ ...slot, text: fill() }, color)}${after}`;
  return {
    text,
    get styled() {
      return styledNow();
    },
    transform: (line: string) => (line === text ? styledNow() : line),
    fixed,
  };
}

/** The latest models by text and style; cleared when it grows past MAX_MODELS (a drain's countdowns make new rows every second). */
let models = new Map<string, LineModel>();
let previousModels = new Map<string, LineModel>();
const MAX_MODELS = 512;

/** The model of a line of `spans`, inverted as a whole when `inverse` (with colour): the same object for the same line. */
export function styledLine(spans: readonly Span[], color: boolean, inverse = false): LineModel {
  let key = `${color ? 1 : 0}${inverse ? 1 : 0}`;
  for (const s of spans) key += `\u0001${s.color ?? ''}\u0002${s.backgroundColor ?? ''}\u0002${s.bold === true ? 1 : 0}${s.dim === true ? 1 : 0}${s.underline === true ? 1 : 0}\u0002${s.text}`;
  const model = models.get(key) ?? previousModels.get(key) ?? lineModel(spans, color, inverse);
  if (models.size >= MAX_MODELS) {
    previousModels = models;
    models = new Map();
  }
  models.set(key, model);
  return model;
}

/** A one-row text of a set width: what Ink's `<Text wrap="truncate">` is, but for the size. */
const FIXED_LINE = { flexGrow: 0, flexShrink: 0, flexDirection: 'row', textWrap: 'truncate', height: 1 } as const;

export interface StyledLineProps {
  line: LineModel;
}

/** Draws a line's model: Ink lays out its ASCII text, the transform writes its styled text. */
export const StyledLine = memo(function StyledLine({ line }: StyledLineProps) {
  if (!line.fixed) return <Transform transform={line.transform}>{line.text}</Transform>;
  // Ink's own text element with the line's size set: Yoga then never asks Ink to measure it
  return createElement('ink-text', { style: { ...FIXED_LINE, width: line.text.length }, internal_transform: line.transform }, line.text);
});
