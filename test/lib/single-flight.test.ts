import { describe, expect, it } from 'vitest';
import { SingleFlight } from '../../src/lib/single-flight.js';

/** A run whose end the test decides; counts runs and the most ever in flight at once. */
function controlled() {
  const ends: { resolve: () => void; reject: (e: Error) => void }[] = [];
  let running = 0;
  let most = 0;
  let runs = 0;
  const run = (): Promise<void> => {
    runs += 1;
    running += 1;
    most = Math.max(most, running);
    return new Promise<void>((resolve, reject) => ends.push({ resolve, reject })).finally(() => {
      running -= 1;
    });
  };
  return { run, ends, stats: () => ({ runs, most }) };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('SingleFlight', () => {
  it('runs at once when idle, and callers asking meanwhile share one follow-up run', async () => {
    const c = controlled();
    const flight = new SingleFlight(c.run);
    const first = flight.request();
    const a = flight.request();
    const b = flight.request();
    expect(a).toBe(b);
    expect(c.stats().runs).toBe(1);
    c.ends[0]!.resolve();
    await first;
    await tick();
    expect(c.stats().runs).toBe(2);
    c.ends[1]!.resolve();
    await Promise.all([a, b]);
    expect(c.stats()).toEqual({ runs: 2, most: 1 });
  });

  it('never runs two at once, also for a caller arriving as one run ends and the next is due', async () => {
    const c = controlled();
    const flight = new SingleFlight(c.run);
    void flight.request();
    const queued = flight.request();
    c.ends[0]!.resolve();
    // ask in every microtask around the hand-over from the first run to the queued one
    const late: Promise<void>[] = [];
    for (let i = 0; i < 10; i++) {
      late.push(flight.request());
      await Promise.resolve();
    }
    // end every run as it comes, until every caller has its answer
    let settled = false;
    void Promise.all([queued, ...late]).then(() => (settled = true));
    for (let i = 0; i < 50 && !settled; i++) {
      for (const end of c.ends) end.resolve();
      await tick();
    }
    expect(settled).toBe(true);
    expect(c.stats().most).toBe(1);
    // the first run, the queued one, and at most one more for callers that came after it started
    expect(c.stats().runs).toBeLessThanOrEqual(3);
  });

  it('joins a run in flight that started late enough, and queues behind one that did not', async () => {
    let now = 100;
    const c = controlled();
    const flight = new SingleFlight(c.run, () => now);
    const inFlight = flight.request();
    expect(flight.request(100)).toBe(inFlight);
    expect(flight.request(50)).toBe(inFlight);
    now = 200;
    const later = flight.request(150);
    expect(later).not.toBe(inFlight);
    c.ends[0]!.resolve();
    await inFlight;
    await tick();
    expect(c.stats().runs).toBe(2);
    c.ends[1]!.resolve();
    await later;
  });

  it('a failed run rejects only its own callers; the one queued behind it still runs', async () => {
    const c = controlled();
    const flight = new SingleFlight(c.run);
    const failing = flight.request();
    const queued = flight.request();
    c.ends[0]!.reject(new Error('disk full'));
    await expect(failing).rejects.toThrow('disk full');
    await tick();
    expect(flight.running).toBe(true);
    c.ends[1]!.resolve();
    await expect(queued).resolves.toBeUndefined();
    expect(flight.running).toBe(false);
  });
});
