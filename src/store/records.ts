/**
 * The store's record types: the shapes of what lives on disk (a pod's checkpoint, an inbox
 * request) and the reporter callback every store part takes.
 *
 * Owns: these types only; no code. Invariant: imports nothing from the rest of the store, so the
 * validators (shapes.ts), the codecs (format.ts) and the folders (checkpoints.ts, inbox.ts) all
 * depend on it and never on one another in a circle.
 */
import type { PodSyncStatusView, V1Pod } from '../engine/types.js';
import type { RuntimeErrorInfo, TransitionRecord } from '../domain/session-api.js';

/** One-line reports about files the store moved aside or could not use. */
export type StoreReporter = (message: string) => void;

/** Everything the store keeps about one pod. */
export interface PodCheckpoint {
  uid: string;
  namespace: string;
  name: string;
  /** The worker's full sync status (pending/active updates without callbacks). */
  status: PodSyncStatusView;
  /** When the current worker state (or finished) was entered, epoch ms. */
  since: number;
  /** Bounded timeline, oldest first. */
  history: TransitionRecord[];
  lastError?: RuntimeErrorInfo;
  /** While terminating: when the grace period in force runs out (epoch ms); only moves earlier. */
  graceDeadline?: number;
  /** When and by which process this checkpoint was written. */
  writtenAt: number;
  writerPid: number;
}

/** A request for a pod's owner. */
export interface InboxRequest {
  id: string;
  uid: string;
  /** When it was written (epoch ms). */
  at: number;
  fromPid: number;
  kind: 'kill';
  gracePeriodSeconds?: number;
  evict?: boolean;
  reason?: string;
  message?: string;
  /** The pod's spec, when the requester had a fresher one (e.g. from the API server). */
  pod?: V1Pod;
}
