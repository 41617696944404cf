/**
 * The checkpoint store's front door: opens (creating and checking) a state dir and hands out its
 * three parts — checkpoints, leases and the request inbox — sharing one layout, one reporter and
 * one set of file operations. See each module for its invariants.
 */
import { CheckpointStore, type StoreReporter } from './checkpoints.js';
import { Inbox } from './inbox.js';
import { LeaseManager, type LeaseManagerOptions } from './lease.js';
import { nodeFileOps, sweepTemporaries, type FileOps } from './files.js';
import { openStateDir, type StateLayout } from './state-dir.js';

export interface OpenStoreOptions {
  stateDir: string;
  /** One-line reports (quarantined files, unreadable leases). */
  report?: StoreReporter;
  /** Test seam: the file operations used for writes. */
  ops?: FileOps;
  clock?: () => number;
  /** Test seams for leases. */
  leases?: Pick<LeaseManagerOptions, 'isAlive' | 'identity'>;
  /** A reader's store (status, watch, --dry-run): bad files are reported, not moved; nothing is swept. */
  readOnly?: boolean;
}

export interface Store {
  layout: StateLayout;
  checkpoints: CheckpointStore;
  /**
   * The last checkpoints of pods whose workers were forgotten (`ended/`): how each pod ended, for
   * `status` while the runtime still lists it; never restored into a worker.
   */
  ended: CheckpointStore;
  leases: LeaseManager;
  inbox: Inbox;
}

/** Opens the state dir; throws a one-line StoreError when it is unsafe or cannot be created. */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  const layout = await openStateDir(options.stateDir);
  const shared = { layout, report: options.report, ops: options.ops ?? nodeFileOps, clock: options.clock, ...(options.readOnly ? { readOnly: true } : {}) };
  const checkpoints = new CheckpointStore(shared);
  const ended = new CheckpointStore({ ...shared, layout: { ...layout, pods: layout.ended }, salvage: false });
  if (!options.readOnly) await Promise.all([layout.pods, layout.leases, layout.inbox, layout.ended].map((folder) => sweepTemporaries(folder)));
  return {
    layout,
    checkpoints,
    ended,
    leases: new LeaseManager({ ...shared, ...options.leases }),
    inbox: new Inbox(shared),
  };
}

export { CheckpointStore, checkpointFile } from './checkpoints.js';
export { layoutOf } from './state-dir.js';
export { type InboxRequest } from './inbox.js';
export { LeaseManager, leaseInfoOf, type LeaseView } from './lease.js';
export { StoreError } from './errors.js';
export { type PodCheckpoint } from './format.js';
export { nodeFileOps, type FileOps } from './files.js';
export { watchFolder, type FolderWatch } from './watch.js';
