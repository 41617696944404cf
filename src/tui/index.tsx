/**
 * The watch screen's facade: `renderWatch()` mounts the Ink app on the terminal and resolves when the
 * operator quits or the signal aborts. This module (and through it Ink and React) is only ever loaded
 * with a dynamic import by the watch service.
 *
 * Invariants:
 * - On a terminal the screen uses the alternate screen buffer, so the shell's scrollback is intact
 *   after quitting; it is restored however the app ends.
 * - Frames are composed by frame-output.ts (the same string as Ink's, rows that did not change
 *   reused) wherever it agrees with Ink's own composer on a sample.
 * - Ctrl+C quits like `q` when the keyboard is in raw mode; without raw mode the process's SIGINT
 *   handling aborts the signal, which unmounts the app.
 * - On a terminal a frame sends only the lines that differ from the last frame's (frame-writer.ts): a
 *   clock tick that moves one row's age sends that row, not the whole screen.
 */
import { render } from 'ink';
import type { KillHandle, KillRequest } from '../domain/session-api.js';
import type { ScreenRules } from '../services/watch/screen-rules.js';
import { LineDiffTerminal } from './frame-writer.js';
import { installComposer, loadInkOutput } from './ink-output.js';
import { WatchApp, type FactsSource, type RuntimeSource, type WatchSource } from './WatchApp.js';

export interface RenderWatchOptions {
  source: WatchSource;
  requestKill: (request: KillRequest) => Promise<KillHandle>;
  /** What the features say of a pod (services/watch/screen-rules.ts). */
  rules: ScreenRules;
  color: boolean;
  node?: string;
  kubelet?: string;
  /** The node's facts for pods on their way out (watch-facts.ts). */
  facts?: FactsSource;
  /** Whether the runtime answers (services/runtime/runtime-probe.ts): a banner while it does not. */
  runtime?: RuntimeSource;
  /** Which pods are shown (`namespace kube-system · -l app=x`), when not the whole node. */
  scope?: string;
  stdout: NodeJS.WriteStream;
  stdin?: NodeJS.ReadStream;
  stderr?: NodeJS.WriteStream;
  signal: AbortSignal;
}

const ENTER_ALT_SCREEN = '\u001b[?1049h\u001b[H';
const LEAVE_ALT_SCREEN = '\u001b[?1049l';

/** Shows the screen until quit ('quit') or the signal aborts ('signal'). */
export async function renderWatch(options: RenderWatchOptions): Promise<'quit' | 'signal'> {
  const { stdout, signal } = options;
  if (signal.aborted) return 'signal';
  // Ink's frame composer replaced by one that reuses unchanged rows (ink-output.ts); Ink's own if not
  installComposer(await loadInkOutput());
  const altScreen = stdout.isTTY === true;
  if (altScreen) stdout.write(ENTER_ALT_SCREEN);
  // on the alternate screen the frame is all there is: each frame sends the lines that changed
  const terminal = altScreen ? new LineDiffTerminal(stdout) : undefined;
  let endedBy: 'quit' | 'signal' = 'quit';
  const instance = render(
    <WatchApp
      source={options.source}
      requestKill={options.requestKill}
      rules={options.rules}
      color={options.color}
      {...(options.node !== undefined ? { node: options.node } : {})}
      {...(options.kubelet !== undefined ? { kubelet: options.kubelet } : {})}
      {...(options.facts !== undefined ? { facts: options.facts } : {})}
      {...(options.runtime !== undefined ? { runtime: options.runtime } : {})}
      {...(options.scope !== undefined ? { scope: options.scope } : {})}
    />,
    {
      stdout: (terminal as unknown as NodeJS.WriteStream | undefined) ?? stdout,
      ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
      ...(options.stderr !== undefined ? { stderr: options.stderr } : {}),
      exitOnCtrlC: true,
      patchConsole: true,
      // The frame gate paces the feed's changes (10 frames a second, within its budget); Ink's own
      // output throttle only coalesces bursts of keys. At Ink's 10 a second it held a frame the gate
      // had passed up to 100 ms behind the last key's or the clock's.
      maxFps: 30,
    },
  );
  const onAbort = () => {
    endedBy = 'signal';
    instance.unmount();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await instance.waitUntilExit();
  } finally {
    signal.removeEventListener('abort', onAbort);
    instance.cleanup();
    terminal?.close();
    if (altScreen) stdout.write(LEAVE_ALT_SCREEN);
  }
  return endedBy;
}
