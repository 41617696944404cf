/**
 * The latest transitions and events, newest last, one line each; errors in red, warnings in yellow.
 * Hidden by the app on short terminals.
 */
import { Box, Text } from 'ink';
import type { FeedEntry } from '../services/watch/watch-entries.js';
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
      <Text wrap="truncate" bold={color}>
        {truncate(`─ events ${'─'.repeat(Math.max(0, width - 9))}`, width)}
      </Text>
      {shown.length === 0 ? <Text dimColor={color}>(no events yet)</Text> : null}
      {shown.map((entry, i) => (
        <Text key={`${entry.at}-${i}`} wrap="truncate" color={color ? LEVEL_COLOR[entry.level] : undefined}>
          {entryLine(entry, width)}
        </Text>
      ))}
    </Box>
  );
}
