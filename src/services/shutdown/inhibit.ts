/**
 * logind's delay inhibitor lock on shutdown, held under the node's own `systemd-inhibit`.
 *
 * logind's lock *is* a file descriptor (the write end of a FIFO, handed over in Inhibit's reply):
 * the lock lives while any copy of it is open. Node cannot receive a descriptor over a socket, so
 * podctl does not call Inhibit itself: it runs
 * `systemd-inhibit --what=shutdown --mode=delay --who=podctl --why=… cat`, which takes the lock
 * and holds it for as long as its child runs. The child `cat` reads a pipe whose only writer is
 * podctl; so the lock goes when podctl closes the pipe (`release`), and also when podctl dies
 * however it dies (the kernel closes the pipe, `cat` reads its end, `systemd-inhibit` exits and its
 * descriptor closes). No native add-on has to ride in the single executable.
 *
 * Invariants:
 * - `takeDelayLock` resolves only once logind lists the lock (by systemd-inhibit's PID), within
 *   `TAKE_LOCK_MS`; otherwise it rejects with systemd-inhibit's own line and leaves no process.
 * - `release` ends the holder and waits (bounded) for it to go; `lost` resolves when the holder
 *   ended without `release` (the lock is gone and the guard must say so and take it again).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { sleep } from '../../lib/abortable.js';
import { INHIBIT_WHO, type Logind } from './logind.js';

const TAKE_LOCK_MS = 5_000;
const RELEASE_WAIT_MS = 2_000;

export interface DelayLock {
  /** systemd-inhibit's PID: logind lists the lock under it. */
  pid: number;
  /** Resolves with a reason when the holder ended without `release`. */
  lost: Promise<string>;
  release(): Promise<void>;
}

export async function takeDelayLock(logind: Logind, why: string, command = 'systemd-inhibit'): Promise<DelayLock> {
  const child = spawn(command, ['--what=shutdown', '--mode=delay', `--who=${INHIBIT_WHO}`, `--why=${why}`, 'cat'], {
    stdio: ['pipe', 'ignore', 'pipe'],
    env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: logind.address },
  });
  child.stdin?.on('error', () => undefined); // EPIPE once the holder is gone: the lock went with it
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-2_000)));
  let released = false;
  const exited = new Promise<string>((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) =>
      resolve(error.code === 'ENOENT' ? `${command} is not installed (Debian and most systemd distributions: package systemd)` : `${command}: ${error.message}`),
    );
    child.once('exit', (code, signal) => resolve(`${command} ended (${signal ?? `exit ${code}`})${stderr.trim() ? `: ${stderr.trim().split('\n').pop()}` : ''}`));
  });
  const lost = exited.then((reason) => (released ? new Promise<string>(() => undefined) : reason));
  const release = async (): Promise<void> => {
    if (released) return;
    released = true;
    await endHolder(child, exited);
  };
  const deadline = Date.now() + TAKE_LOCK_MS;
  let gone: string | undefined;
  void exited.then((reason) => (gone = reason));
  for (;;) {
    if (gone !== undefined) throw new Error(`cannot take logind's delay lock: ${gone}`);
    const pid = child.pid;
    if (pid !== undefined) {
      const held = await logind.listInhibitors().catch(() => []);
      if (held.some((i) => i.pid === pid && i.who === INHIBIT_WHO && i.mode === 'delay')) return { pid, lost, release };
    }
    if (Date.now() >= deadline) {
      await release();
      throw new Error(`cannot take logind's delay lock: logind did not list it within ${TAKE_LOCK_MS / 1000} s${stderr.trim() ? ` (${stderr.trim()})` : ''}`);
    }
    await sleep(100);
  }
}

/** Closes the child's input (it ends, and systemd-inhibit with it), then kills systemd-inhibit if it lingers. */
async function endHolder(child: ChildProcess, exited: Promise<string>): Promise<void> {
  // first the pipe: a `cat` left behind by a systemd-inhibit that was killed ends with it too
  child.stdin?.end();
  if (child.exitCode !== null || child.signalCode !== null) return;
  const timer = setTimeout(() => child.kill('SIGKILL'), RELEASE_WAIT_MS);
  try {
    await exited;
  } finally {
    clearTimeout(timer);
  }
}
