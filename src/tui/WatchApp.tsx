/**
 * The watch screen: header, pod table, events pane and help line, laid out for the terminal's size,
 * with the keys of `controller.ts`. It reads immutable snapshots from the feed and only runs the
 * controller's effects: quitting, and kill requests through the session (the same path as `podctl
 * kill` / `evict`).
 *
 * Invariants:
 * - Keys are read only when stdin supports raw mode; otherwise the screen is read-only (no crash).
 * - Redraws happen on a new snapshot (at most one per `frameIntervalMs`, see frame-gate.ts), a key, a resize, and on a tick: a second after the
 *   last frame (never sooner than the frame gate's interval) while any duration shown counts seconds (a countdown, a time in state under a
 *   minute, the runtime's silence: countsSeconds), else a minute after it (time in state is shown in minutes past the first).
 * - Every line fits the terminal width, and the frame is one line shorter than the terminal.
 */
import { useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import { Box, useApp, useInput, useStdin } from 'ink';
import type { KillHandle, KillRequest, PodInfo } from '../domain/session-api.js';
import type { FeedEntry } from '../services/watch/watch-entries.js';
import type { NodeFacts } from '../services/diagnose/status.js';
import type { RuntimeHealth } from '../services/runtime/runtime-probe.js';
import type { ScreenRules } from '../services/watch/screen-rules.js';
import { countWorkingPods } from '../metrics/working-pods.js';
import { initialUiState, promptText, reduceKey, selectedIndex, splitKeys, type Effect, type UiState } from './controller.js';
import { EventsPane } from './EventsPane.js';
import { ExplainView } from './ExplainView.js';
import { DEFAULT_FRAME_INTERVAL_MS, FrameGate } from './frame-gate.js';
import { Header } from './Header.js';
import { HelpLine } from './HelpLine.js';
import { HelpOverlay } from './HelpOverlay.js';
import { PodTable } from './PodTable.js';
import { useSnapshot, type SnapshotSource } from './use-snapshot.js';
import { useTerminalSize, type TerminalSize } from './use-terminal-size.js';
import { useTicker } from './use-ticker.js';
import { countsSeconds, filterPods, formatDuration, nameNeed, screenLayout, sortPods, tableLayout, tableWindow } from './view-model.js';

export interface WatchSource extends SnapshotSource {
  /** Adds a line to the events pane. */
  note(entry: Omit<FeedEntry, 'at'> & { at?: number }): void;
}

/** The node's facts for pods on their way out, re-gathered by the watch service (watch-facts.ts). */
export interface FactsSource {
  current(): NodeFacts | undefined;
  subscribe(listener: () => void): () => void;
}

const NO_FACTS_SOURCE: FactsSource = { current: () => undefined, subscribe: () => () => undefined };

/** Whether the runtime answers (services/runtime/runtime-probe.ts). */
export interface RuntimeSource {
  current(): RuntimeHealth;
  subscribe(listener: () => void): () => void;
}

const ANSWERING: RuntimeHealth = { answering: true, since: 0 };
const NO_RUNTIME_SOURCE: RuntimeSource = { current: () => ANSWERING, subscribe: () => () => undefined };

export interface WatchAppProps {
  source: WatchSource;
  /** What the features say of a pod (services/watch/screen-rules.ts): the screen decides none of it. */
  rules: ScreenRules;
  facts?: FactsSource;
  runtime?: RuntimeSource;
  /** Which pods are shown, when not the whole node (for the header). */
  scope?: string;
  requestKill: (request: KillRequest) => Promise<KillHandle>;
  node?: string;
  /** The kubelet's state, for the header. */
  kubelet?: string;
  color: boolean;
  now?: () => number;
  /** Fixed terminal size (tests); default: the output stream's size, following resizes. */
  size?: TerminalSize;
  /** Countdown redraw period while something terminates (ms); default 1000. */
  tickMs?: number;
  /** Redraw period otherwise, for the time-in-state column (ms); default 60 000. */
  idleTickMs?: number;
  onQuit?: () => void;
  /** Minimum time between two redraws for feed changes (ms); default 100 (≤ 10 frames a second). */
  frameIntervalMs?: number;
}

export function WatchApp(props: WatchAppProps) {
  const now = props.now ?? Date.now;
  // Feed changes reach the screen through the frame gate: ≤ 10 frames a second, the latest state each.
  const { gate, snapshot } = useGatedSnapshot(props.source, props.frameIntervalMs ?? DEFAULT_FRAME_INTERVAL_MS);
  const facts = useSourceValue(props.facts ?? NO_FACTS_SOURCE);
  const runtime = useSourceValue(props.runtime ?? NO_RUNTIME_SOURCE);
  const { columns, rows } = useTerminalSize(props.size);
  const { isRawModeSupported } = useStdin();
  const interactive = isRawModeSupported === true;
  const { exit } = useApp();
  const { ui, uiRef, updateUi } = useUiState();

  // A duration that counts seconds (a countdown, a time in state under a minute, the runtime's
  // silence) needs a redraw every second, or as often as the clock's share of the drawing budget
  // allows frames (frame-gate.ts: 500 rows can cost tens of ms); otherwise only the minutes move.
  const counting = !runtime.answering || countsSeconds(snapshot.pods, now());
  const countdownMs = Math.max(props.tickMs ?? 1000, gate.clockInterval());
  const at = useTicker(true, counting ? countdownMs : (props.idleTickMs ?? 60_000), now, gate.clockMeter);
  const table = useTableView(snapshot.pods, ui, { columns, rows }, at);

  const runEffect = (effect: Effect) => {
    if (effect.type !== 'quit') return requestFromScreen(props, effect, updateUi);
    props.onQuit?.();
    exit();
  };
  useKeys({ interactive, visible: table.visible, now, pageSize: Math.max(1, table.screen.tableRows - 1), rules: props.rules, uiRef, updateUi, runEffect });

  if (ui.mode.kind === 'explain') {
    const uid = ui.mode.uid;
    return (
      <Box flexDirection="column" width={columns}>
        <ExplainView
          pod={snapshot.pods.find((p) => p.uid === uid)}
          ref={ui.mode.ref}
          now={at}
          rules={props.rules}
          facts={facts}
          scroll={ui.mode.scroll}
          width={columns}
          height={rows - 1}
          color={props.color}
        />
      </Box>
    );
  }

  if (ui.mode.kind === 'help') {
    return (
      <Box flexDirection="column" width={columns}>
        <HelpOverlay width={columns} color={props.color} />
      </Box>
    );
  }

  const { screen, visible } = table;
  const emptyText = snapshot.listedAt === 0 ? 'listing pods…' : ui.filter ? `no pod matches "${ui.filter}"` : 'no pods on this node';
  return (
    <Box flexDirection="column" width={columns}>
      <Header
        node={props.node}
        {...(props.kubelet !== undefined ? { kubelet: props.kubelet } : {})}
        endpoint={snapshot.endpoint}
        simulated={snapshot.simulated}
        counts={table.counts}
        width={columns}
        compact={screen.headerLines < 2}
        sort={ui.sort}
        filter={ui.filter}
        shown={visible.length}
        listError={snapshot.listError}
        {...(props.scope !== undefined ? { scope: props.scope } : {})}
        {...(runtime.answering ? {} : { runtimeDown: `runtime not answering for ${formatDuration(at - runtime.since)}: ${runtime.error ?? 'no answer'} · the table shows the last listing` })}
        color={props.color}
      />
      <PodTable pods={visible} {...table.rows} color={props.color} emptyText={emptyText} rules={props.rules} facts={facts} />
      {screen.eventLines > 0 ? <EventsPane entries={snapshot.entries} lines={screen.eventLines} width={columns} color={props.color} /> : null}
      {screen.showHelpLine || promptText(ui.mode) !== undefined ? <HelpLine prompt={promptText(ui.mode)} message={ui.message} interactive={interactive} width={columns} color={props.color} /> : null}
    </Box>
  );
}

/** The feed's snapshot through a frame gate (closed on unmount): at most one new snapshot per `intervalMs`, the latest state each. */
function useGatedSnapshot(source: WatchSource, intervalMs: number) {
  const gate = useMemo(() => new FrameGate(source, { intervalMs }), [source, intervalMs]);
  useEffect(() => () => gate.close(), [gate]);
  return { gate, snapshot: useSnapshot(gate) };
}

/** The current value of a source that says when it changes (the node's facts, the runtime's health); re-renders on each change. */
function useSourceValue<T>(source: { current(): T; subscribe(listener: () => void): () => void }): T {
  return useSyncExternalStore(
    (onChange) => source.subscribe(onChange),
    () => source.current(),
  );
}

type UpdateUi = (next: (s: UiState) => UiState) => void;

/** The screen's UI state. Keys can arrive faster than renders: each update reduces the latest state (`uiRef`), not the rendered one. */
function useUiState(): { ui: UiState; uiRef: { readonly current: UiState }; updateUi: UpdateUi } {
  const [ui, setUi] = useState<UiState>(initialUiState);
  const uiRef = useRef(ui);
  const updateUi: UpdateUi = (next) => {
    uiRef.current = next(uiRef.current);
    setUi(uiRef.current);
  };
  return { ui, uiRef, updateUi };
}

/**
 * The table's view of the pods: the working counts, the pods shown (filtered, sorted), the screen's
 * layout and the scroll window that keeps the selection in sight (it moves only as far as needed);
 * `rows`, what the table draws its rows with, holds the frame's clock (PodRow's FrameClock: one
 * object for the screen's life, this render's reading), which rows whose time in state alone moves
 * read when the frame is composed.
 */
function useTableView(pods: readonly PodInfo[], ui: UiState, size: { columns: number; rows: number }, at: number) {
  const topRef = useRef(0);
  const clock = useRef({ at }).current;
  clock.at = at;
  const counts = useMemo(() => countWorkingPods(pods), [pods]);
  // only the grace sort reads the clock: a tick alone does not sort the pods again for the others
  const sortClock = ui.sort === 'grace' ? at : 0;
  const visible = useMemo(() => sortPods(filterPods(pods, ui.filter), ui.sort, sortClock), [pods, ui.filter, ui.sort, sortClock]);
  const screen = screenLayout(size.rows);
  // One layout object per terminal width and name room: rows compare it by identity (PodRow's memo).
  const need = useMemo(() => nameNeed(pods), [pods]);
  const layout = useMemo(() => tableLayout(size.columns, need), [size.columns, need]);
  const selected = selectedIndex(ui, visible);
  const window = tableWindow(visible.length, selected, screen.tableRows, topRef.current);
  topRef.current = window.top;
  return { counts, visible, screen, rows: { layout, selected, window, now: at, clock } };
}

/** Sends a kill or eviction asked from the screen through the session, and says how it went in the events pane and the message line. */
function requestFromScreen(props: Pick<WatchAppProps, 'requestKill' | 'source'>, effect: Extract<Effect, { type: 'request' }>, updateUi: UpdateUi): void {
  const { request, ref, action } = effect;
  props.requestKill(request).then(
    (handle) => {
      const by = handle.handledBy === 'local' ? 'driven here' : `handed to owner pid ${handle.ownerPid}`;
      const grace = request.gracePeriodSeconds !== undefined ? ` grace ${request.gracePeriodSeconds}s` : '';
      const text = `${action} ${ref}${grace}: ${by}`;
      props.source.note({ source: 'watch', level: 'info', uid: request.uid, pod: ref, kind: `${action}-requested`, detail: `${grace.trim() || 'own grace'}, ${by}` });
      updateUi((s) => ({ ...s, message: { text, level: 'info' } }));
    },
    (err: unknown) => {
      const message = err instanceof Error ? err.message : String(err);
      props.source.note({ source: 'watch', level: 'error', uid: request.uid, pod: ref, kind: `${action}-failed`, detail: message });
      updateUi((s) => ({ ...s, message: { text: `${action} ${ref} failed: ${message}`, level: 'error' } }));
    },
  );
}

/** What the keys act on: the pods shown, the clock, the page size, the UI state and the effects' runner. */
interface KeyTargets {
  interactive: boolean;
  visible: readonly PodInfo[];
  now: () => number;
  pageSize: number;
  rules: ScreenRules;
  uiRef: { readonly current: UiState };
  updateUi: UpdateUi;
  runEffect: (effect: Effect) => void;
}

/** Reads keys only when stdin supports raw mode (`interactive`): each press reduces the latest UI state, pins the selection to a UID and runs its effect; a quit ends the batch. */
function useKeys(keys: KeyTargets): void {
  const { visible, uiRef, updateUi } = keys;
  useInput(
    (input, key) => {
      const ctx = { visible, now: keys.now(), pageSize: keys.pageSize, rules: keys.rules };
      for (const press of splitKeys({ ...key, input })) {
        const { state, effect } = reduceKey(uiRef.current, press, ctx);
        // Pin the selection to a UID so it survives re-sorting and new listings.
        const pinned = state.selectedUid === undefined && visible.length > 0 ? { ...state, selectedUid: visible[selectedIndex(state, visible)]!.uid } : state;
        updateUi(() => pinned);
        if (effect !== undefined) keys.runEffect(effect);
        if (effect?.type === 'quit') return;
      }
    },
    { isActive: keys.interactive },
  );
}
