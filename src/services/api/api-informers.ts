/**
 * The agent's view of the API server, kept by watches instead of a list every step: this node's pods
 * and its own Node, each one list then a watch (kube/pod-source.ts). Housekeeping reads the pods as
 * its desired set, the maintenance check reads the Node's annotations; neither asks the API server.
 *
 * Invariants:
 * - `pods()` is undefined until the first list answered; after that it is the last known set, kept
 *   while the API server does not answer (`reachability()` says since when).
 * - `onWake` is called when something the agent must act on at once arrives: a pod newly deleted in
 *   the API (deletionTimestamp set or its grace shortened, or the object gone), or the Node's
 *   `podctl.io/drain` annotation changed. `changedSince(mark)` tells whether the desired set (pod
 *   UIDs, deletions) changed since a `mark()`; a pod's status changes are not changes of it.
 * - `stop()` ends both watches and resolves once they have ended.
 */
import type { V1Pod } from '../../engine/types.js';
import { nodeView, type NodeView } from '../../kube/client.js';
import { KubeError } from '../../kube/errors.js';
import { NodeObjectSource, NodePodSource, type NodeSourceEvent, type PodSourceEvent, type SourceHealth } from '../../kube/pod-source.js';
import type { ApiNode } from './api-node.js';
import { raceAbort, within } from '../../lib/abortable.js';

const DRAIN_ANNOTATION = 'podctl.io/drain';

export interface ApiReachability {
  reachable: boolean;
  /** When the current state began (ms since the epoch). */
  since: number;
  /** The last failure while unreachable. */
  error?: string;
  /** The failure is one only the operator can fix (401, 403): retrying will not help. */
  permanent?: boolean;
}

export interface ApiInformersOptions {
  api: ApiNode;
  /** Follow the Node too (the maintenance annotation). */
  followNode: boolean;
  onWake?: (why: string) => void;
  /** A pod newly deleted in the API (deletionTimestamp set, or its grace shortened), as the event arrives. */
  onDeleting?: (pod: V1Pod) => void;
  /** Hears each source's errors and recoveries (the agent's log lines). */
  onSourceNote?: (what: 'pods' | 'node', event: PodSourceEvent | NodeSourceEvent) => void;
  now?: () => number;
  /** Backoff of the watches after a failure (tests). */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
}

/** The deletion state of a pod that matters to housekeeping: '' while it is not being deleted. */
const deletionOf = (pod: V1Pod | undefined): string => (pod?.metadata?.deletionTimestamp ? `${String(pod.metadata.deletionGracePeriodSeconds ?? '')}` : '');

export class ApiInformers {
  readonly #pods: NodePodSource;
  readonly #node: NodeObjectSource | undefined;
  readonly #stop = new AbortController();
  readonly #options: ApiInformersOptions;
  #running: Promise<unknown> | undefined;
  #generation = 0;
  #known = new Map<string, string>(); // uid → deletion state
  #drain: string | undefined;
  #failed: Promise<void>;
  #fail!: () => void;

  constructor(options: ApiInformersOptions) {
    this.#options = options;
    this.#failed = new Promise((resolve) => (this.#fail = resolve));
    const backoff = {
      ...(options.baseBackoffMs !== undefined ? { baseBackoffMs: options.baseBackoffMs } : {}),
      ...(options.maxBackoffMs !== undefined ? { maxBackoffMs: options.maxBackoffMs } : {}),
      ...(options.now ? { now: options.now } : {}),
    };
    this.#pods = new NodePodSource(options.api.kube, { ...backoff, onChange: (event) => this.#onPods(event) });
    this.#node = options.followNode ? new NodeObjectSource(options.api.kube, { ...backoff, onChange: (event) => this.#onNode(event) }) : undefined;
  }

  start(): void {
    this.#running ??= Promise.all([this.#pods.run(this.#stop.signal), this.#node?.run(this.#stop.signal)]);
  }

  /** Waits (at most `boundMs`, and no longer than a first failure) for the first list of the pods and the Node. */
  async synced(boundMs: number, signal: AbortSignal): Promise<void> {
    const both = Promise.all([this.#pods.synced(), this.#node?.synced()]);
    await within(raceAbort(Promise.race([both, this.#failed]), signal), boundMs, undefined).catch(() => undefined);
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }

  /** This node's pods as last listed and watched; undefined before the first list. */
  pods(): V1Pod[] | undefined {
    return this.#pods.hasSynced ? this.#pods.pods() : undefined;
  }

  /** This node's Node: undefined before the first list, null when it does not exist. */
  node(): NodeView | null | undefined {
    if (!this.#node?.hasSynced) return undefined;
    const n = this.#node.node();
    return n ? nodeView(n) : null;
  }

  /** How many lists the watches made (1 each + relists after 410 Gone). */
  get lists(): number {
    return this.#pods.lists + (this.#node?.lists ?? 0);
  }

  /** A mark for `changedSince`. */
  mark(): number {
    return this.#generation;
  }

  changedSince(mark: number): boolean {
    return this.#generation !== mark;
  }

  /** Reachable when both watches were answered last; else since the first of them failed. */
  reachability(): ApiReachability {
    const states: SourceHealth[] = [this.#pods.health(), ...(this.#node ? [this.#node.health()] : [])];
    const failing = states.filter((s) => !s.ok).sort((a, b) => a.since - b.since);
    if (failing.length === 0) return { reachable: true, since: Math.max(...states.map((s) => s.since)) };
    const first = failing[0]!;
    const error = first.error;
    return {
      reachable: false,
      since: first.since,
      error: error instanceof Error ? error.message : String(error),
      permanent: error instanceof KubeError && !error.transient,
    };
  }

  #onPods(event: PodSourceEvent): void {
    switch (event.kind) {
      case 'listed': {
        const next = new Map(event.objects.map((p) => [p.metadata?.uid ?? '', deletionOf(p)]));
        const deleted = [...this.#known.keys()].some((uid) => !next.has(uid)) || [...next].some(([uid, d]) => d !== '' && this.#known.get(uid) !== d);
        this.#known = next;
        this.#generation += 1;
        if (deleted) this.#options.onWake?.('pods relisted');
        break;
      }
      case 'added':
      case 'modified':
      case 'deleted': {
        const uid = event.object.metadata?.uid ?? '';
        const before = this.#known.get(uid);
        const now = event.kind === 'deleted' ? undefined : deletionOf(event.object);
        if (now === undefined) this.#known.delete(uid);
        else this.#known.set(uid, now);
        if (before === now) break; // a status change: nothing for housekeeping
        this.#generation += 1;
        if (now !== undefined && now !== '') this.#options.onDeleting?.(event.object);
        if (now === undefined || now !== '') this.#options.onWake?.(`${event.object.metadata?.namespace}/${event.object.metadata?.name} ${now === undefined ? 'deleted' : 'being deleted'}`);
        break;
      }
      case 'error':
      case 'open':
      case 'relist':
        if (event.kind === 'error') this.#fail();
        if (event.kind === 'open') this.#generation += 1; // what waited for the API server (final deletes) goes now
        this.#options.onSourceNote?.('pods', event);
        break;
      default:
        break;
    }
  }

  #onNode(event: NodeSourceEvent): void {
    switch (event.kind) {
      case 'listed':
      case 'added':
      case 'modified': {
        const drain = this.node()?.annotations[DRAIN_ANNOTATION];
        if (drain !== this.#drain && drain !== undefined) this.#options.onWake?.(`node annotation ${DRAIN_ANNOTATION}=${drain}`);
        this.#drain = drain;
        break;
      }
      case 'error':
      case 'open':
      case 'relist':
        if (event.kind === 'error') this.#fail();
        this.#options.onSourceNote?.('node', event);
        break;
      default:
        break;
    }
  }
}
