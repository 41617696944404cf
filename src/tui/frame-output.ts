/**
 * The watch screen's frame composer: turns the text Ink writes for one frame (its `Output`
 * operations) into the frame's string, exactly as Ink's own `Output.get()` does, for a fraction of
 * its cost.
 *
 * Ink composes every frame from scratch: a grid of width × height cell objects, every written line
 * split into graphemes and styled characters (`@alcalzone/ansi-tokenize`), then every cell turned
 * back into text with the ANSI codes between them. At 160×45 that is ~7,000 cells and ~4,000
 * characters tokenized per frame (~15 ms on Node.js 20, the largest part of a frame in a drain),
 * though between two frames a row's text changes by a few characters at most (a countdown), and
 * the title, the key help and the rows of unchanged pods do not change at all. Here a row is
 * composed from what was written on it:
 * - a row written once with printable ASCII, common symbols and SGR colour codes only (a pod's row,
 *   the header, the events) is serialised run by run (the text between two codes at once, not
 *   character by character);
 * - any other row (wide characters, several writes on one row) goes through Ink's own algorithm, for
 *   that row only;
 * - a row's string is kept by what was written on it (its pieces and their columns): a row written
 *   with the same text as in this or the previous frame is not composed again. The cache holds two
 *   frames' rows at most.
 *
 * Invariants:
 * - The output is Ink's, character for character, for any operations (test/tui/frame-output.test.ts
 *   compares the two on generated frames; ink-output.ts checks a sample before using this at all).
 * - Frames with clipping (a Box with `overflow: hidden`, which the watch does not use) or positions
 *   that are not whole columns are not composed here: `composeFrame` returns undefined and Ink's own
 *   `get()` runs.
 */
import { ansiCodesToString, diffAnsiCodes, reduceAnsiCodesIncremental, styledCharsFromTokens, styledCharsToString, tokenize } from '@alcalzone/ansi-tokenize';
import stringWidth from 'string-width';

/** One of Ink's output operations (ink/build/output.js), as far as composing reads it. */
export interface OutputOperation {
  type: string;
  x?: number;
  y?: number;
  text?: string;
  transformers?: readonly ((line: string, index: number) => string)[];
}

/** What Ink's `Output.get()` returns. */
export interface ComposedFrame {
  output: string;
  height: number;
}

/** A line as written on a row: its column and its text after the write's transformers. */
interface Piece {
  x: number;
  line: string;
}

type AnsiCode = ReturnType<typeof reduceAnsiCodesIncremental>[number];
type StyledChar = ReturnType<typeof styledCharsFromTokens>[number];

/**
 * Printable ASCII, the symbols the screen draws with (Latin-1 and Latin letters, punctuation,
 * arrows, technical symbols, box drawing, blocks, shapes, dingbats: characters that are each a
 * grapheme of their own, none joining the one before) and complete SGR sequences (`ESC [ digits or
 * semicolons m`), nothing else. Tokenizing such a line character by character gives back its text
 * between the codes unchanged, so it can be taken run by run.
 */
const SIMPLE_LINE = /^(?:[\x20-\x7e\u00a0-\u02ff\u2010-\u2027\u2030-\u205e\u2190-\u23ff\u2500-\u27bf]|\x1b\[[0-9;]*m)*$/;
/** A simple line's parts: an SGR sequence, or a run of text up to the next escape. */
const SIMPLE_PART = /\x1b\[[0-9;]*m|[^\x1b]+/g;

/** The composed rows of the last two frames, by the pieces written on them. */
export class RowCache {
  #current = new Map<string, string>();
  #previous = new Map<string, string>();
  /** The ANSI tokens of each SGR sequence seen (a handful: the screen's colours). */
  readonly sgrTokens = new Map<string, AnsiCode[]>();
  /** Display widths of the grapheme clusters seen on rows composed the general way. */
  readonly widths = new Map<string, number>();
  /** The codes between the runs of each simple line's skeleton (serialiseSimpleLine): a few per screen. */
  readonly skeletons = new Map<string, string[]>();
  /** Rows composed (not found in the cache), and of them those composed cell by cell as Ink does, for tests. */
  composed = 0;
  composedByCell = 0;

  get(key: string): string | undefined {
    const hit = this.#current.get(key);
    if (hit !== undefined) return hit;
    const previous = this.#previous.get(key);
    if (previous !== undefined) this.#current.set(key, previous);
    return previous;
  }

  set(key: string, row: string): void {
    this.#current.set(key, row);
  }

  /** Ends a frame: rows not written in this frame or the next are forgotten. */
  endFrame(): void {
    this.#previous = this.#current;
    this.#current = new Map();
    // the SGR and width tables only grow with distinct colours and characters; bound them anyway
    if (this.sgrTokens.size > 4_096) this.sgrTokens.clear();
    if (this.widths.size > 4_096) this.widths.clear();
    if (this.skeletons.size > 4_096) this.skeletons.clear();
  }

  /** Rows kept (this frame's and the last's), for tests. */
  get size(): number {
    return new Set([...this.#current.keys(), ...this.#previous.keys()]).size;
  }
}

/**
 * The frame of `operations` on a `width` × `height` screen, as Ink's `Output.get()` makes it, or
 * undefined when the frame has operations composed only by Ink (clipping, fractional positions).
 */
export function composeFrame(width: number, height: number, operations: readonly OutputOperation[], cache: RowCache): ComposedFrame | undefined {
  const rows = piecesByRow(height, operations);
  if (rows === undefined) return undefined;
  const lines = new Array<string>(height);
  for (let y = 0; y < height; y += 1) {
    const pieces = rows[y];
    lines[y] = pieces === undefined ? '' : composedRow(pieces, width, cache);
  }
  cache.endFrame();
  return { output: lines.join('\n'), height };
}

/** The pieces written on each row, in the order written; undefined for a frame Ink must compose. */
function piecesByRow(height: number, operations: readonly OutputOperation[]): (Piece[] | undefined)[] | undefined {
  const rows = new Array<Piece[] | undefined>(height);
  for (const operation of operations) {
    if (operation.type !== 'write') return undefined;
    const { x, y, text, transformers = [] } = operation;
    if (!Number.isInteger(x) || !Number.isInteger(y) || text === undefined) return undefined;
    const lines = text.split('\n');
    for (let index = 0; index < lines.length; index += 1) {
      const row = y! + index;
      // Ink stops at the first line outside the screen (the rest would land on the same missing row)
      if (row < 0 || row >= height) break;
      let line = lines[index]!;
      for (const transform of transformers) line = transform(line, index);
      (rows[row] ??= []).push({ x: x!, line });
    }
  }
  return rows;
}

/** A row's string: from the cache, or composed and kept. */
function composedRow(pieces: Piece[], width: number, cache: RowCache): string {
  const key = rowKey(pieces);
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const only = pieces.length === 1 ? pieces[0]! : undefined;
  const row =
    only !== undefined && only.x >= 0 && only.x <= width && SIMPLE_LINE.test(only.line)
      ? (' '.repeat(only.x) + serialiseSimpleLine(only.line, cache)).trimEnd()
      : composeRowAsInk(pieces, width, cache);
  cache.composed += 1;
  cache.set(key, row);
  return row;
}

/**
 * What was written on a row, unambiguously: the number of pieces, then each piece's column, and
 * (with several) its length, before its text.
 */
function rowKey(pieces: readonly Piece[]): string {
  if (pieces.length === 1) return `1|${pieces[0]!.x}:${pieces[0]!.line}`;
  let key = `${pieces.length}|`;
  for (const { x, line } of pieces) key += `${x}:${line.length}:${line}`;
  return key;
}

/**
 * A simple line (SIMPLE_LINE) as Ink writes it: the codes in force reduced as Ink's
 * tokenizer reduces them, and at each run of text the codes that lead from the last run's style to
 * this one (none when the style is the same), then the codes that end the last run's style.
 *
 * What goes between the runs depends only on the line's codes and where its runs stand among them
 * (its skeleton), not on the runs' text: it is worked out once per skeleton (RowCache.skeletons) and
 * reused, so a row whose age moved is its runs put back between the same codes.
 */
function serialiseSimpleLine(line: string, cache: RowCache): string {
  const runs: string[] = [];
  let skeleton = '';
  for (const [part] of line.matchAll(SIMPLE_PART)) {
    if (part.charCodeAt(0) === 0x1b) skeleton += part;
    else {
      runs.push(part);
      // a run's place among the codes: ESC never stands in a run, so the marker is unambiguous
      skeleton += '\u0000';
    }
  }
  let between = cache.skeletons.get(skeleton);
  if (between === undefined) {
    between = skeletonCodes(skeleton, cache);
    cache.skeletons.set(skeleton, between);
  }
  let out = '';
  for (let i = 0; i < runs.length; i += 1) out += between[i]! + runs[i]!;
  return out + between[runs.length]!;
}

/** The codes to write before each run of a skeleton (runs marked by NUL), and after the last one. */
function skeletonCodes(skeleton: string, cache: RowCache): string[] {
  let codes: AnsiCode[] = [];
  let emitted: AnsiCode[] = [];
  const between: string[] = [];
  for (const [part] of skeleton.matchAll(SKELETON_PART)) {
    if (part !== '\u0000') {
      codes = reduceAnsiCodesIncremental(codes, sgrTokensOf(part, cache));
      continue;
    }
    between.push(codes !== emitted ? ansiCodesToString(diffAnsiCodes(emitted, codes)) : '');
    emitted = codes;
  }
  between.push(ansiCodesToString(diffAnsiCodes(emitted, [])));
  return between;
}

/** A skeleton's parts: an SGR sequence, or a run's marker. */
const SKELETON_PART = /\x1b\[[0-9;]*m|\u0000/g;

function sgrTokensOf(sequence: string, cache: RowCache): AnsiCode[] {
  let tokens = cache.sgrTokens.get(sequence);
  if (tokens === undefined) {
    // an SGR sequence alone tokenizes to the same codes as within a line
    tokens = tokenize(sequence).filter((t): t is AnsiCode & { type: 'ansi' } => t.type === 'ansi');
    cache.sgrTokens.set(sequence, tokens);
  }
  return tokens;
}

const BLANK: StyledChar = Object.freeze({ type: 'char', value: ' ', fullWidth: false, styles: [] });

/**
 * One row composed as Ink composes its grid: each piece's styled characters placed from its column
 * (a wide character takes the cells after it), later pieces over earlier ones, the cells serialised
 * with the codes between them and the trailing blanks trimmed.
 */
function composeRowAsInk(pieces: readonly Piece[], width: number, cache: RowCache): string {
  cache.composedByCell += 1;
  const cells = new Array<StyledChar>(width).fill(BLANK);
  for (const { x, line } of pieces) {
    let column = x;
    for (const character of styledCharsFromTokens(tokenize(line))) {
      cells[column] = character;
      const characterWidth = Math.max(1, widthOf(character.value, cache));
      for (let extra = 1; extra < characterWidth; extra += 1) cells[column + extra] = { type: 'char', value: '', fullWidth: false, styles: character.styles };
      column += characterWidth;
    }
  }
  // a piece starting past the row's end leaves holes, which Ink drops
  return styledCharsToString(cells.filter((cell) => cell !== undefined)).trimEnd();
}

function widthOf(grapheme: string, cache: RowCache): number {
  let width = cache.widths.get(grapheme);
  if (width === undefined) {
    width = stringWidth(grapheme);
    cache.widths.set(grapheme, width);
  }
  return width;
}
