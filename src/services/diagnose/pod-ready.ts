/**
 * A pod's readiness and age as the runtime shows them: kubectl's READY (containers ready / total)
 * with the sandbox's own readiness beside it, and the pod's creation time (kubectl's AGE).
 *
 * Owns: how READY and the creation time are read from a PodInfo. Pure.
 *
 * Invariants:
 * - READY counts the newest attempt of each container name (the runtime lists old attempts too,
 *   newest first): `containers` of them running, of `total`. A container counts as ready while it
 *   runs (podctl sees no readiness probes).
 * - `sandbox` is the newest sandbox's readiness; null when the runtime lists none for the pod.
 * - A pod the runtime does not know (no runtime status) has no READY: null, shown as `-`.
 * - The creation time is the pod's `metadata.creationTimestamp` (the API's, or the checkpoint's, or
 *   the oldest sandbox's when the spec was rebuilt from the runtime); null when none is known.
 */
import type { PodInfo } from '../../domain/session-api.js';

export interface PodReady {
  /** Whether the pod's newest sandbox is ready (null: the runtime lists no sandbox). */
  sandbox: boolean | null;
  /** Containers running (newest attempt of each). */
  containers: number;
  /** Containers of the pod (one per name). */
  total: number;
}

/** READY of a pod, or null when the runtime does not report the pod. */
export function readyOf(pod: Pick<PodInfo, 'runtime'>): PodReady | null {
  const status = pod.runtime;
  if (status === undefined) return null;
  const newest = new Map<string, (typeof status.containerStatuses)[number]>();
  for (const c of status.containerStatuses) if (!newest.has(c.name)) newest.set(c.name, c);
  const sandbox = status.sandboxStatuses[0];
  return {
    sandbox: sandbox === undefined ? null : sandbox.state === 'ready',
    containers: [...newest.values()].filter((c) => c.state === 'running').length,
    total: newest.size,
  };
}

/** The READY cell: `1/2` (kubectl's form), `-` when unknown. */
export function readyCell(ready: PodReady | null): string {
  return ready === null ? '-' : `${ready.containers}/${ready.total}`;
}

/** The SANDBOX cell (-o wide): `ready`, `notready`, or `-`. */
export function sandboxCell(ready: PodReady | null): string {
  return ready === null || ready.sandbox === null ? '-' : ready.sandbox ? 'ready' : 'notready';
}

/** When the pod was created (epoch ms), or undefined when nothing says. */
export function createdAtOf(pod: Pick<PodInfo, 'pod'>): number | undefined {
  const raw: unknown = pod.pod?.metadata?.creationTimestamp;
  if (raw === undefined || raw === null) return undefined;
  const ms = raw instanceof Date ? raw.getTime() : typeof raw === 'string' || typeof raw === 'number' ? new Date(raw).getTime() : Number.NaN;
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

/** A pod's age as kubectl prints it (Kubernetes' HumanDuration): `45s`, `3m12s`, `2h5m`, `3d4h`, `400d`. */
export function formatAge(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const m = Math.floor(s / 60);
  const h = Math.floor(s / 3600);
  const d = Math.floor(h / 24);
  const y = Math.floor(d / 365);
  const two = (a: number, unitA: string, b: number, unitB: string): string => (b === 0 ? `${a}${unitA}` : `${a}${unitA}${b}${unitB}`);
  if (s < 120) return `${s}s`;
  if (m < 10) return two(m, 'm', s % 60, 's');
  if (m < 180) return `${m}m`;
  if (h < 8) return two(h, 'h', m % 60, 'm');
  if (h < 48) return `${h}h`;
  if (h < 24 * 8) return two(d, 'd', h % 24, 'h');
  if (h < 24 * 365 * 2) return `${d}d`;
  if (y < 8) return two(y, 'y', d % 365, 'd');
  return `${y}y`;
}
