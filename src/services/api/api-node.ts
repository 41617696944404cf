/**
 * The node's API side: podctl's writes to the API server (Events, pod status, the final delete)
 * made so that they never block the node. A write that fails for a transient reason (the server
 * down, 5xx, 429 past the retry budget) is recorded in the state dir and performed by the next
 * podctl run that has a kubeconfig (`replayPending`); the runtime side of a kill goes on meanwhile.
 *
 * Invariants:
 * - Events are deduplicated per pod UID and reason: once per process here, once in the API server
 *   (one Event object, named by the UID and reason), once in the pending records.
 * - A final delete is only ever issued for a pod with no running container on this node; replayed
 *   ones are checked against the runtime again first.
 * - 404 and 409 answers to a final delete or a status patch are success-and-forget.
 * - While the client's write gate is shut (the agent before the node restriction is confirmed) no
 *   write is attempted: it is `withheld`, quietly (the agent says once why), and nothing is replayed.
 */
import type { V1Pod } from '../../engine/types.js';
import type { KubeClient } from '../../kube/client.js';
import { KubeError } from '../../kube/errors.js';
import type { WriteGate } from '../../kube/node-restriction.js';
import { PendingApiActions, pendingId, type PendingAction, type PendingRecord } from '../../kube/pending.js';
import { evictedStatus, type PodStatusChange } from '../../kube/status.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';
import { within } from '../../lib/abortable.js';
import { formatDuration } from '../../lib/duration.js';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';

export interface ApiNodeOptions {
  kubeconfig?: string | undefined;
  node: string;
  stateDir: string;
  reporter?: Reporter;
  /** Deadline per API call attempt, ms. */
  timeoutMs?: number;
  /** Test seam: the client to use instead of connecting. */
  client?: KubeClient;
  /** The client's write gate (default: open); the agent passes one shut until its check says yes. */
  writes?: WriteGate;
}

/** withheld: not sent, the write gate is shut (the agent's node restriction is not confirmed). */
export type WriteOutcome = 'done' | 'pending' | 'forgotten' | 'withheld';

export interface PodRef {
  namespace: string;
  name: string;
  uid: string;
}

export interface ReplayReport {
  done: number;
  left: number;
}

const podRef = (pod: V1Pod): PodRef => ({ namespace: pod.metadata?.namespace ?? 'default', name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' });

const PENDING_NOTE = 'recorded; the next podctl run with a kubeconfig sends it';

/** How long a kill waits for an Event or status write before recording it and going on, ms. */
export const WRITE_WAIT_MS = 2_000;

/** Connects to the API server when one is configured; undefined without one. */
export async function openApiNode(options: ApiNodeOptions): Promise<ApiNode | undefined> {
  if (options.client) return new ApiNode(options.client, options);
  // without an API server configured, nothing of the client is loaded (kube/source.ts alone)
  const source = (await import('../../kube/source.js')).detectKube(options.kubeconfig);
  if (!source) return undefined;
  const { connectKube } = await import('../../kube/index.js');
  const reporter = options.reporter ?? silentReporter();
  const kube = await connectKube(source, {
    node: options.node,
    ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
    onRetry: (call, error, wait) => reporter.debug(`${call}: ${error.message}; retrying in ${wait} ms`),
    ...(options.writes ? { writes: options.writes } : {}),
  });
  return new ApiNode(kube, options);
}

export class ApiNode {
  readonly kube: KubeClient;
  readonly pending: PendingApiActions;
  readonly #reporter: Reporter;
  readonly #sentEvents = new Set<string>();
  readonly #late = new Set<Promise<unknown>>();
  /** Ends writes still in flight when the command is done (`close`); their records stay. */
  readonly #abort = new AbortController();

  constructor(kube: KubeClient, options: ApiNodeOptions) {
    this.kube = kube;
    this.pending = new PendingApiActions(options.stateDir);
    this.#reporter = options.reporter ?? silentReporter();
  }

  /**
   * One write: done, or recorded for later when the API server cannot be reached. Permanent errors
   * throw. With `waitMs`, a write still unanswered by then is recorded and the caller goes on (the
   * kill must not wait for the API server); if it completes later in this process, its record is
   * removed again.
   */
  async #write(pod: PodRef, action: PendingAction, run: () => Promise<WriteOutcome>, waitMs?: number): Promise<WriteOutcome> {
    if (!this.kube.writes.open) return 'withheld';
    const attempt = run();
    const record = async (message: string): Promise<WriteOutcome> => {
      await this.pending.record(pod, action, message);
      this.#reporter.warn(`${message}; ${PENDING_NOTE}`);
      return 'pending';
    };
    try {
      if (waitMs === undefined) return await attempt;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), waitMs);
      });
      const first = await Promise.race([attempt, late]).finally(() => clearTimeout(timer));
      if (first !== 'late') return first;
      const outcome = await record(
        `${action.kind === 'event' ? 'post event' : action.kind} for ${pod.namespace}/${pod.name}: no answer from the API server ${this.kube.server} within ${formatDuration(waitMs)}`,
      );
      this.#late.add(
        attempt.then(
          () => this.pending.remove(pendingId(pod.uid, action)),
          () => undefined,
        ),
      );
      return outcome;
    } catch (error) {
      if (error instanceof KubeError && error.transient) return record(error.message);
      throw error;
    }
  }

  /**
   * Ends the writes still in flight (recorded as pending, so the next run sends them): a command
   * that is done does not linger for an API server that does not answer.
   */
  close(): void {
    this.#abort.abort(new DOMException('podctl is done', 'AbortError'));
  }

  /** Waits (bounded) for writes that were recorded as pending while still in flight. */
  async settle(boundMs = 5_000): Promise<void> {
    if (this.#late.size === 0) return;
    await within(Promise.allSettled([...this.#late]), boundMs, undefined);
  }

  /** An Event, at most once per pod UID and reason in this process. */
  async event(pod: V1Pod, type: 'Normal' | 'Warning', reason: string, message: string): Promise<WriteOutcome> {
    const key = `${pod.metadata?.uid}/${reason}`;
    if (this.#sentEvents.has(key)) return 'done';
    if (!this.kube.writes.open) return 'withheld';
    this.#sentEvents.add(key);
    return this.#write(
      podRef(pod),
      { kind: 'event', type, reason, message },
      async () => {
        await this.kube.postEvent(pod, type, reason, message, this.#abort.signal);
        return 'done';
      },
      WRITE_WAIT_MS,
    );
  }

  async status(pod: PodRef, change: PodStatusChange): Promise<WriteOutcome> {
    return this.#write(pod, { kind: 'status', ...change }, async () => ((await this.kube.patchStatus(pod, change, this.#abort.signal)) === 'patched' ? 'done' : 'forgotten'), WRITE_WAIT_MS);
  }

  /** The kubelet's final delete; the caller has checked that nothing of the pod runs on this node. */
  async finalDelete(pod: PodRef): Promise<WriteOutcome> {
    return this.#write(pod, { kind: 'final-delete' }, async () => ((await this.kube.finalDelete(pod)) === 'deleted' ? 'done' : 'forgotten'));
  }

  /**
   * The eviction reporter of kill/evict (terminate.ts): an Event and the Failed/Evicted status with
   * the DisruptionTarget condition. A write the API server could not take is recorded and reported
   * as an error saying so.
   */
  evictionReporter(): Pick<KubeClient, 'node' | 'postEvent' | 'markEvicted'> {
    const deferred = (what: string): KubeError => new KubeError(what, `${what}: the API server is unreachable; ${PENDING_NOTE}`, undefined, { transient: true });
    return {
      node: this.kube.node,
      postEvent: async (pod, type, reason, message) => {
        const outcome = await this.event(pod, type, reason, message);
        if (outcome === 'withheld') this.kube.writes.check('post event');
        if (outcome === 'pending') throw deferred('post event');
      },
      markEvicted: async (pod, message) => {
        const outcome = await this.status(podRef(pod), evictedStatus(message));
        if (outcome === 'withheld') this.kube.writes.check('patch pod status');
        if (outcome === 'pending') throw deferred('patch pod status');
      },
    };
  }

  /**
   * Performs what earlier runs could not send. `stillRuns(uid)` guards final deletes: a pod with a
   * running container on this node keeps its record.
   */
  async replayPending(stillRuns: (uid: string) => Promise<boolean>): Promise<ReplayReport> {
    const records = await this.pending.list();
    if (!this.kube.writes.open) return { done: 0, left: records.length };
    let done = 0;
    for (const record of records) {
      try {
        if (await this.#replayOne(record, stillRuns)) {
          await this.pending.remove(record.id);
          done += 1;
        }
      } catch (error) {
        if (this.#abort.signal.aborted) break; // the command is done: the record stays for the next run
        if (error instanceof KubeError && error.transient) {
          this.#reporter.debug(`pending ${record.action.kind} for ${record.pod.namespace}/${record.pod.name}: ${error.message}`);
          break; // the server is still unreachable: keep the rest for later
        }
        // permanent (403, …): say it once and drop it, it would fail forever
        this.#reporter.warn(`${(error as Error).message} (dropping the pending ${record.action.kind} for ${record.pod.namespace}/${record.pod.name})`);
        await this.pending.remove(record.id);
      }
    }
    if (done > 0) this.#reporter.info(`API server: sent ${done} pending action(s) recorded by earlier runs`);
    return { done, left: records.length - done };
  }

  async #replayOne(record: PendingRecord, stillRuns: (uid: string) => Promise<boolean>): Promise<boolean> {
    const { pod, action } = record;
    const signal = this.#abort.signal;
    switch (action.kind) {
      case 'event': {
        const current = await this.kube.getPod(pod.namespace, pod.name, signal);
        const object: V1Pod = current?.metadata?.uid === pod.uid ? current : { metadata: { name: pod.name, namespace: pod.namespace, uid: pod.uid } };
        await this.kube.postEvent(object, action.type, action.reason, action.message, signal);
        return true;
      }
      case 'status':
        await this.kube.patchStatus(pod, { phase: action.phase, reason: action.reason, message: action.message }, signal);
        return true;
      case 'final-delete':
        if (await stillRuns(pod.uid)) return false;
        await this.kube.finalDelete(pod, signal);
        return true;
    }
  }
}

/**
 * May the final delete go out for this pod? Only when nothing of it runs on this node: the runtime
 * has no such pod, or its worker is terminated (or never drove it) and no container runs.
 */
export function terminatedOnNode(pod: PodInfo | undefined): boolean {
  if (!pod) return true;
  return (pod.state === 'terminated' || pod.state === 'finished' || pod.state === 'runtime') && pod.containersRunning === 0;
}

/** Is anything of pod `uid` still running on this node (per the session's runtime view)? */
export async function runsOnNode(session: NodeSession, uid: string): Promise<boolean> {
  return !terminatedOnNode(await session.getPod(uid));
}

/**
 * Sends what earlier runs could not (a command with a kubeconfig calls this once it has a session).
 * Bounded: after `waitMs` the command goes on and the replay continues beside it until `close()`.
 */
export async function replayPendingApiWrites(api: ApiNode, session: NodeSession, waitMs = WRITE_WAIT_MS): Promise<ReplayReport | undefined> {
  const replay = api.replayPending((uid) => runsOnNode(session, uid)).catch(() => undefined);
  return within(replay, waitMs, undefined);
}
