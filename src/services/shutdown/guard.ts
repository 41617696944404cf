/**
 * `podctl agent --shutdown-guard`: pods stopped in the kubelet's shutdown priority groups when the
 * machine shuts down or reboots, within the delay logind grants.
 *
 * The guard holds a logind delay inhibitor lock on shutdown (inhibit.ts) and listens for
 * `PrepareForShutdown` (logind.ts). On `true` it drains the node with the drain service (drain.ts,
 * the same priority-group drain `podctl drain` runs) in groups fitted to logind's delay
 * (budget.ts), writes the report (record.ts) and releases the lock, so the shutdown goes on. On
 * `false` (the shutdown was cancelled) it stops the drain and takes the lock again. Stopped by
 * SIGTERM (`stop`) while systemd's job queue holds a shutdown target but logind said nothing (a
 * shutdown that went past logind), it drains within its stop timeout instead.
 *
 * Beside the kubelet: when the kubelet's own graceful shutdown holds an inhibitor (ListInhibitors
 * names who "kubelet"), the guard waits for that lock to go (the kubelet's share ends) or for the
 * time it needs for its own groups, and then drains what is still running. The kubelet rule holds
 * throughout: while a kubelet runs (or may: `unknown`), the pods it owns (static, or taken from the
 * API server) are left to it and recorded as such; once it is down, every pod is the guard's. With
 * an API server the pods the guard stopped get the kubelet's node-shutdown status
 * (shutdown-status.ts).
 *
 * Invariants:
 * - One shutdown drain at a time; a second PrepareForShutdown(true) while one runs is ignored.
 * - The lock is released only after the report is written (or could not be, said), and at the
 *   latest `RELEASE_MARGIN_MS` before logind's delay ends: the drain's bound is the window.
 * - A lock lost without `release` (systemd-inhibit killed) is said and taken again, with back-off.
 */
import { formatDuration } from '../../lib/duration.js';
import { sleep, within } from '../../lib/abortable.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';
import { SYSTEM_CRITICAL_PRIORITY, isApiSourcedPod } from '../../engine/pod-kinds.js';
import type { KubeletStatus } from '../../kube/kubelet.js';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import type { ApiNode } from '../api/api-node.js';
import type { PriorityGroup } from '../drain/drain-plan.js';
import { parseSelection, type PodSelection } from '../../lib/refs.js';
import { drainNode, type DrainResult } from '../drain/drain.js';
import { RELEASE_MARGIN_MS, SETTLE_MARGIN_MS, checkBudget, fitGroups, groupsTotalSeconds, type BudgetCheck } from './budget.js';
import { takeDelayLock, type DelayLock } from './inhibit.js';
import { Logind, isKubeletInhibitor, isPodctlInhibitor, shutdownJobQueued } from './logind.js';
import { SHUTDOWN_FORMAT, recordId, writeShutdownRecord, type ShutdownPodOutcome, type ShutdownRecord } from './record.js';

const KUBELET_POLL_MS = 250;
/** How long a podctl lock listed at start may take to go (a guard restarting: its old holder ending). */
const OTHER_GUARD_WAIT_MS = 3_000;
const RETAKE_LOCK_MS = 2_000;
const LOCK_WHY = 'podctl stops pods in priority groups before the node shuts down';

export interface ShutdownGuardOptions {
  session: NodeSession;
  stateDir: string;
  groups: PriorityGroup[];
  /** How long a drain after SIGTERM may take (the unit's stop timeout, less a margin). */
  stopTimeoutMs: number;
  api?: ApiNode;
  kubeletState?: () => Promise<KubeletStatus>;
  isSelf?: (pod: PodInfo) => boolean;
  reporter?: Reporter;
  /** The bus (default: logind.ts `systemBusAddress`). */
  busAddress?: string;
  now?: () => number;
}

/** What the guard knows at start: the budget check, and whether the kubelet holds its own lock. */
export interface GuardFacts extends BudgetCheck {
  kubeletInhibitor: boolean;
}

/**
 * One guard per node: the podctl DaemonSet's agent with the guard, or the systemd unit, not both
 * (two would drain the same pods twice). A podctl delay lock that logind still lists after
 * `OTHER_GUARD_WAIT_MS` belongs to another live guard, whatever its state dir: refused.
 */
async function refuseSecondGuard(logind: Logind): Promise<void> {
  const deadline = Date.now() + OTHER_GUARD_WAIT_MS;
  for (;;) {
    const other = (await logind.listInhibitors()).find(isPodctlInhibitor);
    if (!other) return;
    if (Date.now() >= deadline) {
      throw new Error(
        `another podctl shutdown guard holds logind's delay lock (pid ${other.pid}): a node runs one guard, the podctl DaemonSet's (deploy/optional/shutdown-guard) or the podctl-shutdown-guard unit, not both`,
      );
    }
    await sleep(KUBELET_POLL_MS);
  }
}

export class ShutdownGuard {
  readonly facts: GuardFacts;
  readonly #options: ShutdownGuardOptions;
  readonly #logind: Logind;
  readonly #reporter: Reporter;
  readonly #now: () => number;
  #lock: DelayLock | undefined;
  #drain: { promise: Promise<void>; cancel: AbortController; handOn: AbortController } | undefined;
  /** When SIGTERM reached a shutdown drain under way (`stop`). */
  #sigtermAt: number | undefined;
  #stopped = false;
  #unsubscribe: () => void = () => undefined;

  private constructor(options: ShutdownGuardOptions, logind: Logind, facts: GuardFacts) {
    this.#options = options;
    this.#logind = logind;
    this.facts = facts;
    this.#reporter = options.reporter ?? silentReporter();
    this.#now = options.now ?? Date.now;
  }

  /** Connects to logind, says the budget, listens for PrepareForShutdown and takes the lock. */
  static async start(options: ShutdownGuardOptions): Promise<ShutdownGuard> {
    const logind = await Logind.connect(options.busAddress);
    try {
      const delayMs = await logind.inhibitDelayMaxMs();
      await refuseSecondGuard(logind);
      const kubeletInhibitor = (await logind.listInhibitors()).some(isKubeletInhibitor);
      const guard = new ShutdownGuard(options, logind, { ...checkBudget(options.groups, delayMs), kubeletInhibitor });
      await guard.#arm();
      return guard;
    } catch (error) {
      logind.close();
      throw error;
    }
  }

  async #arm(): Promise<void> {
    const facts = this.facts;
    if (facts.warning) this.#reporter.warn(`shutdown guard: ${facts.warning}`);
    this.#unsubscribe = await this.#logind.onPrepareForShutdown((start) => this.#prepare(start));
    this.#logind.onClosed((error) => {
      if (!this.#stopped) this.#reporter.warn(`shutdown guard: the D-Bus connection ended (${error.message}); the guard no longer hears logind and its lock goes with it`);
    });
    await this.#takeLock();
    this.#reporter.info(
      `shutdown guard: holding logind's delay lock on shutdown (${this.#logind.address}); groups ${groupsTotalSeconds(this.#options.groups)}s, logind's delay ${formatDuration(facts.delayMs)}` +
        (facts.kubeletInhibitor ? "; the kubelet's graceful shutdown holds its own lock: podctl goes after it" : ''),
    );
  }

  async #takeLock(): Promise<void> {
    const lock = await takeDelayLock(this.#logind, LOCK_WHY);
    this.#lock = lock;
    void lock.lost.then(async (reason) => {
      if (this.#lock !== lock || this.#stopped) return;
      this.#lock = undefined;
      await lock.release();
      this.#reporter.warn(`shutdown guard: logind's lock was lost (${reason}); taking it again`);
      while (!this.#stopped && !this.#lock && !this.#drain) {
        try {
          await this.#takeLock();
        } catch (error) {
          this.#reporter.warn(`shutdown guard: ${(error as Error).message}; trying again in ${RETAKE_LOCK_MS / 1000}s`);
          await sleep(RETAKE_LOCK_MS);
        }
      }
    });
  }

  async #releaseLock(): Promise<void> {
    const lock = this.#lock;
    this.#lock = undefined;
    await lock?.release();
  }

  #prepare(start: boolean): void {
    if (start) {
      if (this.#drain || this.#stopped) return;
      this.#reporter.info('shutdown guard: logind announced a shutdown (PrepareForShutdown true)');
      void this.#begin('logind', this.facts.delayMs);
      return;
    }
    this.#reporter.info('shutdown guard: the shutdown was cancelled (PrepareForShutdown false)');
    const drain = this.#drain;
    drain?.cancel.abort(new DOMException('the shutdown was cancelled', 'AbortError'));
    void (drain?.promise ?? Promise.resolve()).then(async () => {
      if (this.#stopped || this.#lock) return;
      await this.#takeLock().catch((error: Error) => this.#reporter.warn(`shutdown guard: ${error.message}`));
    });
  }

  #begin(trigger: ShutdownRecord['trigger'], windowMs: number): Promise<void> {
    const cancel = new AbortController();
    const handOn = new AbortController();
    const promise = this.#shutdown(trigger, windowMs, cancel.signal, handOn.signal)
      .catch((error: Error) => this.#reporter.warn(`shutdown guard: the shutdown drain failed: ${error.message}`))
      .finally(async () => {
        if (trigger === 'logind' && !cancel.signal.aborted) await this.#releaseLock();
        this.#drain = undefined;
      });
    this.#drain = { promise, cancel, handOn };
    return promise;
  }

  /**
   * The agent is stopping (SIGTERM). A shutdown drain under way is waited for; one still deferring
   * to the kubelet stops deferring and hands on (the kubelet's pods stay its own; the rest are
   * stopped within the stop timeout). Without a drain, when systemd is taking the machine down, the
   * fallback drain runs within the stop timeout. Then the lock is released and logind left.
   */
  async stop(): Promise<void> {
    if (this.#drain) {
      this.#sigtermAt = this.#now();
      this.#drain.handOn.abort(new DOMException('the guard was stopped (SIGTERM)', 'AbortError'));
    } else {
      const job = await shutdownJobQueued(this.#logind).catch(() => undefined);
      if (job !== undefined) {
        this.#reporter.warn(`shutdown guard: stopped while systemd starts ${job} and logind announced nothing: draining within the stop timeout (${formatDuration(this.#options.stopTimeoutMs)})`);
        void this.#begin('sigterm', this.#options.stopTimeoutMs);
      }
    }
    await this.#drain?.promise;
    this.#stopped = true;
    this.#unsubscribe();
    await this.#releaseLock();
    this.#logind.close();
  }

  async #shutdown(trigger: ShutdownRecord['trigger'], windowMs: number, signal: AbortSignal, handOn: AbortSignal): Promise<void> {
    const { session } = this.#options;
    const asked = [...this.#options.groups].sort((a, b) => a.priority - b.priority);
    const reporter = this.#reporter;
    const startedAt = this.#now();
    let deadline = startedAt + windowMs - RELEASE_MARGIN_MS;
    const base: ShutdownRecord = {
      format: SHUTDOWN_FORMAT,
      version: 1,
      id: recordId(startedAt),
      trigger,
      state: 'draining',
      guardPid: process.pid,
      startedAt,
      windowMs,
      groupsTotalMs: groupsTotalSeconds(asked) * 1000,
      kubelet: { inhibitor: false, deferredMs: 0, owned: 0 },
      groups: [],
      pods: [],
    };
    const fittedAtStart = fitGroups(asked, this.#windowForGroups(asked, deadline, startedAt));
    const plan = await drainNode({ session, selection: everyPod(), groups: fittedAtStart, dryRun: true, ...this.#self() });
    let record: ShutdownRecord = { ...base, groups: groupsOf(asked, fittedAtStart), pods: podsOf(plan, undefined, () => 'pending') };
    await this.#write(record);

    // the kubelet's share first: its lock goes when its own graceful shutdown is done (or it died)
    const deferred = await this.#deferToKubelet(groupsTotalSeconds(fittedAtStart) * 1000, startedAt, deadline, signal, handOn);
    const handedOn = deferred?.handedOn === true;
    if (deferred) record = { ...record, kubelet: { ...record.kubelet, inhibitor: true, deferredMs: deferred.deferredMs } };
    // stopped while it deferred: what the kubelet does not own is stopped within the stop timeout
    if (handedOn) deadline = Math.min(deadline, (this.#sigtermAt ?? this.#now()) + this.#options.stopTimeoutMs - RELEASE_MARGIN_MS);
    const kubelet = await (this.#options.kubeletState?.() ?? Promise.resolve(undefined)).catch(() => undefined);
    // the kubelet rule: a pod a running kubelet owns is never stopped over CRI behind its back
    const kubeletRuns = kubelet !== undefined && kubelet.state !== 'down';
    const ownedByKubelet = (pod: PodInfo): boolean => kubeletRuns && (pod.static || isApiSourcedPod(pod.pod));
    const fitted = fitGroups(asked, this.#windowForGroups(asked, deadline, this.#now()));
    const leftToKubelet = new Set<string>();
    const result = signal.aborted
      ? undefined
      : await drainNode({
          session,
          selection: everyPod(),
          groups: fitted,
          dryRun: false,
          isExcluded: (pod) => {
            if (!ownedByKubelet(pod)) return false;
            leftToKubelet.add(pod.uid);
            return true;
          },
          timeoutMs: Math.max(1, deadline - this.#now()),
          reporter,
          signal,
          ...this.#self(),
        });
    if (result && this.#options.api && this.#options.api !== undefined) {
      const { reportShutdownStatus } = await import('../drain/shutdown-status.js');
      await within(reportShutdownStatus(this.#options.api, result, reporter), Math.max(0, deadline - this.#now()), undefined);
    }
    const outcomes = await this.#outcomes(result, leftToKubelet, handedOn ? 'handed-on' : 'running');
    // a pod planned at the start that the drain found stopped already: the kubelet's work when it went first
    const stoppedBefore: ShutdownPodOutcome = record.kubelet.inhibitor ? 'kubelet' : 'stopped';
    record = {
      ...record,
      state: signal.aborted ? 'cancelled' : handedOn ? 'handed-on' : 'done',
      endedAt: this.#now(),
      kubelet: { ...record.kubelet, owned: leftToKubelet.size },
      groups: result ? groupsOf(asked, fitted) : record.groups,
      pods: podsOf(plan, result, (uid) => outcomes.get(uid) ?? (result && !signal.aborted ? stoppedBefore : 'running')),
    };
    await this.#write(record);
    const counts = countOutcomes(record);
    reporter.info(
      `shutdown guard: ${DRAIN_ENDS[record.state]} in ${formatDuration(record.endedAt! - startedAt)}: ` +
        `${counts.stopped} stopped in time, ${counts.killed} killed at the deadline, ${counts.kubelet} stopped by the kubelet, ${counts['handed-on']} left to the kubelet, ${counts.running} still running`,
    );
  }

  /**
   * While the kubelet's graceful shutdown holds its lock: wait for the lock to go, at most until the
   * guard needs the rest of the window for its groups (`reserveMs`, at most half), the shutdown is
   * cancelled, or the guard is stopped (`handOn`). Undefined when the kubelet holds no lock.
   */
  async #deferToKubelet(groupsMs: number, startedAt: number, deadline: number, signal: AbortSignal, handOn: AbortSignal): Promise<{ deferredMs: number; handedOn: boolean } | undefined> {
    const kubeletHolds = async (): Promise<boolean> => (await this.#logind.listInhibitors().catch(() => [])).some(isKubeletInhibitor);
    if (!(await kubeletHolds())) return undefined;
    const until = deadline - Math.min(groupsMs, (deadline - startedAt) / 2);
    const either = AbortSignal.any([signal, handOn]);
    this.#reporter.info(`shutdown guard: the kubelet's graceful shutdown holds its lock: waiting for it (at most ${formatDuration(Math.max(0, until - this.#now()))})`);
    while (!either.aborted && this.#now() < until && (await kubeletHolds())) {
      await sleep(Math.min(KUBELET_POLL_MS, Math.max(1, until - this.#now())), either, { onAbort: 'resolve' });
    }
    const deferredMs = this.#now() - startedAt;
    const handedOn = handOn.aborted && !signal.aborted;
    const why = handedOn ? 'the guard was stopped (SIGTERM)' : this.#now() >= until ? "the kubelet's share is over" : "the kubelet's lock is gone";
    const next = handedOn
      ? `leaving the kubelet's pods to its graceful shutdown and stopping the rest within the stop timeout (${formatDuration(this.#options.stopTimeoutMs)})`
      : 'stopping what still runs';
    this.#reporter.info(`shutdown guard: ${why} after ${formatDuration(deferredMs)}; ${next}`);
    return { deferredMs, handedOn };
  }

  /** Each pod's outcome: its drain outcome and, for the stopped, whether the runtime killed it at the end of its grace (exit 137). */
  async #outcomes(result: DrainResult | undefined, leftToKubelet: Set<string>, leftRunning: ShutdownPodOutcome): Promise<Map<string, ShutdownPodOutcome>> {
    const outcomes = new Map<string, ShutdownPodOutcome>();
    const listed = await this.#options.session.listPods({ runtimeMaxAgeMs: 0 }).catch(() => [] as PodInfo[]);
    const byUid = new Map(listed.map((p) => [p.uid, p] as const));
    for (const pod of result?.groups.flatMap((g) => g.pods) ?? []) {
      const seen = byUid.get(pod.uid);
      if (pod.outcome === 'terminated' || pod.outcome === 'gone') {
        outcomes.set(pod.uid, seen?.runtime?.containerStatuses.some((c) => c.exitCode === 137) === true ? 'killed' : 'stopped');
      } else outcomes.set(pod.uid, 'running');
    }
    for (const uid of leftToKubelet) {
      const seen = byUid.get(uid);
      const running = seen?.runtime?.containerStatuses.some((c) => c.state === 'running') ?? false;
      outcomes.set(uid, running ? leftRunning : 'kubelet');
    }
    return outcomes;
  }

  /** Seconds the groups may have from `now`: all that is left, less the settle margin when they must shrink. */
  #windowForGroups(groups: PriorityGroup[], deadline: number, now: number): number {
    const left = Math.max(0, deadline - now);
    return left / 1000 >= groupsTotalSeconds(groups) ? left / 1000 : Math.max(0, left - SETTLE_MARGIN_MS) / 1000;
  }

  #self(): { isSelf?: (pod: PodInfo) => boolean } {
    return this.#options.isSelf ? { isSelf: this.#options.isSelf } : {};
  }

  async #write(record: ShutdownRecord): Promise<void> {
    await writeShutdownRecord(this.#options.stateDir, record).catch((error: Error) => this.#reporter.warn(`shutdown guard: the shutdown record was not written: ${error.message}`));
  }
}

function groupsOf(asked: PriorityGroup[], fitted: PriorityGroup[]): ShutdownRecord['groups'] {
  return asked.map((group, index) => ({
    priority: group.priority,
    budgetSeconds: group.budgetSeconds,
    givenSeconds: fitted[index]?.budgetSeconds ?? 0,
    critical: group.priority >= SYSTEM_CRITICAL_PRIORITY,
  }));
}

/**
 * One line per pod the shutdown found running (the plan at its start) and per pod its drain met
 * besides: the group, the grace it was given (its own when it was left to the kubelet) and what
 * became of it.
 */
function podsOf(plan: DrainResult, result: DrainResult | undefined, outcomeOf: (uid: string) => ShutdownPodOutcome): ShutdownRecord['pods'] {
  const drained = new Map((result?.groups ?? []).flatMap((g) => g.pods.map((p) => [p.uid, { pod: p, group: g.priority }] as const)));
  const planned = plan.groups.flatMap((g) => g.pods.map((p) => ({ pod: p, group: g.priority })));
  const seen = new Set(planned.map((p) => p.pod.uid));
  const all = [...planned, ...[...drained.values()].filter((d) => !seen.has(d.pod.uid))];
  return all.map(({ pod, group }) => {
    const done = drained.get(pod.uid)?.pod;
    return {
      uid: pod.uid,
      namespace: pod.namespace,
      name: pod.name,
      group,
      graceSeconds: done?.gracePeriodSeconds ?? pod.podGraceSeconds,
      outcome: outcomeOf(pod.uid),
      ...(done?.elapsedMs !== undefined ? { elapsedMs: Math.round(done.elapsedMs) } : {}),
    };
  });
}

function everyPod(): PodSelection {
  return parseSelection({ args: [], allNamespaces: true, allowEmpty: true });
}

const DRAIN_ENDS: Record<ShutdownRecord['state'], string> = {
  draining: 'drain under way',
  done: 'drain over',
  cancelled: 'drain stopped (shutdown cancelled)',
  'handed-on': "handed on to the kubelet's graceful shutdown (stopped by SIGTERM)",
};

function countOutcomes(record: Pick<ShutdownRecord, 'pods'>): Record<ShutdownPodOutcome, number> {
  const counts: Record<ShutdownPodOutcome, number> = { stopped: 0, killed: 0, running: 0, kubelet: 0, 'handed-on': 0, pending: 0 };
  for (const pod of record.pods) counts[pod.outcome] += 1;
  return counts;
}
