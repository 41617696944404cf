/**
 * The kubelet's container stop ordering within one pod: with a pod spec that has restartable init
 * containers (sidecars, initContainers[].restartPolicy: Always), a sidecar is stopped only after
 * every running main container and every running sidecar after it in spec order has exited.
 *
 * Invariants:
 * - Main containers wait for nothing; a pod with no running sidecar has no ordering at all (every
 *   container stops in parallel).
 * - A wait for a turn is bounded by the caller's `ms` (the grace that remains): a container that
 *   fails to stop never signals its exit, so those waiting on it wait until that bound, as in the
 *   kubelet.
 * - A wait leaves no timer and no listener behind; an aborted one rejects with the signal's reason.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { sleep } from '../../lib/abortable.js';

/** The names of a pod's restartable init containers (initContainers[].restartPolicy: Always), in spec order. */
export function sidecarNames(pod: V1Pod): string[] {
  return (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always').map((c) => c.name);
}

/**
 * Which containers of a pod must exit before which: the kubelet's termination ordering. A sidecar
 * waits for every running main container and every running sidecar after it in spec order; main
 * containers wait for nothing. A container that fails to stop never signals its exit, so those
 * waiting on it wait until their bound (the grace that remains), as in the kubelet.
 */
export interface TerminationOrdering {
  /** Resolves when the container may be stopped or `ms` passed; true when it waited on anything. */
  waitForTurn(name: string, ms: number, signal: AbortSignal): Promise<boolean>;
  containerTerminated(name: string): void;
}

/** The ordering for a pod with a spec, or undefined when it has no running sidecar (all parallel). */
export function terminationOrdering(pod: V1Pod, runningNames: readonly string[]): TerminationOrdering | undefined {
  const sidecars = sidecarNames(pod);
  const running = new Set(runningNames);
  if (!sidecars.some((n) => running.has(n))) return undefined;
  const exited = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  for (const name of running) {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    exited.set(name, { promise, resolve });
  }
  const sidecarSet = new Set(sidecars);
  const prerequisites = new Map<string, string[]>();
  const mains = [...running].filter((n) => !sidecarSet.has(n));
  sidecars.forEach((name, i) => {
    if (!running.has(name)) return;
    prerequisites.set(name, [...mains, ...sidecars.slice(i + 1).filter((n) => running.has(n))]);
  });
  return {
    async waitForTurn(name, ms, signal) {
      const before = prerequisites.get(name) ?? [];
      if (before.length === 0) return false;
      const ac = new AbortController();
      const onAbort = (): void => ac.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        await Promise.race([Promise.all(before.map((n) => exited.get(n)?.promise ?? Promise.resolve())), sleep(ms, ac.signal)]);
      } finally {
        signal.removeEventListener('abort', onAbort);
        ac.abort();
      }
      signal.throwIfAborted();
      return true;
    },
    containerTerminated(name) {
      exited.get(name)?.resolve();
    },
  };
}
