/**
 * The tests' one polling wait: a probe asked again and again until it answers, within a bound.
 *
 * Contract: the probe runs at once, then every `everyMs` (default 50) after each answer; a wait
 * resolves with the first answer that is a value (anything but undefined, null or false) and
 * rejects once `timeoutMs` has passed without one, with `not within <timeoutMs> ms: <what>` and,
 * when given, `detail()` on the lines after it (a process's output, the last screen). The bound is
 * one for a loaded machine, never a speed goal: speed is measured in the benchmarks.
 */

/** A wait's bound and pace. */
export interface WaitOptions {
  /** How long the wait may take before it fails. */
  timeoutMs: number;
  /** The pause between two probes (default 50 ms). */
  everyMs?: number;
  /** What the failure adds after its first line (called only on failure). */
  detail?: () => string;
}

type Answer<T> = T | undefined | null | false;

/** Polls `probe` until it answers with a value, and resolves with it; `bound` is `timeoutMs` or the options. */
export async function waitFor<T>(what: string, probe: () => Answer<T> | Promise<Answer<T>>, bound: number | WaitOptions): Promise<T> {
  const { timeoutMs, everyMs = 50, detail } = typeof bound === 'number' ? { timeoutMs: bound } : bound;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await probe();
    if (answer !== undefined && answer !== null && answer !== false) return answer;
    if (Date.now() >= deadline) throw new Error(`not within ${timeoutMs} ms: ${what}${detail ? `\n${detail()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Polls `check` until it holds (see waitFor). */
export async function until(what: string, check: () => boolean | Promise<boolean>, bound: number | WaitOptions): Promise<void> {
  await waitFor(what, async () => (await check()) || undefined, bound);
}

/** Polls `read` (a screen, a frame, a log) until `predicate` holds of its text, and resolves with that text; a failure shows the last text read. */
export async function waitForText(what: string, read: () => string, predicate: (text: string) => boolean, bound: number | WaitOptions): Promise<string> {
  const options = typeof bound === 'number' ? { timeoutMs: bound } : bound;
  let last = '';
  const probe = () => {
    last = read();
    return predicate(last) ? last : undefined;
  };
  return waitFor(what, probe, { ...options, detail: () => `the last text read:\n${last}` });
}
