import { Box } from 'ink';
import { cleanup, render } from 'ink-testing-library';
import { afterEach, describe, expect, it } from 'vitest';
import { cachedRow, PodRow, sameRow } from '../../src/tui/PodRow.js';
import { tableLayout } from '../../src/tui/view-model.js';
import { pod } from './support/fake-session.js';
import { screenRules } from '../../src/services/watch/screen-rules.js';

afterEach(() => cleanup());

describe('pod row memo', () => {
  const layout = tableLayout(160);
  const now = 100_000;

  it('computes a row once per pod object, layout and clock', () => {
    const p = pod('default/a');
    const first = cachedRow(p, layout, now, screenRules);
    expect(cachedRow(p, layout, now, screenRules)).toBe(first);
    expect(cachedRow(p, layout, now + 1_000, screenRules)).not.toBe(first);
    expect(cachedRow(p, tableLayout(100), now + 1_000, screenRules)).not.toBe(first);
  });

  it("keeps a row whose time in state alone moves with the clock across ticks, and writes that cell from the frame's clock", () => {
    const clock = { at: now };
    const p = pod('default/a', { since: now - 5_000 });
    const first = cachedRow(p, layout, now, screenRules, undefined, clock);
    // the same row a second later: not made again, and a redraw of it is skipped
    expect(cachedRow(p, layout, now + 1_000, screenRules, undefined, clock)).toBe(first);
    const props = { pod: p, layout, now, selected: true, color: true, rules: screenRules, clock };
    expect(sameRow(props, { ...props, now: now + 1_000 })).toBe(true);
    // a pod of the same content from a new listing is not redrawn either; one that started later is
    expect(sameRow(props, { ...props, pod: { ...p }, now: now + 1_000 })).toBe(true);
    expect(sameRow(props, { ...props, pod: { ...p, since: now - 4_000 }, now: now + 1_000 })).toBe(false);
    // what the row writes reads the frame's clock: the cell a row made at that reading holds
    // as the screen draws it: its parent renders at each tick, the row is kept
    const Table = ({ at }: { at: number }) => <Box flexDirection="column">{at > 0 ? <PodRow {...props} now={at} /> : null}</Box>;
    const app = render(<Table at={now} />);
    const at = (ms: number) => {
      clock.at = ms;
      app.rerender(<Table at={ms} />);
      return app.lastFrame() ?? '';
    };
    const drawnAt = (ms: number) => {
      const model = render(<PodRow {...props} clock={undefined} now={ms} />);
      return model.lastFrame() ?? '';
    };
    for (const ms of [now, now + 1_000, now + 2_000, now + 61_000]) expect(at(ms)).toBe(drawnAt(ms));
    expect(at(now + 2_000)).toMatch(/\s7s\s/);
    // a terminating pod's row, and a pod on its way out (its cause may move with the clock), are made per clock reading
    const t = pod('default/t', { state: 'terminating', gracePeriod: 30, graceDeadline: now + 15_000, since: now - 15_000 });
    expect(cachedRow(t, layout, now + 1_000, screenRules, undefined, clock)).not.toBe(cachedRow(t, layout, now, screenRules, undefined, clock));
    const gone = pod('default/g', { state: 'terminated', since: now - 5_000 });
    expect(cachedRow(gone, layout, now + 1_000, screenRules, undefined, clock)).not.toBe(cachedRow(gone, layout, now, screenRules, undefined, clock));
  });

  it('splits the countdown bar of a terminating pod into the share left and the share spent', () => {
    const t = pod('default/a', { state: 'terminating', gracePeriod: 30, graceDeadline: now + 15_000, since: now - 15_000, owner: { pid: 42, startedAt: 0, heartbeatAt: 0, alive: true } });
    const { segments } = cachedRow(t, layout, now, screenRules);
    expect(segments.filter((s) => s.bar !== undefined)).toEqual([
      { text: '█████', bar: 'left' },
      { text: '░░░░░', bar: 'spent' },
    ]);
    // the seconds after the bar keep the state's colour
    expect(segments.find((s) => s.text.startsWith(' 15s'))).toMatchObject({ color: 'yellow' });
    // a pod with no countdown has no bar
    expect(cachedRow(pod('default/b'), layout, now, screenRules).segments.some((s) => s.bar !== undefined)).toBe(false);
  });

  it('skips a redraw only when the row would read the same', () => {
    const a = pod('default/a', { since: now - 90_000 });
    const props = { pod: a, layout, now, selected: false, color: true, rules: screenRules };
    // A new listing gives a new object with the same content: no redraw.
    expect(sameRow(props, { ...props, pod: { ...a } })).toBe(true);
    // A second later a synced pod still reads "1m": no redraw either.
    expect(sameRow(props, { ...props, now: now + 1_000 })).toBe(true);
    // A new state, a new selection, or a countdown second: redraw.
    expect(sameRow(props, { ...props, pod: { ...a, state: 'terminating' } })).toBe(false);
    expect(sameRow(props, { ...props, selected: true })).toBe(false);
    const t = { ...a, state: 'terminating' as const, gracePeriod: 30, graceDeadline: now + 20_000 };
    expect(sameRow({ ...props, pod: t }, { ...props, pod: t, now: now + 1_000 })).toBe(false);
  });
});

describe('pod row text', () => {
  // ink-testing-library draws 100 columns
  const layout = tableLayout(100);
  const now = 100_000;
  const terminating = pod('default/a', { state: 'terminating', gracePeriod: 30, graceDeadline: now + 15_000, since: now - 15_000, owner: { pid: 42, startedAt: 0, heartbeatAt: 0, alive: true } });
  const drawn = (color: boolean, selected = false) => render(<PodRow pod={terminating} rules={screenRules} layout={layout} now={now} selected={selected} color={color} />).lastFrame() ?? '';

  it('draws the bar in colour with blanks on yellow and grey', () => {
    expect(layout.barWidth).toBe(10);
    const written = drawn(true);
    // five cells of the grace left on yellow, five spent on grey
    expect(written).toContain('\u001b[43m     \u001b[90m\u001b[100m     \u001b[49m');
    const row = written.replace(/\u001b\[[0-9;]*m/g, '');
    expect(row).toMatch(/^[\x20-\x7e]+$/);
    // the seconds stay where the characters would put them
    expect(row.indexOf(' 15s')).toBe(drawn(false).indexOf(' 15s'));
    expect(row).toMatch(/terminating {12}15s/);
  });

  it('draws the bar with characters without colour', () => {
    expect(drawn(false)).toMatch(/terminating █████░░░░░ 15s/);
  });
});
