import { readdirSync, readFileSync } from 'node:fs';

/**
 * Whether a process is alive, for tests that watch podctl's background drivers and test nodes come
 * and go: signal 0 reaches it (as root, any process).
 */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The processes whose command line names `text` (a test's own directory: the background drivers
 * podctl started for pods in it, recorded or not), read from /proc; none where /proc is unreadable.
 */
export function processesNaming(text: string): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (
        readFileSync(`/proc/${entry}/cmdline`, 'utf8')
          .split('\0')
          .some((arg) => arg.includes(text))
      )
        out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** SIGKILLs each of `pids` still alive (a background driver a test's kill handed its pod to); one already gone is skipped. */
export function killAll(pids: Iterable<number>): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
