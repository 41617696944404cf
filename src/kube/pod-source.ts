/**
 * This node's pods, followed as the kubelet's API config source follows them: one list, then a
 * watch from the list's resourceVersion with bookmarks; a watch that ends is resumed from the last
 * resourceVersion seen (bookmarks advance it); a 410 Gone (too old resourceVersion) relists.
 *
 * Invariants:
 * - `pods()` is the list plus every watch event applied in order; `resourceVersion` is the last
 *   one seen (list, event or bookmark), so a resumed watch misses nothing and replays nothing.
 * - Errors never end the source: transient ones back off (bounded, jittered) and resume; only the
 *   signal ends it. `onChange` hears every applied change.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from './client.js';
import { KubeError } from './errors.js';
import { backoffMs } from './retry.js';
import { sleep } from '../lib/abortable.js';

export type PodSourceEvent =
  | { kind: 'listed'; pods: V1Pod[]; resourceVersion: string }
  | { kind: 'added' | 'modified' | 'deleted'; pod: V1Pod; resourceVersion: string }
  | { kind: 'bookmark'; resourceVersion: string }
  | { kind: 'relist'; reason: string }
  | { kind: 'error'; message: string; retryInMs: number };

export interface PodSourceOptions {
  onChange?: (event: PodSourceEvent) => void;
  /** Backoff after a failed list/watch (default 500 ms, up to 10 s). */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  random?: () => number;
}

const rvOf = (o: { metadata?: { resourceVersion?: string } } | undefined): string | undefined => o?.metadata?.resourceVersion;

export class NodePodSource {
  readonly #kube: Pick<KubeClient, 'listNodePodsVersioned' | 'watchNodePods'>;
  readonly #options: PodSourceOptions;
  readonly #pods = new Map<string, V1Pod>();
  #resourceVersion = '';
  #lists = 0;
  #synced: Promise<void>;
  #resolveSynced!: () => void;

  constructor(kube: Pick<KubeClient, 'listNodePodsVersioned' | 'watchNodePods'>, options: PodSourceOptions = {}) {
    this.#kube = kube;
    this.#options = options;
    this.#synced = new Promise((resolve) => (this.#resolveSynced = resolve));
  }

  pods(): V1Pod[] {
    return [...this.#pods.values()];
  }

  get resourceVersion(): string {
    return this.#resourceVersion;
  }

  /** How many times the source listed (1 + relists after 410 Gone). */
  get lists(): number {
    return this.#lists;
  }

  /** Resolves after the first successful list. */
  synced(): Promise<void> {
    return this.#synced;
  }

  /** Lists and watches until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    let needList = true;
    while (!signal.aborted) {
      try {
        if (needList) {
          const list = await this.#kube.listNodePodsVersioned(signal);
          this.#pods.clear();
          for (const p of list.pods) this.#pods.set(p.metadata?.uid ?? '', p);
          this.#resourceVersion = list.resourceVersion;
          this.#lists += 1;
          needList = false;
          this.#options.onChange?.({ kind: 'listed', pods: list.pods, resourceVersion: list.resourceVersion });
          this.#resolveSynced();
        }
        let gone = false;
        await this.#kube.watchNodePods(
          this.#resourceVersion,
          (event) => {
            if (event.type === 'ERROR') {
              const code = (event.object as { code?: number }).code;
              if (code === 410) gone = true;
              else throw new KubeError('watch pods', `watch pods: ${(event.object as { message?: string }).message ?? 'error event'}`, code);
              return;
            }
            this.#apply(event.type, event.object);
          },
          signal,
        );
        failures = 0;
        if (gone) {
          needList = true;
          this.#options.onChange?.({ kind: 'relist', reason: `resourceVersion ${this.#resourceVersion} is too old (410 Gone)` });
        }
      } catch (error) {
        if (signal.aborted) break;
        if (error instanceof KubeError && error.statusCode === 410) {
          needList = true;
          this.#options.onChange?.({ kind: 'relist', reason: '410 Gone' });
          continue;
        }
        const wait = backoffMs(failures, { baseMs: this.#options.baseBackoffMs ?? 500, maxMs: this.#options.maxBackoffMs ?? 10_000, random: this.#options.random ?? Math.random });
        failures += 1;
        this.#options.onChange?.({ kind: 'error', message: (error as Error).message, retryInMs: wait });
        await sleep(wait, signal).catch(() => {});
      }
    }
  }

  #apply(type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK', object: V1Pod): void {
    const rv = rvOf(object);
    if (rv) this.#resourceVersion = rv;
    if (type === 'BOOKMARK') {
      this.#options.onChange?.({ kind: 'bookmark', resourceVersion: this.#resourceVersion });
      return;
    }
    const uid = object.metadata?.uid ?? '';
    if (type === 'DELETED') this.#pods.delete(uid);
    else this.#pods.set(uid, object);
    this.#options.onChange?.({ kind: type === 'ADDED' ? 'added' : type === 'MODIFIED' ? 'modified' : 'deleted', pod: object, resourceVersion: this.#resourceVersion });
  }
}
