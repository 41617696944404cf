/**
 * The `?` screen: every key with what it does, and what the colours mean. Any key closes it.
 */
import { Box, Text } from 'ink';
import { truncate } from './view-model.js';

const HELP_KEYS: readonly (readonly [string, string])[] = [
  ['↑/↓ j/k', 'select a pod (PgUp/PgDn, Home/End: by pages, to the ends)'],
  ['⏎ or d', "the selected pod's --explain view: predicates, what it waits for, timeline (any key closes it)"],
  ['ctrl-k', 'kill the selected pod: asks the grace period, then confirmation'],
  ['e', 'evict the selected pod (its own grace), after confirmation'],
  ['g', 'shorten the grace of a terminating pod (grace only shrinks)'],
  ['/', 'filter by namespace/name or state; ⏎ keeps it, esc clears it'],
  ['s', 'sort by: state → time in state → grace left → name'],
  ['esc', 'clear the filter'],
  ['?', 'this help (any key closes it)'],
  ['q', 'quit'],
];

export function HelpOverlay({ width, color }: { width: number; color: boolean }) {
  return (
    <Box flexDirection="column">
      <Text bold={color}>{truncate('podctl watch — keys', width)}</Text>
      {HELP_KEYS.map(([key, what]) => (
        <Text key={key} wrap="truncate">
          <Text color={color ? 'cyan' : undefined}>{key.padEnd(15)}</Text>
          {truncate(what, Math.max(0, width - 15))}
        </Text>
      ))}
      <Text wrap="truncate">
        {'states: '}
        <Text color={color ? 'green' : undefined}>sync</Text> <Text color={color ? 'yellow' : undefined}>terminating</Text> <Text color={color ? 'red' : undefined}>terminated</Text>{' '}
        <Text color={color ? 'gray' : undefined}>finished</Text> <Text color={color ? 'magenta' : undefined}>runtime</Text>
        {' (runtime: no worker tracks it)'}
      </Text>
    </Box>
  );
}
