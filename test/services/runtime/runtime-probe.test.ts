/**
 * The watch's runtime probe (services/runtime/runtime-probe.ts): a runtime that stops answering is reported
 * once, with when it stopped and why, and once again when it answers; probes never overlap.
 */
import { describe, expect, it, vi } from 'vitest';
import { RuntimeProbe, probeErrorText, type RuntimeHealth } from '../../../src/services/runtime/runtime-probe.js';

describe('RuntimeProbe', () => {
  it('reports the runtime not answering, from when the probe was sent, then answering again', async () => {
    let clock = 1_000;
    let mode: 'ok' | 'hang' | 'refused' = 'ok';
    let connects = 0;
    const probe = new RuntimeProbe({
      endpoint: 'unix:///run/x.sock',
      now: () => clock,
      connect: async () => {
        connects += 1;
        return {
          version: async () => {
            if (mode === 'hang') {
              clock += 1_500;
              throw new Error('4 DEADLINE_EXCEEDED: Deadline exceeded after 1.500s');
            }
            if (mode === 'refused') throw new Error('14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED');
            return { version: '0.1.0', runtimeName: 'x', runtimeVersion: '1', runtimeApiVersion: 'v1' };
          },
          close: () => undefined,
        };
      },
    });
    const seen: Array<[RuntimeHealth, RuntimeHealth]> = [];
    probe.onChange((h, p) => seen.push([h, p]));
    expect((await probe.probe()).answering).toBe(true);
    const first = probe.current();
    expect(seen).toEqual([]);
    mode = 'hang';
    clock = 5_000;
    const down = await probe.probe();
    expect(down).toEqual({ answering: false, since: 5_000, error: 'no answer within the probe deadline' });
    // still down: no new report, same object
    await probe.probe();
    expect(probe.current()).toBe(down);
    mode = 'ok';
    clock = 9_000;
    expect((await probe.probe()).answering).toBe(true);
    expect(seen.map(([h]) => h.answering)).toEqual([false, true]);
    expect(seen[0]![1]).toBe(first);
    expect(seen[1]![1]).toBe(down);
    expect(connects).toBe(1);
    probe.close();
  });

  it('probes an answering runtime every 1.5 s, so a hung one is reported within 3 s (interval + deadline)', async () => {
    vi.useFakeTimers();
    try {
      let calls = 0;
      const probe = new RuntimeProbe({
        endpoint: 'unix:///run/x.sock',
        connect: async () => ({
          version: async () => {
            calls += 1;
            return { version: '0.1.0', runtimeName: 'x', runtimeVersion: '1', runtimeApiVersion: 'v1' };
          },
          close: () => undefined,
        }),
      });
      probe.start();
      await vi.advanceTimersByTimeAsync(6_100);
      // 6 s of an idle watch: four probes (at 0.8 s, eight)
      expect(calls).toBe(4);
      probe.close();
      await vi.advanceTimersByTimeAsync(3_000);
      expect(calls).toBe(4);
    } finally {
      vi.useRealTimers();
    }
  });

  it('says what a refused connection means', () => {
    expect(probeErrorText(new Error('14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED /run/x.sock'))).toBe('connection refused (is the runtime running?)');
    expect(probeErrorText(new Error('4 DEADLINE_EXCEEDED: Deadline exceeded'))).toBe('no answer within the probe deadline');
    expect(probeErrorText(new Error('13 INTERNAL: boom\nstack'))).toBe('13 INTERNAL: boom');
  });
});
