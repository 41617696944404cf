/**
 * The pod table: a title row and the window of rows that fits (see `tableWindow`), with a marker line
 * saying how many rows are hidden when not all pods fit.
 */
import { Box } from 'ink';
import type { PodInfo } from '../domain/session-api.js';
import type { NodeFacts } from '../services/diagnose/status.js';
import type { ScreenRules } from '../services/watch/screen-rules.js';
import { PodRow, type FrameClock } from './PodRow.js';
import { StyledLine, styledLine } from './StyledLine.js';
import { COLUMN_TITLES, fit, type TableLayout } from './view-model.js';

export interface PodTableProps {
  pods: readonly PodInfo[];
  layout: TableLayout;
  now: number;
  selected: number;
  window: { top: number; end: number; more: boolean };
  color: boolean;
  emptyText: string;
  rules: ScreenRules;
  facts?: NodeFacts | undefined;
  /** The frame's clock, read by rows whose time in state alone moves (PodRow). */
  clock?: FrameClock | undefined;
}

function tableTitle(layout: TableLayout): string {
  const parts = layout.columns.map((c) => fit(COLUMN_TITLES[c], layout.widths[c] ?? 0));
  return `  ${parts.join(' ')}`;
}

export function PodTable({ pods, layout, now, selected, window, color, emptyText, rules, facts, clock }: PodTableProps) {
  const shown = pods.slice(window.top, window.end);
  const above = window.top;
  const below = pods.length - window.end;
  return (
    <Box flexDirection="column">
      <StyledLine line={styledLine([{ text: tableTitle(layout), bold: true, underline: true }], color)} />
      {shown.length === 0 ? <StyledLine line={styledLine([{ text: `  ${emptyText}`, dim: true }], color)} /> : null}
      {shown.map((pod, i) => (
        <PodRow key={pod.uid} pod={pod} layout={layout} now={now} selected={window.top + i === selected} color={color} rules={rules} facts={facts} clock={clock} />
      ))}
      {window.more ? <StyledLine line={styledLine([{ text: `  ↑ ${above} above · ↓ ${below} below`, dim: true }], color)} /> : null}
    </Box>
  );
}
