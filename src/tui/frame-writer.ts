/**
 * The watch screen's terminal writer: stands between Ink and the terminal and sends, for each frame,
 * only the lines that differ from the frame before, instead of Ink's erase of the whole frame and its
 * every line written again. A clock tick that moves one age sends that row; the terminal (tmux, a
 * terminal over ssh) parses a line instead of the screen.
 *
 * Ink's writer (ink/build/log-update.js, its standard mode) writes a frame as one write: the erase of
 * the last frame's lines (`eraseLines(n)`: n × erase-line, cursor-up between them, then to column 0),
 * then the new frame, each line ended by a newline, so the cursor rests below its last line. Ink's
 * own incremental mode (Ink 6.8) is not used: with that trailing newline it moves the cursor up one
 * line too few, and each frame lands a line lower than the last.
 *
 * Invariants:
 * - What the terminal shows after each frame is what Ink's write would have shown: a frame is
 *   diffed only against the frame recorded as on the screen, and only when Ink's write erases
 *   exactly that frame's lines; the cursor ends where Ink's write leaves it (below the last line).
 * - Every other write passes through unchanged and replaces the record: a write of whole lines after
 *   no erase (Ink's first frame, or the frame it writes again after a console line) becomes the
 *   frame on the screen; anything else (Ink's clear, a frame in another form) leaves none, and a
 *   resize forgets it, so the next frame is written whole. Only the synchronized-update and
 *   cursor-visibility sequences leave the record standing.
 * - A changed line is erased before it is written (never after: a line as wide as the terminal
 *   leaves the cursor in the last column, where erasing to the end would take its last character).
 */
import { EventEmitter } from 'node:events';

const ESC = '\u001b[';
const ERASE_LINE = `${ESC}2K`;
const ERASE_AND_UP = `${ERASE_LINE}${ESC}1A`;
const ERASE_AND_LEFT = `${ERASE_LINE}${ESC}G`;
const ERASE_DOWN = `${ESC}J`;
/** Writes that change nothing on the screen: synchronized update begin/end, cursor hide/show. */
const HARMLESS = new Set(['', `${ESC}?2026h`, `${ESC}?2026l`, `${ESC}?25l`, `${ESC}?25h`]);

/** The lines of a frame as written (each followed by a newline). */
type Frame = readonly string[];

/** The number of lines an `eraseLines(n)` at the start of `text` erases, and where it ends; n 0 for none. */
function erasePrefix(text: string): { lines: number; end: number } {
  let at = 0;
  let lines = 0;
  while (text.startsWith(ERASE_AND_UP, at)) {
    at += ERASE_AND_UP.length;
    lines += 1;
  }
  if (!text.startsWith(ERASE_AND_LEFT, at)) return { lines: 0, end: 0 };
  return { lines: lines + 1, end: at + ERASE_AND_LEFT.length };
}

/**
 * What to send for frame `next` over frame `previous` (both as written: lines ended by newlines),
 * the cursor resting below `previous`'s last line: up to its first line, then each line unchanged
 * stepped over, each changed line erased and written, and the lines below a shorter frame erased.
 */
function frameDiff(previous: Frame, next: Frame): string {
  let out = previous.length > 0 ? `${ESC}${previous.length}A` : '';
  for (let i = 0; i < next.length; i += 1) {
    out += next[i] === previous[i] ? '\n' : `${ERASE_LINE}${next[i]}\n`;
  }
  if (next.length < previous.length) out += ERASE_DOWN;
  return out;
}

/** A terminal (a TTY write stream) seen through the writer: what Ink reads of a stdout, and `write`. */
export class LineDiffTerminal extends EventEmitter {
  readonly #out: NodeJS.WriteStream;
  /** The frame on the screen as Ink last wrote it, as lines; undefined when not known. */
  #frame: Frame | undefined;
  /** The number of lines Ink's next erase must name to be the erase of `#frame`. */
  #eraseCount = 0;
  readonly #onResize = () => {
    this.#frame = undefined;
    this.emit('resize');
  };

  constructor(out: NodeJS.WriteStream) {
    super();
    this.#out = out;
    out.on('resize', this.#onResize);
  }

  get isTTY(): boolean {
    return this.#out.isTTY === true;
  }
  get columns(): number {
    return this.#out.columns;
  }
  get rows(): number {
    return this.#out.rows;
  }
  get writable(): boolean {
    return this.#out.writable;
  }
  get writableEnded(): boolean {
    return this.#out.writableEnded;
  }
  get writableLength(): number {
    return this.#out.writableLength;
  }
  get destroyed(): boolean {
    return this.#out.destroyed;
  }

  write(chunk: string | Uint8Array, encoding?: BufferEncoding | ((error?: Error | null) => void), callback?: (error?: Error | null) => void): boolean {
    const done = typeof encoding === 'function' ? encoding : callback;
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString(typeof encoding === 'string' ? encoding : 'utf8');
    const out = this.#translate(text);
    return done === undefined ? this.#out.write(out) : this.#out.write(out, done);
  }

  /** Stops following the terminal's resizes. */
  close(): void {
    this.#out.off('resize', this.#onResize);
  }

  /** What to send for one of Ink's writes; records the frame it leaves on the screen. */
  #translate(text: string): string {
    if (HARMLESS.has(text)) return text;
    const erase = erasePrefix(text);
    const body = text.slice(erase.end);
    // the write erases the recorded frame (or nothing: Ink's first frame, or the one it writes again after a console line)
    const previous = erase.lines > 0 && erase.lines === this.#eraseCount ? this.#frame : undefined;
    this.#frame = undefined;
    // an erase alone (Ink's clear), or a write in a form this writer does not know
    if (body === '' || !body.endsWith('\n')) return text;
    const next = body.slice(0, -1).split('\n');
    this.#frame = next;
    // log-update's next erase names the frame's lines and the empty one after its last newline
    this.#eraseCount = next.length + 1;
    return previous === undefined ? text : frameDiff(previous, next);
  }
}
