/**
 * The end of a podctl process (bin/run.js through src/boot.ts, the single executable through
 * src/sea.ts): once the event loop has nothing left to run, the process exits at once with its exit
 * code, instead of letting Node.js tear its heap down page by page first (the natural end frees the
 * whole heap before the process goes; `process.exit` leaves the memory to the kernel).
 *
 * Contract:
 * - Only at `beforeExit`, i.e. when no timer, socket, file request or child keeps the loop alive:
 *   nothing podctl started is cut short, and stdout/stderr (written synchronously to files, pipes
 *   and terminals on Linux) are already out. `exit` listeners still run (process.exit emits it).
 * - Only when this is the process's sole `beforeExit` listener: another one (a library that runs
 *   work at that moment, Ink's screen) may schedule more, so the process then ends as Node.js would.
 * - The exit code is the one the process would have had (`process.exitCode`).
 * - Entry points only: never installed by a command or a service (a test that runs a command in its
 *   own process must not end with it).
 */
export function exitWhenIdle(): void {
  const onIdle = (): void => {
    if (process.listenerCount('beforeExit') === 1) process.exit();
  };
  process.on('beforeExit', onIdle);
}
