/**
 * The outcome of every preStop hook this process ran (or could not run), by pod UID, for the
 * commands' results (`hooks: [{container, type, outcome, ms}]`) and warnings.
 *
 * Invariants: entries are appended in the order hooks end; a pod's entries are kept until `take`
 * hands them out (a command reports each hook once); the journal holds at most MAX_PODS pods (the
 * oldest go first), so a long-running process does not grow it without bound.
 */
export type HookType = 'exec' | 'sleep' | 'httpGet' | 'unknown';
/** succeeded; failed (it ran and failed); not-run (it could not be run: the kill went on without it). */
export type HookOutcomeKind = 'succeeded' | 'failed' | 'not-run';

export interface HookOutcome {
  uid: string;
  container: string;
  type: HookType;
  outcome: HookOutcomeKind;
  ms: number;
  message: string;
}

/** The one line that says how a hook ended: the log line as it ends, and the warning in a command's result. */
export function hookLine(type: HookType, pod: string, container: string, outcome: HookOutcomeKind, message: string): string {
  const ended = outcome === 'succeeded' ? 'succeeded' : outcome === 'failed' ? 'failed' : 'did not run';
  return `preStop ${type} hook of ${pod} container ${container} ${ended}: ${message}`;
}

const MAX_PODS = 1024;

export class HookJournal {
  #byPod = new Map<string, HookOutcome[]>();

  record(outcome: HookOutcome): void {
    const list = this.#byPod.get(outcome.uid) ?? [];
    list.push(outcome);
    this.#byPod.delete(outcome.uid);
    this.#byPod.set(outcome.uid, list);
    while (this.#byPod.size > MAX_PODS) {
      const oldest = this.#byPod.keys().next().value;
      if (oldest === undefined) break;
      this.#byPod.delete(oldest);
    }
  }

  /** The outcomes recorded for these pods, removed from the journal. */
  take(uids: Iterable<string>): HookOutcome[] {
    const out: HookOutcome[] = [];
    for (const uid of uids) {
      out.push(...(this.#byPod.get(uid) ?? []));
      this.#byPod.delete(uid);
    }
    return out;
  }
}

/** The process's journal: the syncer records into it unless given another. */
export const processHookJournal = new HookJournal();
