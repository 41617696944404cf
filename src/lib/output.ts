/**
 * Rendering results for people (tables) and programs (JSON, YAML) on stdout.
 *
 * Invariants:
 * - Results go to stdout only; nothing here writes to stderr.
 * - JSON and YAML render the very object a command returns (its `--json` contract), with Maps and
 *   undefined fields normalised the same way in both.
 * - string-width (tables with non-ASCII text) and yaml are loaded on first use, so commands that
 *   print neither do not pay for them.
 * - Colour only when enabled (a TTY, no --no-color, no NO_COLOR); tables never carry colour codes
 *   otherwise.
 */
import { stripVTControlCharacters } from 'node:util';

export interface Styler {
  readonly enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

const codes = { bold: [1, 22], dim: [2, 22], red: [31, 39], green: [32, 39], yellow: [33, 39], cyan: [36, 39] } as const;

export function createStyler(enabled: boolean): Styler {
  const wrap =
    (name: keyof typeof codes) =>
    (text: string): string =>
      enabled ? `\u001b[${codes[name][0]}m${text}\u001b[${codes[name][1]}m` : text;
  return { enabled, bold: wrap('bold'), dim: wrap('dim'), red: wrap('red'), green: wrap('green'), yellow: wrap('yellow'), cyan: wrap('cyan') };
}

/** Colour decision shared by every command: --no-color, NO_COLOR (any value) and a TTY. */
export function colorEnabled(noColorFlag: boolean, stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (noColorFlag) return false;
  if (env.NO_COLOR !== undefined) return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  return stream.isTTY === true;
}

/** Converts a result to plain JSON data: Maps become objects, undefined fields disappear. */
export function toPlain(value: unknown): unknown {
  const plain: unknown = JSON.parse(JSON.stringify(value, (_key, v: unknown): unknown => (v instanceof Map ? Object.fromEntries(v as Map<string, unknown>) : v)));
  return plain;
}

export function renderJson(value: unknown): string {
  return JSON.stringify(toPlain(value), null, 2);
}

export async function renderYaml(value: unknown): Promise<string> {
  const { stringify } = await import('yaml');
  return stringify(toPlain(value)).trimEnd();
}

export interface TableSpec {
  head: string[];
  rows: string[][];
}

/** Printable ASCII only: one column per character. */
const PRINTABLE_ASCII = /^[\u0020-\u007e]*$/;

/**
 * A borderless, kubectl-like table: columns left-aligned and two spaces apart, widths measured as
 * the terminal shows them (ANSI codes take no room; wide characters take two, as string-width
 * measures them), a multi-line cell spanning lines of its row, no trailing blanks. No colour codes
 * unless `styler.enabled`.
 *
 * Cost: linear in the cells. string-width (whose start-up builds an ICU segmenter, ~10 ms) is loaded
 * only when a cell holds more than printable ASCII; pod names, UIDs and states never do.
 */
export async function renderTable(spec: TableSpec, styler: Styler, options: { noHeaders?: boolean } = {}): Promise<string> {
  const rows = options.noHeaders ? spec.rows : [spec.head.map((h) => styler.bold(h)), ...spec.rows];
  if (rows.length === 0) return '';
  let columns = 0;
  for (const row of rows) if (row.length > columns) columns = row.length;
  // each cell's lines, and whether every line is printable ASCII once its escape codes are left out;
  // printable ASCII holds none (each starts with ESC or CSI): stripVTControlCharacters, whose
  // pattern is compiled on its first use, runs only on a line that holds something else
  const lines: string[][][] = [];
  let plain = true;
  for (const row of rows) {
    const cells: string[][] = [];
    for (let i = 0; i < columns; i++) {
      const text = row[i] ?? '';
      const cell = text.includes('\n') ? text.split('\n') : [text];
      if (plain) for (const part of cell) if (!PRINTABLE_ASCII.test(part) && !PRINTABLE_ASCII.test(stripVTControlCharacters(part))) plain = false;
      cells.push(cell);
    }
    lines.push(cells);
  }
  const widthOf: (text: string) => number = plain ? (text) => (PRINTABLE_ASCII.test(text) ? text.length : stripVTControlCharacters(text).length) : (await import('string-width')).default;
  const widths = new Array<number>(columns).fill(0);
  const cells = lines.map((row) =>
    row.map((cell, i) =>
      cell.map((text) => {
        const width = widthOf(text);
        if (width > (widths[i] ?? 0)) widths[i] = width;
        return { text, width };
      }),
    ),
  );
  const out: string[] = [];
  for (const row of cells) {
    const height = Math.max(...row.map((cell) => cell.length));
    for (let line = 0; line < height; line++) {
      const parts = row.map((cell, i) => {
        const part = cell[line];
        return (part?.text ?? '') + ' '.repeat((widths[i] ?? 0) - (part?.width ?? 0));
      });
      out.push(parts.join('  ').trimEnd());
    }
  }
  return out.join('\n');
}

/** Cuts a string to `max` characters with an ellipsis. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}
