import { Text } from 'ink';
import { cleanup, render } from 'ink-testing-library';
import { afterEach, describe, expect, it } from 'vitest';
import { useTicker } from '../../src/tui/use-ticker.js';

afterEach(() => cleanup());

const renders = { n: 0 };
function Clock({ version, active, intervalMs }: { version: number; active: boolean; intervalMs: number }) {
  renders.n += 1;
  const at = useTicker(active, intervalMs, () => renders.n);
  return <Text>{`v${version} at ${at}`}</Text>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('useTicker', () => {
  it('ticks intervalMs after the last frame: frames drawn for changes count as ticks, and it goes on ticking when they stop', async () => {
    renders.n = 0;
    const app = render(<Clock version={0} active={true} intervalMs={80} />);
    // a change every 20 ms for 400 ms: every frame is a change's, none the clock's
    for (let v = 1; v <= 20; v += 1) {
      await sleep(20);
      app.rerender(<Clock version={v} active={true} intervalMs={80} />);
    }
    // 1 first frame + 20 changes; a ticker on a fixed timer would have added ~5 frames
    expect(renders.n).toBeLessThanOrEqual(22);
    const afterChanges = renders.n;
    // changes stop: the clock redraws on its own, about every 80 ms
    await sleep(400);
    expect(renders.n - afterChanges).toBeGreaterThanOrEqual(3);
    expect(renders.n - afterChanges).toBeLessThanOrEqual(6);
  });

  it('reports what each frame drawn for the clock cost, from its tick to the effects after the frame', async () => {
    let cpu = 0;
    const drawn: number[] = [];
    function Metered() {
      // each render "costs" 3 ms of the meter's clock
      cpu += 3;
      const at = useTicker(true, 30, () => cpu, { cost: () => cpu, drawn: (ms) => drawn.push(ms) });
      return <Text>{`at ${at}`}</Text>;
    }
    render(<Metered />);
    await sleep(200);
    // the first frame was no tick's: nothing reported for it; each tick's frame cost its render
    expect(drawn.length).toBeGreaterThanOrEqual(2);
    expect(new Set(drawn)).toEqual(new Set([3]));
  });

  it('does not tick while inactive', async () => {
    renders.n = 0;
    render(<Clock version={0} active={false} intervalMs={20} />);
    await sleep(150);
    expect(renders.n).toBe(1);
  });
});
