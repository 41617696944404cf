/**
 * One pod of the table: its cells fitted to the layout, the state in its colour, the countdown bar of
 * a terminating pod, and the selection shown inverted with a marker (visible without colour too).
 */
import { Text } from 'ink';
import type { PodInfo } from '../services/session-api.js';
import { rowCells, stateColor, type TableLayout } from './view-model.js';

export interface PodRowProps {
  pod: PodInfo;
  layout: TableLayout;
  now: number;
  selected: boolean;
  color: boolean;
}

export function PodRow({ pod, layout, now, selected, color }: PodRowProps) {
  const cells = rowCells(pod, layout, now);
  const cols = layout.columns;
  const has = (c: (typeof cols)[number]) => cols.includes(c);
  const tail = (['ctrs', 'age', 'owner'] as const).filter(has).map((c) => cells[c]);
  return (
    <Text wrap="truncate" inverse={selected && color}>
      {selected ? '▶ ' : '  '}
      {cells.name} <Text color={color ? stateColor(pod.state) : undefined}>{cells.state}</Text>
      {has('grace') ? <Text color={color && pod.state === 'terminating' ? 'yellow' : undefined}>{` ${cells.grace}`}</Text> : null}
      {tail.length > 0 ? ` ${tail.join(' ')}` : ''}
      {has('error') ? <Text color={color ? 'red' : undefined}>{` ${cells.error}`}</Text> : null}
    </Text>
  );
}
