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
import { closeSync, constants, mkdirSync, openSync } from 'node:fs';
import { lstat, readdir, unlink } from '../lib/fs-async.js';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

export interface HandOffOptions {
  uids: string[];
  /** The podctl entry script (bin/run.js); absent in the single executable (process.execPath is podctl). */
  bin?: string;
  stateDir: string;
  runtimeEndpoint?: string;
  /** The request deadline the handing process was given (--request-timeout), ms. */
  requestTimeoutMs?: number;
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
    ...(options.requestTimeoutMs ? ['--request-timeout', `${options.requestTimeoutMs}ms`] : []),
    ...(options.kubeconfig ? ['--kubeconfig', options.kubeconfig] : []),
    ...(options.node ? ['--node', options.node] : []),
    '--log-level',
    'warn',
    '--json',
  ];
}

const HAND_OFF_LOG = /^hand-off-\d+(-[0-9a-f]+)?\.log$/;

/**
 * Housekeeping: deletes the hand-off logs in the state dir not written for `olderThanMs` (a driver
 * that still drives writes to its log when something happens; an idle log of a long-finished driver
 * only accumulates). Never follows a symlink. Returns how many were deleted.
 */
export async function sweepHandOffLogs(stateDir: string, olderThanMs: number, now = Date.now()): Promise<number> {
  let swept = 0;
  let names: string[];
  try {
    names = await readdir(stateDir);
  } catch {
    return 0;
  }
  for (const name of names) {
    if (!HAND_OFF_LOG.test(name)) continue;
    const file = path.join(stateDir, name);
    try {
      const stat = await lstat(file);
      if (!stat.isFile() || now - stat.mtimeMs < olderThanMs) continue;
      await unlink(file);
      swept += 1;
    } catch {
      // gone already
    }
  }
  return swept;
}

export function handOff(options: HandOffOptions): HandOff | undefined {
  if (options.uids.length === 0) return undefined;
  mkdirSync(options.stateDir, { recursive: true, mode: 0o700 });
  // a new file, never through a symlink planted at its name (the state dir is root's, but a
  // --state-dir may be anywhere): O_EXCL | O_NOFOLLOW, with a random part so no name is predictable
  const log = path.join(options.stateDir, `hand-off-${process.pid}-${randomBytes(4).toString('hex')}.log`);
  const fd = openSync(log, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW | constants.O_APPEND, 0o600);
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
