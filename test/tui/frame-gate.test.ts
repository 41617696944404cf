import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FrameGate } from '../../src/tui/frame-gate.js';
import type { WatchSnapshot } from '../../src/services/watch/watch-feed.js';
import { holdThread } from '../support/hold.js';

/** A feed stand-in: publishes a new snapshot object (version n) on `bump()`. */
class Source {
  #version = 0;
  #snap = this.#make();
  #listeners = new Set<() => void>();
  #make(): WatchSnapshot {
    return Object.freeze({ version: this.#version, listedAt: 1, pods: [], entries: [], endpoint: 'sim', stateDir: '/s', simulated: true });
  }
  snapshot(): WatchSnapshot {
    return this.#snap;
  }
  subscribe(l: () => void): () => void {
    this.#listeners.add(l);
    return () => this.#listeners.delete(l);
  }
  bump(): void {
    this.#version += 1;
    this.#snap = this.#make();
    for (const l of this.#listeners) l();
  }
  get listeners(): number {
    return this.#listeners.size;
  }
}

describe('frame gate', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('passes a burst of changes as one frame at once and one at the end of the interval, the latest each time', async () => {
    const source = new Source();
    const gate = new FrameGate(source, { intervalMs: 100, costClock: () => performance.now() });
    const frames: number[] = [];
    gate.subscribe(() => frames.push(gate.snapshot().version));
    // 40 changes within 40 ms (a drain's transitions): the first at once, the rest coalesced.
    for (let i = 0; i < 40; i += 1) {
      source.bump();
      await vi.advanceTimersByTimeAsync(1);
    }
    expect(frames).toEqual([1]);
    await vi.advanceTimersByTimeAsync(60);
    expect(frames).toEqual([1, 40]);
    // Nothing pending, nothing running.
    expect(vi.getTimerCount()).toBe(0);
    gate.close();
    expect(source.listeners).toBe(0);
  });

  it('never passes more than one frame per interval over a long stream of changes', async () => {
    const source = new Source();
    const gate = new FrameGate(source, { intervalMs: 100, costClock: () => performance.now() });
    const at: number[] = [];
    gate.subscribe(() => at.push(Date.now()));
    for (let i = 0; i < 3_000; i += 1) {
      source.bump();
      await vi.advanceTimersByTimeAsync(1);
    }
    await vi.advanceTimersByTimeAsync(200);
    // 3 s of changes every millisecond: at most 10 frames a second (+ the leading one).
    expect(at.length).toBeLessThanOrEqual(31);
    expect(at.length).toBeGreaterThanOrEqual(29);
    for (let i = 1; i < at.length; i += 1) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(100);
    // The last frame shows the last change.
    expect(gate.snapshot().version).toBe(3_000);
    gate.close();
  });

  it('shows a change published before the screen subscribed, and a single change at once', async () => {
    const source = new Source();
    const gate = new FrameGate(source, { intervalMs: 100, costClock: () => performance.now() });
    source.bump();
    const frames: number[] = [];
    gate.subscribe(() => frames.push(gate.snapshot().version));
    expect(gate.snapshot().version).toBe(1);
    await vi.advanceTimersByTimeAsync(500);
    source.bump();
    expect(frames.at(-1)).toBe(2);
    gate.close();
  });

  it('lets frames drawn for the clock alone spend a smaller share than changes: a screen at rest stays under a hundredth of a core', async () => {
    const source = new Source();
    const gate = new FrameGate(source, { intervalMs: 100, budget: 0.03, costClock: () => performance.now() });
    let drawMs = 3;
    gate.subscribe(() => vi.advanceTimersByTime(drawMs));
    // no frame drawn yet: the clock may tick at the frame interval
    expect(gate.clockInterval()).toBe(100);
    source.bump();
    await vi.advanceTimersByTimeAsync(1);
    // a 3 ms frame: changes may come every 100 ms (3 % of a core), the clock alone every second (0.3 %)
    expect(gate.interval()).toBe(100);
    expect(gate.clockInterval()).toBe(1_000);
    // a 14 ms frame (500 rows): the clock ticks every two seconds at most, never slower
    drawMs = 14;
    await vi.advanceTimersByTimeAsync(3_000);
    source.bump();
    await vi.advanceTimersByTimeAsync(1);
    expect(gate.interval()).toBeCloseTo(14 / 0.03, 0);
    expect(gate.clockInterval()).toBe(2_000);
    expect(14 / gate.clockInterval()).toBeLessThan(0.01);
    // without a budget the clock keeps the frame interval
    expect(new FrameGate(source, { intervalMs: 100, budget: 0 }).clockInterval()).toBe(100);
    gate.close();
  });

  it('keeps the clock to its share by what the clock’s own frames cost, not by the last change’s frame', async () => {
    const source = new Source();
    const gate = new FrameGate(source, { intervalMs: 100, budget: 0.03, costClock: () => performance.now() });
    gate.subscribe(() => vi.advanceTimersByTime(1));
    source.bump();
    await vi.advanceTimersByTimeAsync(1);
    // a cheap change's frame (1 ms): the clock could tick at the frame interval's floor
    expect(gate.clockInterval()).toBeLessThan(400);
    // but the clock's own frames cost 5 ms each (500 rows whose ages move): it ticks every 1.7 s,
    // and at 14 ms every two seconds, never slower
    gate.clockMeter.drawn(5);
    expect(gate.clockInterval()).toBeCloseTo(5 / 0.003, 0);
    gate.clockMeter.drawn(14);
    expect(gate.clockInterval()).toBe(2_000);
    // the meter reads the gate's own CPU clock
    const before = gate.clockMeter.cost();
    vi.advanceTimersByTime(7);
    expect(gate.clockMeter.cost() - before).toBe(7);
    gate.close();
  });

  it('keeps a steady stream of costly frames within its budget, never more than two seconds apart, and ten a second when frames are cheap', async () => {
    const source = new Source();
    // the fake clock stands for the CPU a frame costs
    const gate = new FrameGate(source, { intervalMs: 100, budget: 0.1, costClock: () => performance.now() });
    const at: number[] = [];
    let drawMs = 25;
    // a screen that takes drawMs to draw each frame (the fake clock moves on while it draws)
    gate.subscribe(() => {
      at.push(Date.now());
      if (drawMs > 0) vi.advanceTimersByTime(drawMs);
    });
    expect(gate.interval()).toBe(100);
    const startedAt = Date.now();
    // 5 s of changes every millisecond (a drain)
    for (let i = 0; i < 5_000; i += 1) {
      source.bump();
      await vi.advanceTimersByTimeAsync(1);
    }
    const elapsed = Date.now() - startedAt;
    // drawing within a tenth of a core, plus the burst two seconds of budget allow (200 ms) and one frame
    expect(at.length * 25).toBeLessThanOrEqual(0.1 * elapsed + 200 + 25);
    // and not starved: about what the budget allows (a frame every 250 ms after the burst)
    expect(at.length * 25).toBeGreaterThanOrEqual(0.1 * elapsed - 50);
    for (let i = 1; i < at.length; i += 1) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(100);
    // the steady interval the screen's clock ticks at: the last frame's cost over the budget
    expect(gate.interval()).toBe(250);
    // a very slow frame: never more than two seconds to the next
    drawMs = 400;
    source.bump();
    await vi.advanceTimersByTimeAsync(2_200);
    source.bump();
    const slowAt = at.at(-1)!;
    await vi.advanceTimersByTimeAsync(2_100);
    expect(at.at(-1)! - slowAt).toBeLessThanOrEqual(2_000 + 400);
    expect(at.at(-1)).toBeGreaterThan(slowAt);
    expect(gate.interval()).toBe(2_000);
    // cheap frames: ten a second again
    drawMs = 0;
    await vi.advanceTimersByTimeAsync(3_000);
    const cheapFrom = at.length;
    for (let i = 0; i < 1_000; i += 1) {
      source.bump();
      await vi.advanceTimersByTimeAsync(1);
    }
    expect(at.length - cheapFrom).toBeGreaterThanOrEqual(9);
    expect(gate.interval()).toBe(100);
    expect(gate.snapshot().version).toBe(6_002);
    // without a budget the interval is fixed
    expect(new FrameGate(source, { intervalMs: 100, budget: 0 }).interval()).toBe(100);
    gate.close();
  });

  it('draws the first change after a quiet period at once, even right after a costly frame', async () => {
    const source = new Source();
    const gate = new FrameGate(source, { intervalMs: 100, budget: 0.03, costClock: () => performance.now() });
    const at: number[] = [];
    let drawMs = 45;
    gate.subscribe(() => {
      at.push(Date.now());
      vi.advanceTimersByTime(drawMs);
    });
    // the screen has been up a while: a 45 ms frame (500 pods on a loaded machine)
    await vi.advanceTimersByTimeAsync(5_000);
    source.bump();
    expect(at).toHaveLength(1);
    drawMs = 5;
    // 300 ms later, one change (an operator's kill): drawn at once, not 45 / 0.03 = 1.5 s after the frame
    await vi.advanceTimersByTimeAsync(300);
    const changedAt = Date.now();
    source.bump();
    await vi.advanceTimersByTimeAsync(0);
    expect(at).toHaveLength(2);
    expect(at[1]).toBe(changedAt);
    gate.close();
  });

  it("counts a frame's CPU, not the time it waited for a core: a frame drawn on a loaded machine keeps ten frames a second", async () => {
    vi.useRealTimers();
    const source = new Source();
    // a budget of half a core: a frame whose 300 ms off its core counted would stretch the interval to 600 ms
    const gate = new FrameGate(source, { intervalMs: 100, budget: 0.5 });
    const frames: number[] = [];
    gate.subscribe(() => {
      frames.push(gate.snapshot().version);
      // the drawing thread is off its core for 300 ms (blocked, as when other processes hold both cores)
      holdThread(300);
    });
    source.bump();
    await new Promise((r) => setImmediate(r));
    expect(gate.interval()).toBeLessThan(400);
    await new Promise((r) => setTimeout(r, 200));
    // a change after a quiet interval passes at once
    source.bump();
    expect(frames).toEqual([1, 2]);
    gate.close();
  });

  it('measures a frame as the CPU its listeners and the work they queue take', async () => {
    vi.useRealTimers();
    const source = new Source();
    const gate = new FrameGate(source, { intervalMs: 100, budget: 0.1 });
    gate.subscribe(() => {
      // a renderer that draws in a microtask, as React does
      queueMicrotask(() => {
        const cpu = () => process.cpuUsage().user / 1000;
        const end = cpu() + 30;
        while (cpu() < end) {
          // drawing: 30 ms of CPU (however long the machine's load makes it on the wall)
        }
      });
    });
    source.bump();
    await new Promise((r) => setImmediate(r));
    expect(gate.interval()).toBeGreaterThanOrEqual(300);
    gate.close();
  });
});
