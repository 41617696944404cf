/**
 * A bound on a peer's silence that counts only time this process could hear it: the connect and
 * answer bounds of podctl's own probes (the kubelet's healthz, the runtime socket's check).
 *
 * Contract: `onSilent` is called once `timeoutMs` has passed since the bound was started or last
 * `heard`, unless `stop` was called first. A process held past the bound (a synchronous compile, a
 * CPU starved by other work) must not take its own delay for the peer's: a timer that fires over half
 * a bound late gives the peer a whole bound again, and the verdict waits for the event loop's poll
 * phase, so an answer or a connection already waiting in the kernel is taken first. The wait is
 * therefore at most `timeoutMs` of this process's running time, plus the time it was held.
 */

/** Milliseconds on the monotonic clock (process.hrtime: the global `performance` loads perf_hooks). */
const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/** Starts the bound (see the contract above). */
export function silenceBound(timeoutMs: number, onSilent: () => void): { heard(): void; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let due = 0;
  let stopped = false;
  const arm = (): void => {
    clearTimeout(timer);
    due = monotonicMs() + timeoutMs;
    timer = setTimeout(fire, timeoutMs);
  };
  const fire = (): void => {
    if (monotonicMs() - due > timeoutMs / 2) return arm();
    timer = undefined;
    setImmediate(() => {
      if (timer === undefined && !stopped) onSilent();
    });
  };
  arm();
  return {
    heard: () => {
      if (!stopped) arm();
    },
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
