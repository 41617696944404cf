/**
 * Orphans beside a running kubelet. A runtime pod that no desired list names may be one the kubelet
 * started a moment ago, or one it is about to clean up itself; terminating it sooner races the
 * kubelet. So while a kubelet runs (or its state is unknown) a candidate orphan is terminated only
 * after a fresh GET of it from the API server (never a watch cache) answers that it is gone (404,
 * or another UID under its name), and only once it has stayed gone longer than the kubelet's own
 * cleanup takes: twice its housekeeping interval plus the pod's grace period. Until then it is kept
 * and reported as `orphan, waiting for the kubelet (N s)`. Without an API server nothing can confirm
 * it: kept, unless --force.
 *
 * Invariants: the first time a pod was seen gone is remembered in `<state-dir>/orphans-seen.json`
 * (written atomically), so separate invocations (and the agent's steps) count from the same moment;
 * an entry is dropped once the pod is no candidate any more. Static pods are never candidates.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from '../../lib/fs-async.js';
import path from 'node:path';
import { DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS, podOwnGracePeriod } from '../../engine/grace.js';
import type { V1Pod } from '../../engine/types.js';
import type { KubeletState } from '../../kube/kubelet.js';
import type { ApiNode } from './api-node.js';
import type { PodInfo } from '../../domain/session-api.js';
import { boundSignal } from '../../lib/abortable.js';

/** The kubelet's housekeeping period. */
const KUBELET_HOUSEKEEPING_MS = 2_000;
/** How long a fresh GET may take before the candidate is kept for this run. */
const ORPHAN_GET_BOUND_MS = 5_000;
const FILE = 'orphans-seen.json';

export interface WaitingOrphan {
  uid: string;
  namespace: string;
  name: string;
  /** "orphan, waiting for the kubelet (4 s)", or why it is kept. */
  reason: string;
  /** Seconds left before podctl may terminate it (null: it cannot be confirmed gone). */
  waitSeconds: number | null;
}

export interface OrphanDecision {
  /** Candidates kept this time (they are added to the desired set). */
  kept: WaitingOrphan[];
  /** Candidates confirmed: gone from the API for long enough. */
  released: string[];
}

function orphanWaitMs(pod: PodInfo): number {
  const grace = pod.pod ? podOwnGracePeriod(pod.pod) : (pod.gracePeriod ?? DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS);
  return 2 * KUBELET_HOUSEKEEPING_MS + grace * 1000;
}

async function readSeen(stateDir: string): Promise<Record<string, number>> {
  try {
    const parsed = JSON.parse(await readFile(path.join(stateDir, FILE), 'utf8')) as unknown;
    if (parsed && typeof parsed === 'object') {
      return Object.fromEntries(Object.entries(parsed as Record<string, unknown>).filter((e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1])));
    }
  } catch {
    // missing or damaged: every candidate counts from now (the conservative side)
  }
  return {};
}

async function writeSeen(stateDir: string, seen: Record<string, number>): Promise<void> {
  const file = path.join(stateDir, FILE);
  const tmp = `${file}.${randomBytes(8).toString('hex')}.tmp`;
  await writeFile(tmp, JSON.stringify(seen), { mode: 0o600, flag: 'wx' });
  await rename(tmp, file);
}

/**
 * Decides, for the candidate orphans, which may be terminated now. `candidates` are runtime pods (or
 * workers still in sync) that the desired list does not name.
 */
export async function decideOrphans(options: {
  candidates: PodInfo[];
  kubelet: KubeletState;
  api: ApiNode | undefined;
  stateDir: string;
  force: boolean;
  /** Remember first-seen times (false in a dry run: nothing is written). */
  persist?: boolean;
  now?: () => number;
  signal?: AbortSignal;
}): Promise<OrphanDecision> {
  const now = options.now ?? Date.now;
  if (options.kubelet === 'down' || options.force || options.candidates.length === 0) {
    return { kept: [], released: options.candidates.map((p) => p.uid) };
  }
  const previous = await readSeen(options.stateDir);
  const seen: Record<string, number> = {};
  const kept: WaitingOrphan[] = [];
  const released: string[] = [];
  for (const pod of options.candidates) {
    const name = { uid: pod.uid, namespace: pod.namespace, name: pod.name };
    if (!options.api) {
      kept.push({ ...name, reason: 'orphan, waiting for the kubelet (no API server to confirm it is gone; --force to terminate it anyway)', waitSeconds: null });
      continue;
    }
    let current: V1Pod | undefined;
    try {
      current = await options.api.kube.getPod(pod.namespace, pod.name, boundSignal(ORPHAN_GET_BOUND_MS, options.signal));
    } catch (error) {
      kept.push({ ...name, reason: `orphan, waiting for the kubelet (the API server did not answer: ${(error as Error).message})`, waitSeconds: null });
      continue;
    }
    if (current !== undefined && current.metadata?.uid === pod.uid) {
      kept.push({ ...name, reason: 'desired by the kubelet: the API server still has it', waitSeconds: null });
      continue;
    }
    const since = previous[pod.uid] ?? now();
    seen[pod.uid] = since;
    const left = since + orphanWaitMs(pod) - now();
    if (left > 0) kept.push({ ...name, reason: `orphan, waiting for the kubelet (${Math.ceil(left / 1000)} s)`, waitSeconds: Math.ceil(left / 1000) });
    else released.push(pod.uid);
  }
  if (options.persist !== false) await writeSeen(options.stateDir, seen).catch(() => undefined);
  return { kept, released };
}
