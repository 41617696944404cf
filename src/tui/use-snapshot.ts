/**
 * Reads the watch feed's current snapshot and re-renders when it changes. The feed hands out the
 * same immutable object until something changes, which is what useSyncExternalStore requires.
 */
import { useCallback, useSyncExternalStore } from 'react';
import type { WatchSnapshot } from '../services/watch/watch-feed.js';

/** The read-only side of the feed the screen needs. */
export interface SnapshotSource {
  snapshot(): WatchSnapshot;
  subscribe(listener: () => void): () => void;
}

export function useSnapshot(source: SnapshotSource): WatchSnapshot {
  // Stable callbacks: a new subscribe function would make React unsubscribe and subscribe on every render.
  const subscribe = useCallback((onChange: () => void) => source.subscribe(onChange), [source]);
  const read = useCallback(() => source.snapshot(), [source]);
  return useSyncExternalStore(subscribe, read);
}
