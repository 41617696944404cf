/**
 * How `podctl status -w` writes a change of a row: a table line aligned with the first table (its
 * rows set the columns' minimum widths; a pod gone shows its last row with STATE `gone`), `ns/name`,
 * or one JSON object per line (`{"type","at","pod"}`, the pod exactly a row of `status -o json`).
 * The follower (status-watch.ts) decides what changed; this module only draws it.
 *
 * Invariants: pure apart from the table layout it asks lib/output for; one line per change.
 */
import { isoTime } from '../../lib/json-vocabulary.js';
import { renderTable, type Styler } from '../../lib/output.js';
import { STATUS_HEAD, STATUS_WIDE_HEAD, statusCells, type StatusTableOptions } from '../diagnose/output.js';
import type { StatusRow } from '../diagnose/status.js';
import type { StatusChangeLine, StatusWatchRecord } from './status-watch.js';

export interface StatusChangeLinesOptions {
  format: 'table' | 'wide' | 'name' | 'json';
  /** The rows the first table showed. */
  initial: readonly StatusRow[];
  styler: Styler;
  table?: StatusTableOptions & { noHeaders?: boolean };
}

/** The line writer of `status -w` in the given format. */
export function statusChangeLines(options: StatusChangeLinesOptions): StatusChangeLine {
  const { format, styler } = options;
  const tableOptions = options.table ?? {};
  const wide = format === 'wide';
  const head = [...STATUS_HEAD, ...(wide ? STATUS_WIDE_HEAD : []), ...(tableOptions.labelColumns ?? []).map((k) => k.toUpperCase()), ...(tableOptions.showLabels ? ['LABELS'] : [])];
  // change lines are aligned with the first table: its rows set the columns' minimum widths
  const firstCells = options.initial.map((r) => statusCells(r, wide, styler, tableOptions));
  return async (type: StatusWatchRecord['type'], row: StatusRow, at: number): Promise<string> => {
    if (format === 'json') return JSON.stringify({ type, at: isoTime(at), pod: row } satisfies StatusWatchRecord);
    if (format === 'name') return `${row.namespace}/${row.name}`;
    const cells = statusCells(type === 'deleted' ? { ...row, stuck: false } : row, wide, styler, tableOptions);
    // a pod gone: its last row, with the state column saying so
    if (type === 'deleted') cells[STATUS_HEAD.indexOf('STATE')] = 'gone';
    const text = await renderTable({ head, rows: [...firstCells, cells] }, styler, { noHeaders: tableOptions.noHeaders === true });
    return text.split('\n').at(-1) ?? '';
  };
}
