/**
 * The tests' polling wait: resolves with the first value a probe answers, and fails past its bound
 * with a message that names what was awaited, for how long, and the detail asked for.
 */
import { describe, expect, it } from 'vitest';
import { until, waitFor, waitForText } from './wait.js';

describe('waitFor', () => {
  it('resolves with the first answer that is a value (0 and the empty string are values; undefined, null and false are not)', async () => {
    const answers: unknown[] = [undefined, null, false, 0, 'later'];
    let asked = 0;
    expect(await waitFor('a value', () => answers[asked++] as number | undefined, { timeoutMs: 5_000, everyMs: 1 })).toBe(0);
    expect(asked).toBe(4);
    expect(await waitFor('the empty string', async () => '', 1_000)).toBe('');
  });

  it('fails once its bound has passed, naming what it awaited and the bound, then the detail', async () => {
    let asked = 0;
    const failure = await waitFor('the pod terminated', () => (asked++, undefined), { timeoutMs: 120, everyMs: 10, detail: () => `asked ${asked} times` }).catch((e: Error) => e);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(/^not within 120 ms: the pod terminated\nasked \d+ times$/);
    expect(asked).toBeGreaterThan(1);
  });

  it('a probe that throws fails the wait with its error (a test that tolerates one says so in its probe)', async () => {
    await expect(waitFor('an answer', () => Promise.reject(new Error('refused')), 1_000)).rejects.toThrow('refused');
  });
});

describe('until and waitForText', () => {
  it('until resolves once the check holds, else fails naming it', async () => {
    let n = 0;
    await until('the third check', () => ++n === 3, { timeoutMs: 5_000, everyMs: 1 });
    expect(n).toBe(3);
    await expect(until('never', () => false, { timeoutMs: 50, everyMs: 10 })).rejects.toThrow(/^not within 50 ms: never$/);
  });

  it('waitForText resolves with the text the predicate held of, and a failure shows the last text read', async () => {
    const screens = ['loading', 'NAMESPACE/NAME', 'later'];
    let i = 0;
    expect(
      await waitForText(
        'the table',
        () => screens[i++]!,
        (s) => s.startsWith('NAMESPACE'),
        { timeoutMs: 5_000, everyMs: 1 },
      ),
    ).toBe('NAMESPACE/NAME');
    await expect(
      waitForText(
        'the help',
        () => 'the table',
        (s) => s.includes('help'),
        { timeoutMs: 50, everyMs: 10 },
      ),
    ).rejects.toThrow(/^not within 50 ms: the help\nthe last text read:\nthe table$/);
  });
});
