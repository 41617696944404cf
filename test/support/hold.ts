import net from 'node:net';
import { vi } from 'vitest';

/**
 * Holds this thread for `ms` without turning its event loop: what a synchronous compile, or a CPU
 * that other processes hold, does to podctl (its timers fall due while no socket is read).
 */
export function holdThread(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Until `restore()`: every connection this process asks for (net.connect or net.createConnection)
 * is followed by a hold of `ms` from the loop's check phase, so the loop's next turn begins with its
 * timers, before it sees the connection made. `connects()` counts the connections asked for.
 */
export function holdAfterEachConnect(ms: number): { connects(): number; restore(): void } {
  const realConnect = net.connect;
  let connects = 0;
  const holding = (...args: Parameters<typeof net.connect>): net.Socket => {
    connects += 1;
    setImmediate(() => holdThread(ms));
    return realConnect(...args);
  };
  const spies = [vi.spyOn(net, 'connect').mockImplementation(holding), vi.spyOn(net, 'createConnection').mockImplementation(holding)];
  return {
    connects: () => connects,
    restore: () => {
      for (const spy of spies) spy.mockRestore();
    },
  };
}
