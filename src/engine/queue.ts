/**
 * The default work queue: one shared timer for every pod's next re-sync (the kubelet's
 * BasicWorkQueue plus the sync loop that drains it), instead of one timer per pod.
 *
 * Invariants:
 * - A UID is queued at most once: enqueuing it again replaces its due time (as the kubelet's queue does).
 * - At most one timer is armed, for the earliest due time; it is unref'd so a pending re-sync never
 *   keeps the process alive on its own.
 * - `onDue` is called outside the queue's own bookkeeping (after due UIDs were removed), so it may
 *   enqueue again.
 * - After `close()` nothing fires and enqueues are ignored.
 */
import { clampTimerMs } from './timers.js';
import type { WorkQueue } from './types.js';

interface Entry {
  due: number;
  uid: string;
}

export class TimerWorkQueue implements WorkQueue {
  readonly #onDue: (uid: string) => void;
  /** UID → its current due time (epoch ms, timer clock). */
  readonly #due = new Map<string, number>();
  /** Min-heap on `due`; entries whose due time no longer matches `#due` are stale and skipped. */
  #heap: Entry[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #armedAt = Infinity;
  #closed = false;

  constructor(onDue: (uid: string) => void) {
    this.#onDue = onDue;
  }

  get size(): number {
    return this.#due.size;
  }

  enqueue(uid: string, delayMs: number): void {
    if (this.#closed) return;
    const due = Date.now() + Math.max(0, delayMs);
    this.#due.set(uid, due);
    this.#push({ due, uid });
    if (this.#heap.length > 2 * this.#due.size + 64) this.#compact();
    if (due < this.#armedAt) this.#arm(due);
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedAt = Infinity;
    this.#due.clear();
    this.#heap = [];
  }

  #arm(due: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#armedAt = due;
    // clamped: a far due date fires early, finds nothing ready and re-arms (#fire)
    const timer = setTimeout(() => this.#fire(), clampTimerMs(due - Date.now()));
    timer.unref?.();
    this.#timer = timer;
  }

  #fire(): void {
    this.#timer = undefined;
    this.#armedAt = Infinity;
    const now = Date.now();
    const ready: string[] = [];
    while (this.#heap.length > 0 && this.#heap[0]!.due <= now) {
      const entry = this.#pop()!;
      if (this.#due.get(entry.uid) !== entry.due) continue;
      this.#due.delete(entry.uid);
      ready.push(entry.uid);
    }
    const next = this.#heap[0];
    if (next !== undefined && !this.#closed) this.#arm(next.due);
    for (const uid of ready) {
      if (this.#closed) return;
      this.#onDue(uid);
    }
  }

  #compact(): void {
    this.#heap = [];
    for (const [uid, due] of this.#due) this.#push({ due, uid });
  }

  #push(entry: Entry): void {
    const heap = this.#heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.due <= entry.due) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = entry;
  }

  #pop(): Entry | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    let i = 0;
    const n = heap.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const child = r < n && heap[r]!.due < heap[l]!.due ? r : l;
      if (heap[child]!.due >= last.due) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
    return top;
  }
}
