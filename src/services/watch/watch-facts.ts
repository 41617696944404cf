/**
 * The node facts `watch` classifies stuck pods with (blocked-by.ts): the same facts `status
 * --explain` gathers (container process states from /proc, mounts held under a pod's kubelet
 * directory), re-gathered on a timer for the pods that are on their way out, so that the screen and
 * the JSON stream name `uninterruptible-io`, `stale-shim` and `volume-busy` as `status` does.
 *
 * Invariants:
 * - Throttled: at most one gathering every `intervalMs` (default 2 s), never two at once, and none
 *   while no listed pod is overdue; each is bounded by the facts timeout (stuck-facts.ts). Only
 *   overdue pods are looked at (on their way out and past their grace by SETTLING_MS, or with a
 *   runtime error, or undriven), at most MAX_FACT_PODS of them, longest in their state first: a
 *   drain of hundreds of pods within their grace costs the runtime no extra calls.
 * - Within a CPU budget (`budget`, default FACTS_BUDGET of one core): the time to the next
 *   gathering stretches to the CPU the last one cost divided by the budget, never past
 *   MAX_FACTS_INTERVAL_MS. A gathering over 64 pods (a verbose ContainerStatus each) costs ~60 ms,
 *   which a 500-pod drain whose queue outlives its grace paid every 2 s.
 * - Best effort: a gathering that fails keeps the last facts; it never throws to the caller.
 * - `current()` is the same object until a gathering finds different facts, so a screen may
 *   subscribe to it as to the feed's snapshot.
 * - `causeChanges` reports a pod once per change of its cause's kind, not on every gathering.
 */
import type { KubeletStatus } from '../../kube/kubelet.js';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import { budgetedInterval, processCpuMs } from '../../lib/budget.js';
import { blockedBy, type BlockedBy } from '../diagnose/blocked-by.js';
import { gatherNodeFacts, notFinishing, stuckFactsOf, type NodeFacts } from '../diagnose/status.js';

const WATCH_FACTS_INTERVAL_MS = 2_000;
/** Pods looked at per gathering (the longest in their state first). */
const MAX_FACT_PODS = 64;
/**
 * How long a driven pod may have been out of its grace (stopped, on its way to finished) before it
 * counts as overdue: in a drain hundreds of pods pass through that state for a moment each, and
 * looking at them there cost a watch a gathering every interval for nothing.
 */
const SETTLING_MS = WATCH_FACTS_INTERVAL_MS;
/** Share of one core the gatherings may take (see the invariants). */
const FACTS_BUDGET = 0.01;
/** The longest the budget stretches the time between two gatherings (ms). */
const MAX_FACTS_INTERVAL_MS = 10_000;

export interface WatchFactsOptions {
  /** The pods of the watch's last listing. */
  pods: () => readonly PodInfo[];
  /** The kubelet beside podctl, when known (decides kubelet-owns). */
  kubelet?: KubeletStatus;
  /** The kubelet's root directory (where a pod's volumes are mounted). */
  kubeletRoot?: string;
  intervalMs?: number;
  /** Share of one core gatherings may take; default FACTS_BUDGET (0: every `intervalMs`). */
  budget?: number;
  /** CPU this process has used (ms); default process.cpuUsage(). A test seam for the budget. */
  cpuMs?: () => number;
  /** Gathers facts (default: status.ts's gatherNodeFacts over the session's runtime). */
  gather?: (pods: PodInfo[]) => Promise<NodeFacts>;
  now?: () => number;
}

const NO_API = new Map<string, never>();

/** Whether a pod is on its way out and not finished, so its node facts matter (status.ts's rule). */
export function isLeaving(pod: PodInfo): boolean {
  return notFinishing(pod, NO_API);
}

/**
 * Whether a leaving pod's node facts may name its cause: its grace is over (or none counts down),
 * or the runtime reported an error, or no live process drives it. Within its grace a pod is (almost
 * always) just stopping; a driven pod whose grace has just run out is being killed, and one that
 * has just stopped is just finishing (both for SETTLING_MS).
 */
function isOverdue(pod: PodInfo, now: number): boolean {
  if (!isLeaving(pod)) return false;
  if (pod.lastError !== undefined) return true;
  if (pod.owner?.alive !== true) return true;
  if (pod.state !== 'terminating') return now - pod.since >= SETTLING_MS;
  return pod.graceDeadline === undefined || now - pod.graceDeadline >= SETTLING_MS;
}

/** A comparable summary of facts: what decides a cause (process states, held mounts). */
function factsKey(facts: NodeFacts): string {
  const parts: string[] = [];
  for (const [uid, list] of [...facts.processes].sort(([a], [b]) => a.localeCompare(b))) {
    parts.push(`${uid}:${list.map((p) => `${p.containerId}/${p.pid}/${p.state}`).join(',')}`);
  }
  for (const [uid, list] of [...facts.mounts].sort(([a], [b]) => a.localeCompare(b))) parts.push(`${uid}@${list.join(',')}`);
  return parts.join(';');
}

export class WatchFacts {
  readonly #options: WatchFactsOptions;
  readonly #gather: (pods: PodInfo[]) => Promise<NodeFacts>;
  readonly #listeners = new Set<() => void>();
  #facts: NodeFacts | undefined;
  #key = '';
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<void> | undefined;
  /** CPU the process spent during the last gathering (ms), for the budget. */
  #lastCostMs = 0;
  #closed = false;
  readonly #lastKind = new Map<string, string>();

  constructor(session: NodeSession, options: WatchFactsOptions) {
    this.#options = options;
    this.#gather = options.gather ?? ((pods) => gatherNodeFacts(session, pods, options.kubelet, new Map(), undefined, options.kubeletRoot));
  }

  /** The last gathered facts (undefined before the first gathering found a leaving pod). */
  current(): NodeFacts | undefined {
    return this.#facts;
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Starts the timer (after one immediate gathering, which the returned promise waits for). */
  async start(): Promise<void> {
    await this.refresh();
    this.#schedule();
  }

  /** Gathers once now (or joins the gathering in flight); resolves when done. */
  refresh(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#inFlight) return this.#inFlight;
    const now = (this.#options.now ?? Date.now)();
    const leaving = this.#options
      .pods()
      .filter((p) => isOverdue(p, now))
      .sort((a, b) => a.since - b.since)
      .slice(0, MAX_FACT_PODS);
    if (leaving.length === 0) {
      // nothing gathered: the next pod to fall overdue is looked at within the interval
      this.#lastCostMs = 0;
      return Promise.resolve();
    }
    const cpuMs = this.#options.cpuMs ?? processCpuMs;
    const cpuBefore = cpuMs();
    this.#inFlight = this.#gather(leaving)
      .then((facts) => {
        if (this.#closed) return;
        const key = factsKey(facts);
        if (this.#facts !== undefined && key === this.#key) return;
        this.#facts = facts;
        this.#key = key;
        for (const l of this.#listeners) l();
      })
      .catch(() => undefined)
      .finally(() => {
        this.#lastCostMs = cpuMs() - cpuBefore;
        this.#inFlight = undefined;
      });
    return this.#inFlight;
  }

  /**
   * The pods whose cause (by kind) differs from the one last reported here, with the new cause;
   * pods no longer on their way out are forgotten.
   */
  causeChanges(pods: readonly PodInfo[], now: number): Array<{ pod: PodInfo; cause: BlockedBy }> {
    const out: Array<{ pod: PodInfo; cause: BlockedBy }> = [];
    const seen = new Set<string>();
    for (const pod of pods) {
      if (!isLeaving(pod)) continue;
      seen.add(pod.uid);
      const cause = blockedBy(stuckFactsOf(pod, now, this.#facts));
      const kind = cause?.kind ?? '';
      const before = this.#lastKind.get(pod.uid);
      this.#lastKind.set(pod.uid, kind);
      if (cause && kind !== before && (before !== undefined || kind !== 'grace')) out.push({ pod, cause });
    }
    for (const uid of [...this.#lastKind.keys()]) if (!seen.has(uid)) this.#lastKind.delete(uid);
    return out;
  }

  /** The time from now to the next gathering (ms): the interval, stretched by the budget. */
  nextIntervalMs(): number {
    const base = this.#options.intervalMs ?? WATCH_FACTS_INTERVAL_MS;
    return budgetedInterval(base, this.#lastCostMs, this.#options.budget ?? FACTS_BUDGET, Math.max(base, MAX_FACTS_INTERVAL_MS));
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#listeners.clear();
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.refresh().finally(() => this.#schedule());
    }, this.nextIntervalMs());
    this.#timer.unref();
  }
}
