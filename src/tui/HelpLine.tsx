/**
 * The bottom line: the prompt or confirmation when one is open, else the last message above the key
 * summary. Without a keyboard (stdin not a terminal) it says the screen is read-only.
 */
import { StyledLine, styledLine, type Span } from './StyledLine.js';
import { truncate } from './view-model.js';

export interface HelpLineProps {
  prompt?: string;
  message?: { text: string; level: 'info' | 'warn' | 'error' };
  interactive: boolean;
  width: number;
  color: boolean;
}

const KEY_SUMMARY = '↑/↓ j/k select · ⏎ explain · ^k kill · e evict · g shorten grace · / filter · s sort · ? help · q quit';

export function HelpLine({ prompt, message, interactive, width, color }: HelpLineProps) {
  if (prompt !== undefined) {
    return <StyledLine line={styledLine([{ text: truncate(prompt, width), color: 'cyan', bold: true }], color)} />;
  }
  const keys = interactive ? KEY_SUMMARY : 'read-only: stdin is not a terminal · Ctrl+C quits';
  const msgColor = message?.level === 'error' ? 'red' : message?.level === 'warn' ? 'yellow' : 'green';
  const spans: Span[] = message !== undefined ? [{ text: truncate(`${message.text} · `, width), color: msgColor }] : [];
  spans.push({ text: truncate(keys, Math.max(0, width - (message ? message.text.length + 3 : 0))), dim: true });
  return <StyledLine line={styledLine(spans, color)} />;
}
