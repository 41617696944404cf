/**
 * The pod-worker engine's public surface: a TypeScript port of the kubelet's pod workers.
 * No I/O; nothing here imports from the rest of podctl.
 */
import { PodWorkerEngine } from './workers.js';
import type { PodWorkers, PodWorkersOptions } from './types.js';

export * from './types.js';
export {
  calculateEffectiveGracePeriod,
  killGracePeriod,
  podOwnGracePeriod,
  operatorGraceOverride,
  isGraceInRange,
  remainingGraceSeconds,
  DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
  MAX_GRACE_SECONDS,
  MIN_GRACE_SECONDS,
  RUNTIME_POD_GRACE_SECONDS,
  type EffectiveGracePeriod,
} from './grace.js';
export { MAX_TIMER_MS, clampTimerMs, setLongTimeout, type LongTimeout } from './timers.js';
export { killPodNow, killTimeoutMs, KillPodTimeoutError, EXCEEDED_GRACE_PERIOD_REASON, type KillPodFunc } from './kill-now.js';
export { viewOfRecord as toPodSyncStatusView } from './status.js';
export {
  API_SOURCE,
  CONFIG_MIRROR_ANNOTATION,
  CONFIG_SOURCE_ANNOTATION,
  DEFAULT_POD_PRIORITY,
  SYSTEM_CRITICAL_PRIORITY,
  criticalReasonOf,
  fullNameOfPod,
  isApiSourcedPod,
  isCriticalPod,
  isCriticalPriority,
  isDaemonSetPod,
  isMirrorPod,
  isStaticPod,
  isStaticSource,
  isTerminalPhase,
  podFullName,
  podPriority,
  type CriticalReason,
} from './pod-kinds.js';
export { NETWORK_NOT_READY_MESSAGE } from './requeue.js';
export { DEFAULT_RESYNC_INTERVAL_MS, DEFAULT_BACKOFF_PERIOD_MS } from './workers.js';

export function createPodWorkers(options: PodWorkersOptions): PodWorkers {
  return new PodWorkerEngine(options);
}
