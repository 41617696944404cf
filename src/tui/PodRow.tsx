/**
 * One pod of the table: its cells fitted to the layout, the state in its colour, the countdown bar of
 * a terminating pod, and the selection shown inverted with a marker (visible without colour too).
 * The row's trailing blanks are dropped: less text for Ink to lay out on every frame.
 */
import { Text } from 'ink';
import type { PodInfo } from '../services/session-api.js';
import type { NodeFacts } from '../services/status.js';
import { rowCells, stateColor, type ColumnId, type TableLayout } from './view-model.js';

export interface PodRowProps {
  pod: PodInfo;
  layout: TableLayout;
  now: number;
  selected: boolean;
  color: boolean;
  /** The node's facts for pods on their way out (names causes the listing alone cannot). */
  facts?: NodeFacts | undefined;
}

type Segment = { text: string; color?: string };

/** The row as coloured segments, in column order, separated by one space. */
export function rowSegments(pod: PodInfo, layout: TableLayout, now: number, facts?: NodeFacts): Segment[] {
  const cells = rowCells(pod, layout, now, facts);
  const colorOf: Partial<Record<ColumnId, string>> = {
    state: stateColor(pod.state),
    ...(pod.state === 'terminating' ? { grace: 'yellow' } : {}),
    error: 'red',
  };
  const segments = layout.columns.map((c, i) => {
    const seg: Segment = { text: i === 0 ? cells[c] : ` ${cells[c]}` };
    const color = colorOf[c];
    if (color !== undefined) seg.color = color;
    return seg;
  });
  const last = segments.at(-1);
  if (last !== undefined) last.text = last.text.trimEnd();
  return segments.filter((s) => s.text !== '');
}

export function PodRow({ pod, layout, now, selected, color, facts }: PodRowProps) {
  const segments = rowSegments(pod, layout, now, facts);
  return (
    <Text wrap="truncate" inverse={selected && color}>
      {selected ? '▶ ' : '  '}
      {segments.map((s, i) =>
        s.color !== undefined && color ? (
          <Text key={i} color={s.color}>
            {s.text}
          </Text>
        ) : (
          s.text
        ),
      )}
    </Text>
  );
}
