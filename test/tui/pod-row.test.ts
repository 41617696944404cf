import { describe, expect, it } from 'vitest';
import { cachedRow, sameRow } from '../../src/tui/PodRow.js';
import { tableLayout } from '../../src/tui/view-model.js';
import { pod } from './support/fake-session.js';

describe('pod row memo', () => {
  const layout = tableLayout(160);
  const now = 100_000;

  it('computes a row once per pod object, layout and clock', () => {
    const p = pod('default/a');
    const first = cachedRow(p, layout, now);
    expect(cachedRow(p, layout, now)).toBe(first);
    expect(cachedRow(p, layout, now + 1_000)).not.toBe(first);
    expect(cachedRow(p, tableLayout(100), now + 1_000)).not.toBe(first);
  });

  it('skips a redraw only when the row would read the same', () => {
    const a = pod('default/a', { since: now - 90_000 });
    const props = { pod: a, layout, now, selected: false, color: true };
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
