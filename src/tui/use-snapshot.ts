/**
 * Reads the watch feed's current snapshot and re-renders when it changes. The feed hands out the
 * same immutable object until something changes, which is what useSyncExternalStore requires.
 */
import { useSyncExternalStore } from 'react';
import type { WatchSnapshot } from '../services/watch-feed.js';

/** The read-only side of the feed the screen needs. */
export interface SnapshotSource {
  snapshot(): WatchSnapshot;
  subscribe(listener: () => void): () => void;
}

export function useSnapshot(source: SnapshotSource): WatchSnapshot {
  return useSyncExternalStore(
    (onChange) => source.subscribe(onChange),
    () => source.snapshot(),
  );
}
