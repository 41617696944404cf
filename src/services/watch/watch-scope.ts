/**
 * Which pods a `watch` follows (`-n`, `-l`, `-A`), as a view over the feed: the screen and the JSON
 * stream see only those pods, their transitions and the events about them (events about no pod in
 * particular — session warnings, the runtime's answering — are always shown).
 *
 * Invariants: the scoped snapshot is the same object until the feed's snapshot changes (the screen
 * subscribes to it as to the feed); with no namespace and no selector the feed itself is the view.
 */
import type { PodInfo } from '../../domain/session-api.js';
import type { FeedChange, WatchFeed, WatchSnapshot } from './watch-feed.js';
import type { FeedEntry } from './watch-entries.js';
import { formatSelector, matchesSelector, type LabelRequirement } from '../../lib/selector.js';

export interface WatchScope {
  /** Only this namespace (undefined: every namespace). */
  namespace?: string;
  /** Only pods whose labels match. */
  selector?: LabelRequirement[];
}

export function isWholeNode(scope: WatchScope | undefined): boolean {
  return scope === undefined || (scope.namespace === undefined && (scope.selector === undefined || scope.selector.length === 0));
}

/** The scope in words, for the header: `namespace kube-system · -l tier=control-plane`. */
export function describeScope(scope: WatchScope | undefined): string | undefined {
  if (isWholeNode(scope)) return undefined;
  const parts: string[] = [];
  if (scope!.namespace !== undefined) parts.push(`namespace ${scope!.namespace}`);
  if (scope!.selector !== undefined && scope!.selector.length > 0) parts.push(`-l ${formatSelector(scope!.selector)}`);
  return parts.join(' · ');
}

export function inScope(pod: Pick<PodInfo, 'namespace' | 'pod'>, scope: WatchScope | undefined): boolean {
  if (scope === undefined) return true;
  if (scope.namespace !== undefined && pod.namespace !== scope.namespace) return false;
  if (scope.selector !== undefined && scope.selector.length > 0 && !matchesSelector(pod.pod?.metadata?.labels, scope.selector)) return false;
  return true;
}

/** The feed as seen through a scope: pods, transitions and pod events of the pods in it. */
export class ScopedFeed {
  readonly #feed: WatchFeed;
  readonly #scope: WatchScope;
  #from: WatchSnapshot | undefined;
  #view: WatchSnapshot | undefined;
  /** UIDs in scope as of the last snapshot read (transitions of a pod that just left name it). */
  #uids = new Set<string>();

  constructor(feed: WatchFeed, scope: WatchScope) {
    this.#feed = feed;
    this.#scope = scope;
  }

  snapshot(): WatchSnapshot {
    const snap = this.#feed.snapshot();
    if (snap === this.#from && this.#view !== undefined) return this.#view;
    const pods = snap.pods.filter((p) => inScope(p, this.#scope));
    for (const p of pods) this.#uids.add(p.uid);
    this.#from = snap;
    this.#view = { ...snap, pods, entries: snap.entries.filter((e) => this.#entryInScope(e)) };
    return this.#view;
  }

  subscribe(listener: () => void): () => void {
    return this.#feed.subscribe(listener);
  }

  note(entry: Omit<FeedEntry, 'at'> & { at?: number }): void {
    this.#feed.note(entry);
  }

  /** The feed's changes, restricted to the scope. */
  onChange(listener: (change: FeedChange) => void): () => void {
    return this.#feed.onChange((change) => {
      this.snapshot();
      listener({
        ...change,
        transitions: change.transitions.filter((t) => this.#uids.has(t.uid)),
        remoteErrors: change.remoteErrors.filter((p) => inScope(p, this.#scope)),
        entries: change.entries.filter((e) => this.#entryInScope(e)),
      });
    });
  }

  #selectorless(): boolean {
    return this.#scope.selector === undefined || this.#scope.selector.length === 0;
  }

  #entryInScope(entry: FeedEntry): boolean {
    if (entry.uid === undefined) return true;
    if (this.#uids.has(entry.uid)) return true;
    // a pod not listed (yet): judged by its namespace when only a namespace is asked for
    if (entry.pod !== undefined && this.#selectorless() && this.#scope.namespace !== undefined) return entry.pod.startsWith(`${this.#scope.namespace}/`);
    return false;
  }
}
