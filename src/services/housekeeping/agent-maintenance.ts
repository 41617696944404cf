/**
 * The agent's maintenance, beside its housekeeping loop: what the Node's `podctl.io/drain`
 * annotation asks (drain/maintenance.ts) runs as a task of its own, so a drain that waits — on a
 * PodDisruptionBudget, on a pod's grace — never holds a housekeeping step, its cadence or the
 * agent's liveness.
 *
 * Invariants:
 * - One maintenance action at a time; a Node version that was acted on is never acted on again (the
 *   watch may bring the agent's own annotation writes late).
 * - Nothing starts while API writes are withheld (maintenance writes).
 * - The first look after the agent starts resumes a drain a previous agent left `draining`; once
 *   this agent has acted, `draining` is its own write coming back and asks nothing.
 * - With the drain lock, a request that finds no free slot is `queued` and asks again every
 *   `retryMs` (not at every step).
 * - On abort an in-flight drain hands on (maintenance.ts: an Event, the Node left `draining`);
 *   `stop()` waits for it, within the hand-on's own bound.
 */
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import type { KubeletStatus } from '../../kube/kubelet.js';
import type { NodeView } from '../../kube/client.js';
import type { Reporter } from '../../lib/reporter.js';
import type { ApiNode } from '../api/api-node.js';
import { DrainLock } from '../drain/drain-lock.js';

export interface MaintenanceRunnerOptions {
  session: NodeSession;
  api: ApiNode;
  node: string;
  /** The kubelet's state (cached by the agent); undefined when not asked. */
  kubeletState: () => Promise<KubeletStatus | undefined>;
  isSelf?: (pod: PodInfo) => boolean;
  reporter: Reporter;
  signal: AbortSignal;
  /** Called after an action that did something (a drain ended, an uncordon). */
  onActed: () => void;
  /** The cluster's drain lock; undefined: each node drains when asked. */
  drainLock?: DrainLockSettings;
  now?: () => number;
}

/** At most `slots` nodes drain at once, by Leases in `namespace` (drain/drain-lock.ts). */
export interface DrainLockSettings {
  namespace: string;
  slots: number;
  leaseDurationSeconds?: number;
  /** How often a queued request asks for a slot again (default QUEUED_RETRY_MS). */
  retryMs?: number;
}

/** How often a queued drain asks for a slot again. */
const QUEUED_RETRY_MS = 5_000;

export class MaintenanceRunner {
  readonly #options: MaintenanceRunnerOptions;
  #running: Promise<void> | undefined;
  /** The Node version the last action answered. */
  #actedRv: string | undefined;
  #acted = false;
  /** A queued request asks again no sooner than this. */
  #retryAt = 0;
  readonly #lock: DrainLock | undefined;
  readonly #now: () => number;

  constructor(options: MaintenanceRunnerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    const settings = options.drainLock;
    this.#lock =
      settings && settings.slots > 0
        ? new DrainLock({
            leases: options.api.kube.leases(settings.namespace),
            node: options.node,
            slots: settings.slots,
            ...(settings.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: settings.leaseDurationSeconds } : {}),
            reporter: options.reporter,
          })
        : undefined;
  }

  /**
   * Starts what the Node (as watched; null: no such Node, undefined: not listed yet) asks, unless an
   * action runs, writes are withheld, or this version was answered. Returns at once.
   */
  consider(current: NodeView | null | undefined, writesEnabled: boolean): void {
    if (this.#running || current === undefined || !writesEnabled || this.#options.signal.aborted || this.#now() < this.#retryAt) return;
    if (current !== null && current.resourceVersion === this.#actedRv) return;
    this.#running = this.#act(current).finally(() => (this.#running = undefined));
  }

  async #act(current: NodeView | null): Promise<void> {
    const { session, api, node, reporter, signal } = this.#options;
    const kubelet = (await this.#options.kubeletState()) ?? { state: 'unknown', via: 'none', detail: 'not checked' };
    const { checkMaintenance } = await import('../drain/maintenance.js');
    const outcome = await checkMaintenance({
      session,
      api,
      kubelet,
      node,
      current,
      resume: !this.#acted,
      ...(this.#lock ? { lock: this.#lock } : {}),
      ...(this.#options.isSelf ? { isSelf: this.#options.isSelf } : {}),
      reporter,
      signal,
    }).catch((error: Error) => {
      if (!signal.aborted) reporter.warn(`agent: node ${node}: ${error.message}`);
      return { action: 'none' as const };
    });
    if (outcome.action === 'none') return;
    if (outcome.action === 'queued') {
      this.#retryAt = this.#now() + (this.#options.drainLock?.retryMs ?? QUEUED_RETRY_MS);
      return;
    }
    this.#acted = true;
    this.#actedRv = current?.resourceVersion;
    this.#options.onActed();
  }

  /** Waits for the action in flight (on abort: its hand-on, bounded). */
  async stop(): Promise<void> {
    await this.#running;
  }
}
