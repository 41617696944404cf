/**
 * Reading the engine's view of a pod: its spec, its running pod, its names and state, as the
 * session's parts need them. Pure functions of engine types; no state, no I/O.
 */
import { workerStateOf, type PodStatus, type PodSyncStatusView, type RunningPod, type V1Pod } from '../engine/types.js';
import type { PodInfo } from '../domain/session-api.js';
import type { RuntimePodRecord } from './runtime.js';

export function splitFullname(fullname: string): { name: string; namespace: string } {
  const at = fullname.lastIndexOf('_');
  return at < 0 ? { name: fullname, namespace: '' } : { name: fullname.slice(0, at), namespace: fullname.slice(at + 1) };
}

export function specOf(view: PodSyncStatusView | undefined): V1Pod | undefined {
  return view?.pendingUpdate?.pod ?? view?.activeUpdate?.pod;
}

export function runningPodOf(view: PodSyncStatusView | undefined): RunningPod | undefined {
  return view?.pendingUpdate?.runningPod ?? view?.activeUpdate?.runningPod;
}

export function namesOf(view: PodSyncStatusView, runtime?: RuntimePodRecord): { namespace: string; name: string } {
  const pod = specOf(view);
  if (pod?.metadata?.name) return { name: pod.metadata.name, namespace: pod.metadata.namespace ?? 'default' };
  const running = runningPodOf(view);
  if (running) return { name: running.name, namespace: running.namespace };
  if (runtime) return { name: runtime.name, namespace: runtime.namespace };
  return splitFullname(view.fullname);
}

export function isRunningSomething(status: PodStatus): boolean {
  return status.containerStatuses.some((c) => c.state === 'running') || status.sandboxStatuses.some((s) => s.state === 'ready');
}

export function stateOfView(view: PodSyncStatusView): PodInfo['state'] {
  return view.finished ? 'finished' : workerStateOf(view);
}

export function isDone(state: PodInfo['state']): boolean {
  return state === 'terminated' || state === 'finished';
}
