/**
 * The selected pod's `status --explain` view inside the watch screen (⏎ or `d`): the same text as
 * `podctl status NS/POD --explain` — state, what it waits for, the cause that holds it and the next
 * step, the engine's predicates and the timeline — for the pod as the last listing shows it, so it
 * stays live. ↑/↓ (j/k, PgUp/PgDn) scroll; any other key goes back to the table.
 *
 * Invariants: every line fits the width (truncated, never wrapped); the view is at most `height`
 * lines; a pod that left the listing says so instead of showing stale facts.
 */
import { Box, Text } from 'ink';
import type { PodInfo } from '../domain/session-api.js';
import type { NodeFacts } from '../services/diagnose/status.js';
import { explainText } from '../services/diagnose/output.js';
import type { ScreenRules } from '../services/watch/screen-rules.js';
import { createStyler } from '../lib/output.js';
import { truncate } from './view-model.js';

export interface ExplainViewProps {
  pod: PodInfo | undefined;
  ref: string;
  now: number;
  /** The explanation of a pod, as `status --explain` gives it (the watch service's rules). */
  rules: ScreenRules;
  facts?: NodeFacts | undefined;
  scroll: number;
  width: number;
  height: number;
  color: boolean;
}

const plain = createStyler(false);

/** The lines of the view: the explanation's text, or why there is none. */
function explainLines(pod: PodInfo | undefined, ref: string, now: number, rules: ScreenRules, facts?: NodeFacts): string[] {
  if (pod === undefined) return [`${ref}: no longer listed on this node (gone from the runtime and the state directory)`];
  return explainText(rules.explain(pod, now, facts), plain, now).split('\n');
}

export function ExplainView({ pod, ref, now, rules, facts, scroll, width, height, color }: ExplainViewProps) {
  const lines = explainLines(pod, ref, now, rules, facts);
  const room = Math.max(1, height - 2);
  const top = Math.min(scroll, Math.max(0, lines.length - room));
  const shown = lines.slice(top, top + room);
  const below = lines.length - top - shown.length;
  const where = top > 0 || below > 0 ? ` · lines ${top + 1}–${top + shown.length} of ${lines.length}` : '';
  return (
    <Box flexDirection="column">
      <Text bold={color} wrap="truncate">
        {truncate(`podctl watch · explain ${ref}${where}`, width)}
      </Text>
      {shown.map((line, i) => (
        <Text key={i} wrap="truncate">
          {truncate(line, width)}
        </Text>
      ))}
      <Text dimColor={color} wrap="truncate">
        {truncate('↑/↓ j/k scroll · any other key: back to the table', width)}
      </Text>
    </Box>
  );
}
