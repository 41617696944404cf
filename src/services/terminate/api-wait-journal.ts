/**
 * The journal of one pod's waits in the API server while podctl stops it through the API beside a
 * running kubelet (kubelet-guard.ts): an eviction a PodDisruptionBudget refuses, and the wait for
 * the kubelet to finish the pod. Kept in the state dir (store/api-waits.ts), where `podctl status`
 * shows a pod blocked now and the drain report draws each wait.
 *
 * Invariants: writes run one after another in the order asked (an end never lands before its
 * start); a write that fails is said at debug level and never fails the stop; `flush` waits for
 * every write asked so far; a wait is opened at most once until it is closed.
 */
import { closeApiWait, recordApiWait, type ApiWaitRecord } from '../../store/api-waits.js';
import type { Reporter } from '../../lib/reporter.js';

type WaitKind = ApiWaitRecord['kind'];

export class ApiWaitJournal {
  readonly #stateDir: string;
  readonly #uid: string;
  readonly #reporter: Reporter;
  #writes: Promise<void> = Promise.resolve();
  readonly #open = new Map<WaitKind, string>();

  constructor(stateDir: string, uid: string, reporter: Reporter) {
    this.#stateDir = stateDir;
    this.#uid = uid;
    this.#reporter = reporter;
  }

  /** Whether a wait of `kind` about `label` is open. */
  isOpen(kind: WaitKind, label: string): boolean {
    return this.#open.get(kind) === label;
  }

  /** Starts a wait (closing an open one of the same kind about something else as `waited`). */
  open(kind: WaitKind, label: string, detail: string, from = Date.now()): void {
    if (this.isOpen(kind, label)) return;
    if (this.#open.has(kind)) this.close(kind, 'waited', from);
    this.#open.set(kind, label);
    this.#queue(() => recordApiWait(this.#stateDir, this.#uid, { kind, label, from, detail, pid: process.pid }));
  }

  /** Ends the open wait of `kind`, if any. */
  close(kind: WaitKind, outcome: string, to = Date.now(), detail?: string): void {
    if (!this.#open.delete(kind)) return;
    this.#queue(() => closeApiWait(this.#stateDir, this.#uid, kind, { to, outcome, ...(detail !== undefined ? { detail } : {}) }));
  }

  /** Waits for every write asked so far. */
  flush(): Promise<void> {
    return this.#writes;
  }

  #queue(write: () => Promise<void>): void {
    this.#writes = this.#writes.then(write).catch((error: unknown) => this.#reporter.debug(`the API wait of ${this.#uid} could not be journaled: ${(error as Error).message}`));
  }
}
