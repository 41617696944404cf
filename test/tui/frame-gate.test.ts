import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FrameGate } from '../../src/tui/frame-gate.js';
import type { WatchSnapshot } from '../../src/services/watch/watch-feed.js';

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

  it('stretches the interval to keep drawing within its budget, up to one frame a second, and back when frames are cheap', async () => {
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
    for (let i = 0; i < 1_000; i += 1) {
      source.bump();
      await vi.advanceTimersByTimeAsync(1);
    }
    // frames of ≥ 25 ms: ≥ 250 ms apart (a tenth of a core)
    expect(gate.interval()).toBeGreaterThanOrEqual(250);
    for (let i = 2; i < at.length; i += 1) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(250);
    expect(at.length).toBeLessThanOrEqual(6);
    // a very slow frame: never fewer than one frame every two seconds
    drawMs = 150;
    source.bump();
    await vi.advanceTimersByTimeAsync(1_200);
    expect(gate.interval()).toBe(1_500);
    drawMs = 400;
    source.bump();
    await vi.advanceTimersByTimeAsync(2_200);
    expect(gate.interval()).toBe(2_000);
    // cheap frames: ten a second again
    drawMs = 0;
    source.bump();
    await vi.advanceTimersByTimeAsync(1_200);
    expect(gate.interval()).toBe(100);
    expect(gate.snapshot().version).toBe(1_003);
    // without a budget the interval is fixed
    expect(new FrameGate(source, { intervalMs: 100, budget: 0 }).interval()).toBe(100);
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
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
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
