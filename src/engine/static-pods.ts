/**
 * Start exclusion for static pods sharing a full name (the kubelet's allowStaticPodStart): a static
 * pod may be recreated with a new UID while the previous one still shuts down, and the two must
 * never run at the same time.
 *
 * Invariants:
 * - At most one UID is recorded as started per full name; only that UID may run until it is
 *   released (terminated, finished or forgotten).
 * - Waiters start strictly in arrival order; waiters that are gone, terminating or terminated are
 *   skipped (and dropped from the head of the line lazily, when someone asks to start).
 */

/** What the gate needs to know about a waiting UID. */
export interface WaiterState {
  isTerminationRequested(): boolean;
  isTerminated(): boolean;
}

export class StaticPodStarts {
  /** Full name → UID of the static pod allowed to run. */
  readonly started = new Map<string, string>();
  /** Full name → UIDs waiting to start, in arrival order (may hold stale entries). */
  readonly waiting = new Map<string, string[]>();

  /** Appends a UID to the line for its full name (called when its worker is created). */
  addWaiting(fullname: string, uid: string): void {
    const line = this.waiting.get(fullname);
    if (line === undefined) this.waiting.set(fullname, [uid]);
    else line.push(uid);
  }

  /**
   * True when `uid` may start: it is already the started pod, or nobody is started and it is the
   * first live waiter (it then becomes the started pod and leaves the line).
   */
  allowStart(fullname: string, uid: string, stateOf: (uid: string) => WaiterState | undefined): boolean {
    const startedUid = this.started.get(fullname);
    if (startedUid !== undefined) return startedUid === uid;

    let line = this.waiting.get(fullname) ?? [];
    for (let i = 0; i < line.length; i++) {
      const waitingUid = line[i]!;
      const state = stateOf(waitingUid);
      if (state === undefined || state.isTerminationRequested() || state.isTerminated()) continue;
      if (waitingUid !== uid) {
        // another pod is next in line: drop the dead entries before it and wait
        this.waiting.set(fullname, line.slice(i));
        return false;
      }
      line = line.slice(i + 1);
      break;
    }
    if (line.length !== 0) this.waiting.set(fullname, line);
    else this.waiting.delete(fullname);
    this.started.set(fullname, uid);
    return true;
  }

  /** Frees the full name if `uid` holds it. */
  release(fullname: string, uid: string): void {
    if (this.started.get(fullname) === uid) this.started.delete(fullname);
  }
}
