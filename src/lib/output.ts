/**
 * Rendering results for people (tables) and programs (JSON, YAML) on stdout.
 *
 * Invariants:
 * - Results go to stdout only; nothing here writes to stderr.
 * - JSON and YAML render the very object a command returns (its `--json` contract), with Maps and
 *   undefined fields normalised the same way in both.
 * - cli-table3 and yaml are loaded on first use, so commands that print neither do not pay for them.
 * - Colour only when enabled (a TTY, no --no-color, no NO_COLOR); tables never carry colour codes
 *   otherwise.
 */
export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml';

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
  return JSON.parse(JSON.stringify(value, (_key, v: unknown) => (v instanceof Map ? Object.fromEntries(v) : v)));
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

/** A borderless, kubectl-like table (cli-table3); no colour codes unless `styler.enabled`. */
export async function renderTable(spec: TableSpec, styler: Styler): Promise<string> {
  const { default: Table } = await import('cli-table3');
  const table = new Table({
    head: spec.head.map((h) => styler.bold(h)),
    chars: {
      top: '', 'top-mid': '', 'top-left': '', 'top-right': '', bottom: '', 'bottom-mid': '', 'bottom-left': '',
      'bottom-right': '', left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '', middle: '  ',
    },
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true },
  });
  for (const row of spec.rows) table.push(row);
  return table
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
}

/** Cuts a string to `max` characters with an ellipsis. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}
