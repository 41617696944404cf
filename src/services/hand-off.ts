/**
 * Handing a termination to a background podctl process, for `kill --no-wait` / `evict --no-wait`.
 *
 * A kill requested by the process that then drives it (it held no other owner to delegate to) would
 * stop being driven the moment that process exits. So, after the requesting process has closed its
 * session (checkpoints persisted, leases released), it starts one detached `podctl kill --uid …`
 * that takes the pods over and drives them to the end — resuming each from its checkpoint with the
 * grace already in force (grace only shrinks, so no --grace is passed).
 *
 * Invariants: the background process (`kill --drive`) runs until its pods are terminated, not until
 * a wait bound (a process that exits never drops a pod it drives); it is started before the caller
 * closes its session and waits (bounded, `--after-pid`) for the caller to exit before it takes the
 * leases over. It has no terminal (stdio ignored, its own process group) and writes its JSON result
 * and errors to `<state-dir>/hand-off-<pid>.log`; spawning never blocks the caller.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';

export interface HandOffOptions {
  uids: string[];
  /** The podctl entry script (bin/run.js); absent in the single executable (process.execPath is podctl). */
  bin?: string;
  stateDir: string;
  runtimeEndpoint?: string;
  kubeconfig?: string;
  node?: string;
  /** The handing process: the driver waits for it to exit before taking the pods over. */
  afterPid?: number;
}

export interface HandOff {
  pid: number;
  log: string;
}

/** The argv of the background driver (pure; tested). */
export function handOffArgs(options: HandOffOptions): string[] {
  return [
    // always `kill`: an eviction already requested stays one (the flag is kept in the checkpoint),
    // and a second `evict` would report it to the API server twice
    'kill',
    ...options.uids.flatMap((uid) => ['--uid', uid]),
    '--drive',
    ...(options.afterPid !== undefined ? ['--after-pid', String(options.afterPid)] : []),
    // the pods were chosen (and confirmed) by the handing process
    '--yes',
    '--state-dir',
    options.stateDir,
    ...(options.runtimeEndpoint ? ['--runtime-endpoint', options.runtimeEndpoint] : []),
    ...(options.kubeconfig ? ['--kubeconfig', options.kubeconfig] : []),
    ...(options.node ? ['--node', options.node] : []),
    '--log-level',
    'warn',
    '--json',
  ];
}

export function handOff(options: HandOffOptions): HandOff | undefined {
  if (options.uids.length === 0) return undefined;
  mkdirSync(options.stateDir, { recursive: true, mode: 0o700 });
  const log = path.join(options.stateDir, `hand-off-${process.pid}.log`);
  const fd = openSync(log, 'a', 0o600);
  try {
    const child = spawn(process.execPath, [...(options.bin ? [options.bin] : []), ...handOffArgs(options)], {
      detached: true,
      stdio: ['ignore', fd, fd],
      env: { ...process.env, NO_COLOR: '1' },
    });
    child.unref();
    return child.pid === undefined ? undefined : { pid: child.pid, log };
  } finally {
    closeSync(fd);
  }
}
