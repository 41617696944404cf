/**
 * The session's port to a container runtime: what a node session needs from one (the engine's
 * syncer and status cache plus a pod listing), and the record of one runtime pod.
 *
 * Owns: these two interfaces only; no code. The CRI-backed implementation is
 * `session/cri-runtime.ts` (loaded lazily); tests pass an in-memory one.
 * Invariant: this file imports only engine types, so both the session and every runtime
 * implementation depend on it and never on each other.
 */
import type { PodStatus, PodStatusCache, PodSyncer, RunningPod, V1Pod } from '../engine/types.js';

/** One pod as the runtime lists it. */
export interface RuntimePodRecord {
  uid: string;
  namespace: string;
  name: string;
  runningPod: RunningPod;
  status: PodStatus;
  /** A spec rebuilt from the kubelet's labels/annotations, when the runtime has them. */
  pod?: V1Pod;
  static: boolean;
  /** When the pod's newest sandbox was created (epoch ms). */
  createdAt?: number;
}

/**
 * What the session needs from a container runtime: the engine's two ports plus a listing. The
 * default (`connectRuntime`) is CRI-backed; tests pass an in-memory one.
 */
export interface SessionRuntime {
  readonly endpoint: string;
  readonly simulated: boolean;
  readonly syncer: PodSyncer;
  readonly cache: PodStatusCache;
  /** Lists the runtime's pods from a relist no older than `maxAgeMs` (default 0: a fresh one). */
  listPods(signal?: AbortSignal, maxAgeMs?: number): Promise<RuntimePodRecord[]>;
  /**
   * Starts following the runtime's events, when the session opened it with the stream deferred
   * (`SessionOptions.runtimeEventsFromFirstWait`); once, later calls do nothing.
   */
  followEvents?(): void;
  /** Relist / container-event notifications, if the runtime produces them. */
  subscribe?(listener: (kind: 'relisted' | 'container-event', uids: string[]) => void): () => void;
  close(): Promise<void>;
}
