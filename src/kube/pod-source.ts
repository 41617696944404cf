/**
 * An informer, as the kubelet's API config source follows this node's pods: one list, then a watch
 * from the list's resourceVersion with bookmarks; a watch that ends (or is cut for silence,
 * transport.ts) is resumed from the last resourceVersion seen (bookmarks advance it); a 410 Gone
 * (too old resourceVersion) relists. `NodePodSource` follows this node's pods, `NodeObjectSource`
 * its Node (fieldSelector metadata.name): one mechanism, two list/watch pairs.
 *
 * Invariants:
 * - `objects()` is the list plus every watch event applied in order; `resourceVersion` is the last
 *   one seen (list, event or bookmark), so a resumed watch misses nothing and replays nothing.
 * - The first list may be served from the API server's watch cache (`resourceVersion=0`, as
 *   client-go's reflector lists): the watch from its resourceVersion brings what it lacked. A relist
 *   after 410 Gone is a quorum read (the cache could be older still).
 * - Errors never end the source: transient ones back off (bounded, jittered; a Retry-After is a
 *   floor) and resume; only the signal ends it. `onChange` hears every applied change, every error
 *   and every recovery (`open`: a list or watch answered after an error).
 * - `health()` says whether the last list or watch attempt was answered, and since when.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from './client.js';
import { KubeError } from './errors.js';
import { backoffMs, retryAfterWaitMs } from './retry.js';
import type { WatchEvent } from './transport.js';
import { sleep } from '../lib/abortable.js';

type Versioned = { metadata?: { uid?: string; name?: string; resourceVersion?: string } };

type SourceEvent<T> =
  | { kind: 'listed'; objects: T[]; resourceVersion: string }
  | { kind: 'added' | 'modified' | 'deleted'; object: T; resourceVersion: string }
  | { kind: 'bookmark'; resourceVersion: string }
  | { kind: 'relist'; reason: string }
  | { kind: 'open' }
  | { kind: 'error'; message: string; retryInMs: number; error: unknown };

export type PodSourceEvent = SourceEvent<V1Pod>;
export type NodeSourceEvent = SourceEvent<V1Node>;

export interface SourceOptions<T> {
  onChange?: (event: SourceEvent<T>) => void;
  /** Backoff after a failed list/watch (default 500 ms, up to 10 s). */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  random?: () => number;
  now?: () => number;
}

export type PodSourceOptions = SourceOptions<V1Pod>;

/** One kind of object: how to list it and how to watch it. */
interface ListWatch<T> {
  list(signal: AbortSignal, resourceVersion: '0' | ''): Promise<{ items: T[]; resourceVersion: string }>;
  watch(resourceVersion: string, onEvent: (event: WatchEvent) => void, signal: AbortSignal, onOpen: () => void): Promise<void>;
}

/** Whether the source's last list or watch attempt was answered; `since` is when that became so. */
export interface SourceHealth {
  ok: boolean;
  since: number;
  /** The last failure, while not ok. */
  error?: unknown;
}

const rvOf = (o: Versioned | undefined): string | undefined => o?.metadata?.resourceVersion;

class ListWatchSource<T extends Versioned> {
  readonly #listWatch: ListWatch<T>;
  readonly #options: SourceOptions<T>;
  readonly #objects = new Map<string, T>();
  readonly #now: () => number;
  #resourceVersion = '';
  #lists = 0;
  #health: SourceHealth;
  #synced: Promise<void>;
  #resolveSynced!: () => void;

  constructor(listWatch: ListWatch<T>, options: SourceOptions<T> = {}) {
    this.#listWatch = listWatch;
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#health = { ok: true, since: this.#now() };
    this.#synced = new Promise((resolve) => (this.#resolveSynced = resolve));
  }

  objects(): T[] {
    return [...this.#objects.values()];
  }

  get resourceVersion(): string {
    return this.#resourceVersion;
  }

  /** How many times the source listed (1 + relists after 410 Gone). */
  get lists(): number {
    return this.#lists;
  }

  /** True once the first list succeeded. */
  get hasSynced(): boolean {
    return this.#lists > 0;
  }

  health(): SourceHealth {
    return { ...this.#health };
  }

  /** Resolves after the first successful list. */
  synced(): Promise<void> {
    return this.#synced;
  }

  /** Lists and watches until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    let needList = true;
    let fromCache = true;
    while (!signal.aborted) {
      try {
        if (needList) {
          const list = await this.#listWatch.list(signal, fromCache ? '0' : '');
          this.#objects.clear();
          for (const o of list.items) this.#objects.set(keyOf(o), o);
          this.#resourceVersion = list.resourceVersion;
          this.#lists += 1;
          needList = false;
          this.#answered();
          this.#options.onChange?.({ kind: 'listed', objects: list.items, resourceVersion: list.resourceVersion });
          this.#resolveSynced();
        }
        let gone = false;
        await this.#listWatch.watch(
          this.#resourceVersion,
          (event) => {
            if (event.type === 'ERROR') {
              const code = (event.object as { code?: number }).code;
              if (code === 410) gone = true;
              else throw new KubeError('watch', `watch: ${(event.object as { message?: string }).message ?? 'error event'}`, code);
              return;
            }
            this.#apply(event.type, event.object as T);
          },
          signal,
          () => this.#answered(),
        );
        failures = 0;
        if (gone) {
          needList = true;
          fromCache = false;
          this.#options.onChange?.({ kind: 'relist', reason: `resourceVersion ${this.#resourceVersion} is too old (410 Gone)` });
        }
      } catch (error) {
        if (signal.aborted) break;
        if (error instanceof KubeError && error.statusCode === 410) {
          needList = true;
          fromCache = false;
          this.#options.onChange?.({ kind: 'relist', reason: '410 Gone' });
          continue;
        }
        const random = this.#options.random ?? Math.random;
        let wait = backoffMs(failures, { baseMs: this.#options.baseBackoffMs ?? 500, maxMs: this.#options.maxBackoffMs ?? 10_000, random });
        if (error instanceof KubeError && error.retryAfterMs !== undefined) wait = Math.max(wait, retryAfterWaitMs(error.retryAfterMs, random));
        failures += 1;
        if (this.#health.ok) this.#health = { ok: false, since: this.#now(), error };
        else this.#health.error = error;
        this.#options.onChange?.({ kind: 'error', message: (error as Error).message, retryInMs: wait, error });
        await sleep(wait, signal).catch(() => {});
      }
    }
  }

  /** A list or watch was answered: the server is reachable (again). */
  #answered(): void {
    if (this.#health.ok) return;
    this.#health = { ok: true, since: this.#now() };
    this.#options.onChange?.({ kind: 'open' });
  }

  #apply(type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK', object: T): void {
    this.#answered();
    const rv = rvOf(object);
    if (rv) this.#resourceVersion = rv;
    if (type === 'BOOKMARK') {
      this.#options.onChange?.({ kind: 'bookmark', resourceVersion: this.#resourceVersion });
      return;
    }
    const key = keyOf(object);
    if (type === 'DELETED') this.#objects.delete(key);
    else this.#objects.set(key, object);
    this.#options.onChange?.({ kind: type === 'ADDED' ? 'added' : type === 'MODIFIED' ? 'modified' : 'deleted', object, resourceVersion: this.#resourceVersion });
  }
}

function keyOf(o: Versioned): string {
  return o.metadata?.uid ?? o.metadata?.name ?? '';
}

/** This node's pods (fieldSelector spec.nodeName). */
export class NodePodSource extends ListWatchSource<V1Pod> {
  constructor(kube: Pick<KubeClient, 'listNodePodsVersioned' | 'watchNodePods'>, options: PodSourceOptions = {}) {
    super(
      {
        list: async (signal, resourceVersion) => {
          const list = await kube.listNodePodsVersioned(signal, { resourceVersion });
          return { items: list.pods, resourceVersion: list.resourceVersion };
        },
        watch: (resourceVersion, onEvent, signal, onOpen) => kube.watchNodePods(resourceVersion, onEvent, signal, { onOpen }),
      },
      options,
    );
  }

  pods(): V1Pod[] {
    return this.objects();
  }
}

/** This node's Node (fieldSelector metadata.name): `node()` is undefined while the Node does not exist. */
export class NodeObjectSource extends ListWatchSource<V1Node> {
  constructor(kube: Pick<KubeClient, 'listNodeVersioned' | 'watchNode'>, options: SourceOptions<V1Node> = {}) {
    super(
      {
        list: async (signal, resourceVersion) => {
          const list = await kube.listNodeVersioned(signal, { resourceVersion });
          return { items: list.nodes, resourceVersion: list.resourceVersion };
        },
        watch: (resourceVersion, onEvent, signal, onOpen) => kube.watchNode(resourceVersion, onEvent, signal, { onOpen }),
      },
      options,
    );
  }

  node(): V1Node | undefined {
    return this.objects()[0];
  }
}
