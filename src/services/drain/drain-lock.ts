/**
 * The cluster's drain lock: at most `slots` nodes drain at once, each slot a `coordination.k8s.io/v1`
 * Lease `podctl-drain-<i>` in the agent's namespace whose holderIdentity is the draining node's name
 * (kured's lock, on a Kubernetes primitive; the Leases client-go's leader election uses).
 *
 * Invariants:
 * - A slot is taken only when it is free (no holder), already this node's (an agent restarted
 *   mid-drain takes it back), or expired: its record unchanged for its leaseDurationSeconds as this
 *   agent observed it (client-go's rule: local time of observation, no clock compared across nodes).
 * - Every write is at the resourceVersion read: of two agents racing for one slot, one wins (409 for
 *   the other, which tries the next slot or waits).
 * - Held, the Lease is renewed every third of its duration until `release()` (the drain ended: the
 *   holder is cleared) or `abandon()` (handed on: renewal stops, the holder stays; the next agent on
 *   this node takes it back, or it expires).
 */
import type { LeaseRecord, LeaseStore } from '../../kube/leases.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';

const DRAIN_LEASE_PREFIX = 'podctl-drain-';
/** The default leaseDurationSeconds of a slot: a holder silent this long has lost it. */
const DEFAULT_DRAIN_LEASE_SECONDS = 60;
/** The bound of one renewal or release write. */
const WRITE_BOUND_MS = 5_000;

export interface DrainLockOptions {
  leases: LeaseStore;
  node: string;
  /** How many nodes may drain at once (one Lease each). */
  slots: number;
  leaseDurationSeconds?: number;
  reporter?: Reporter;
  now?: () => number;
}

export type Acquired = { held: true; lease: string } | { held: false; why: string };

export class DrainLock {
  readonly #options: DrainLockOptions;
  readonly #now: () => number;
  readonly #reporter: Reporter;
  readonly #durationS: number;
  /** What this agent last saw of each slot, and since when (the expiry rule). */
  readonly #observed = new Map<string, { resourceVersion: string | undefined; at: number }>();
  #held: LeaseRecord | undefined;
  #renewal: NodeJS.Timeout | undefined;

  constructor(options: DrainLockOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#reporter = options.reporter ?? silentReporter();
    this.#durationS = options.leaseDurationSeconds ?? DEFAULT_DRAIN_LEASE_SECONDS;
  }

  /** Takes a free, own or expired slot; otherwise says who holds them (for the queued message). */
  async acquire(signal?: AbortSignal): Promise<Acquired> {
    if (this.#held) return { held: true, lease: this.#held.name };
    const busy: string[] = [];
    for (let i = 0; i < this.#options.slots; i += 1) {
      const name = `${DRAIN_LEASE_PREFIX}${i}`;
      const outcome = await this.#take(name, signal);
      if (outcome === true) return { held: true, lease: name };
      busy.push(outcome);
    }
    return { held: false, why: `at most ${this.#options.slots} node(s) drain at once: ${busy.join('; ')}` };
  }

  /** true when taken, else who holds it. */
  async #take(name: string, signal?: AbortSignal): Promise<true | string> {
    const { leases, node } = this.#options;
    const now = this.#now();
    const stamp = new Date(now).toISOString();
    const mine = { holderIdentity: node, leaseDurationSeconds: this.#durationS, renewTime: stamp };
    const current = await leases.get(name, signal);
    if (!current) {
      const created = await leases.create({ name, ...mine, acquireTime: stamp, leaseTransitions: 0 }, signal);
      return created === 'taken' ? this.#lostRace(name, signal) : this.#hold(created);
    }
    const holder = current.holderIdentity ?? '';
    const ours = holder === node;
    if (holder !== '' && !ours && !this.#expired(current, now)) return `Lease ${name} held by node ${holder}`;
    if (holder !== '' && !ours) this.#reporter.info(`agent: drain lock ${name}: node ${holder} has not renewed it for ${current.leaseDurationSeconds ?? this.#durationS}s; taking it over`);
    const transitions = (current.leaseTransitions ?? 0) + (ours ? 0 : 1);
    const updated = await leases.update({ ...current, ...mine, acquireTime: ours && current.acquireTime ? current.acquireTime : stamp, leaseTransitions: transitions }, signal);
    return updated === 'conflict' ? this.#lostRace(name, signal) : this.#hold(updated);
  }

  /** Another node wrote the slot first: who holds it now. */
  async #lostRace(name: string, signal?: AbortSignal): Promise<string> {
    const now = await this.#options.leases.get(name, signal);
    return `Lease ${name} held by node ${now?.holderIdentity || '(another node, just now)'}`;
  }

  /** Expired: the same record (resourceVersion) seen for longer than its duration. */
  #expired(current: LeaseRecord, now: number): boolean {
    const seen = this.#observed.get(current.name);
    if (!seen || seen.resourceVersion !== current.resourceVersion) {
      this.#observed.set(current.name, { resourceVersion: current.resourceVersion, at: now });
      return false;
    }
    return now - seen.at > (current.leaseDurationSeconds ?? this.#durationS) * 1000;
  }

  #hold(record: LeaseRecord): true {
    this.#held = record;
    this.#renewal = setInterval(() => void this.#renew(), (this.#durationS * 1000) / 3);
    this.#renewal.unref();
    return true;
  }

  async #renew(): Promise<void> {
    const held = this.#held;
    if (!held) return;
    try {
      const renewed = await this.#options.leases.update({ ...held, renewTime: new Date(this.#now()).toISOString() }, AbortSignal.timeout(WRITE_BOUND_MS));
      if (renewed === 'conflict') {
        this.#reporter.warn(`agent: drain lock ${held.name}: taken by another node while this one drained (not renewed in time); the drain goes on`);
        this.abandon();
      } else if (this.#held === held) this.#held = renewed;
    } catch (error) {
      this.#reporter.debug(`agent: drain lock ${held.name}: renewal failed: ${(error as Error).message} (tried again in ${Math.round(this.#durationS / 3)}s)`);
    }
  }

  /** The drain ended: the holder is cleared, the slot free for the next node (a failure is said, the Lease then expires). */
  async release(): Promise<void> {
    const held = this.#held;
    this.abandon();
    if (!held) return;
    const { holderIdentity: _holder, ...rest } = held;
    const released = await this.#options.leases.update({ ...rest, renewTime: new Date(this.#now()).toISOString() }, AbortSignal.timeout(WRITE_BOUND_MS)).catch((error: Error) => error);
    if (released instanceof Error) this.#reporter.warn(`agent: drain lock ${held.name}: release failed: ${released.message}; it expires in ${this.#durationS}s`);
  }

  /** Stops renewing without releasing (the drain is handed on to the next agent on this node). */
  abandon(): void {
    clearInterval(this.#renewal);
    this.#renewal = undefined;
    this.#held = undefined;
  }
}
