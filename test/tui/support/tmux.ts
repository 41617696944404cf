/**
 * Shared by the tmux tests of `podctl watch`: the terminal sizes every one of them runs at (the
 * 80×24 of a default terminal and a 160×40 one), polling a pane until the screen holds what is
 * awaited (bounded: a hang fails with the last screen, never a timed assertion), and reading pod
 * rows off a captured screen.
 */
import { waitForText } from '../../support/wait.js';

/** The sizes the watch screen is tested at. */
export const TMUX_SIZES: readonly { cols: number; rows: number }[] = [
  { cols: 80, rows: 24 },
  { cols: 160, rows: 40 },
];

/** One tmux pane: its screen, keys typed into it, and a bounded wait for a screen. */
export function tmuxTerminal(tmux: (...args: string[]) => string, target: string) {
  const screen = () => tmux('capture-pane', '-p', '-t', target);
  return {
    screen,
    keys: (...k: string[]) => tmux('send-keys', '-t', target, ...k),
    /** Polls the pane until `predicate` holds (bounded: a hang fails with the last screen); returns that screen. */
    until: (predicate: (s: string) => boolean, what: string, timeoutMs = 15_000): Promise<string> => waitForText(what, screen, predicate, timeoutMs),
  };
}

/** The table row of the pod `ref` (`namespace/name`, whole), or undefined when none shows it. */
export function rowOf(screen: string, ref: string): string | undefined {
  return screen.split('\n').find((line) => /^(▶ | {2})/.test(line) && line.slice(2).split(/\s+/)[0] === ref);
}

/**
 * The pod `ref` has exactly one table row, its whole name first and its state after it, within
 * `cols` columns: it is told apart from the others at this width (not cut, not wrapped).
 */
export function onOneLine(screen: string, ref: string, cols: number): boolean {
  const rows = screen.split('\n').filter((line) => /^(▶ | {2})/.test(line) && line.slice(2).split(/\s+/)[0] === ref);
  const [row] = rows;
  return rows.length === 1 && row !== undefined && row.length <= cols && /^(▶ | {2})\S+ +(sync|terminating|terminated|finished|runtime)\b/.test(row);
}
