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
