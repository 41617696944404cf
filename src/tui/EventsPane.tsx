/**
 * The latest transitions and events, newest last, one line each; errors in red, warnings in yellow.
 * Hidden by the app on short terminals.
 */
import { Box } from 'ink';
import type { FeedEntry } from '../services/watch/watch-entries.js';
import { StyledLine, styledLine } from './StyledLine.js';
import { entryLine, truncate } from './view-model.js';

export interface EventsPaneProps {
  entries: readonly FeedEntry[];
  lines: number;
  width: number;
  color: boolean;
}

const LEVEL_COLOR = { info: undefined, warn: 'yellow', error: 'red' } as const;

export function EventsPane({ entries, lines, width, color }: EventsPaneProps) {
  const shown = entries.slice(Math.max(0, entries.length - lines));
  return (
    <Box flexDirection="column">
      <StyledLine line={styledLine([{ text: truncate(`─ events ${'─'.repeat(Math.max(0, width - 9))}`, width), bold: true }], color)} />
      {shown.length === 0 ? <StyledLine line={styledLine([{ text: '(no events yet)', dim: true }], color)} /> : null}
      {shown.map((entry, i) => (
        <StyledLine key={`${entry.at}-${i}`} line={styledLine([{ text: entryLine(entry, width), color: LEVEL_COLOR[entry.level] }], color)} />
      ))}
    </Box>
  );
}
