/**
 * The live line of the evictions PodDisruptionBudgets hold back: on a terminal, one status line
 * (the reporter's) rewritten every second with each held pod, its budget, the next try and the
 * time left until podctl gives up; in a pipe nothing (each block is said once, as a plain line, by
 * the caller). One board per reporter, so pods evicted together share the line.
 *
 * Invariants: the ticker runs only while a pod is held and is unref'd (never keeps the process
 * alive); `release` of the last pod ends the status line.
 */
import { formatDuration } from '../../lib/duration.js';
import type { Reporter } from '../../lib/reporter.js';

interface HeldPod {
  ref: string;
  budget: string;
  /** Epoch ms of the next eviction attempt. */
  nextTryAt: number;
  /** Epoch ms when podctl gives up (Infinity: no bound). */
  givesUpAt: number;
}

class PdbWaitBoard {
  readonly #reporter: Reporter;
  readonly #held = new Map<string, HeldPod>();
  #ticker: NodeJS.Timeout | undefined;

  constructor(reporter: Reporter) {
    this.#reporter = reporter;
  }

  hold(uid: string, pod: HeldPod): void {
    this.#held.set(uid, pod);
    this.#draw();
    if (this.#ticker === undefined) {
      this.#ticker = setInterval(() => this.#draw(), 1_000);
      this.#ticker.unref();
    }
  }

  release(uid: string): void {
    if (!this.#held.delete(uid) || this.#held.size > 0) return;
    clearInterval(this.#ticker);
    this.#ticker = undefined;
    this.#reporter.done();
  }

  #draw(): void {
    const now = Date.now();
    const parts = [...this.#held.values()].map((p) => {
      const next = `next try in ${formatDuration(Math.max(0, p.nextTryAt - now))}`;
      const left = Number.isFinite(p.givesUpAt) ? `gives up in ${formatDuration(Math.max(0, p.givesUpAt - now))}` : 'no bound';
      return `${p.ref} (${p.budget}): ${next}, ${left}`;
    });
    this.#reporter.progress(`held by PodDisruptionBudget · ${parts.join(' · ')}`);
  }
}

const boards = new WeakMap<Reporter, PdbWaitBoard>();

/** The board of this reporter's terminal, or undefined when it writes to a pipe (no live line there). */
export function pdbWaitBoard(reporter: Reporter): PdbWaitBoard | undefined {
  if (!reporter.interactive) return undefined;
  let board = boards.get(reporter);
  if (!board) {
    board = new PdbWaitBoard(reporter);
    boards.set(reporter, board);
  }
  return board;
}
