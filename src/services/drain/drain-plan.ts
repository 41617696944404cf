/**
 * Planning a node drain the way the kubelet's graceful node shutdown orders it (pure functions).
 *
 * - Pods are put into priority groups: each group has a minimum pod priority and a time budget. A pod
 *   goes to the group with the highest minimum ≤ its priority; pods below every minimum go to the
 *   first group, pods above every minimum to the last (the kubelet's groupByPriority).
 * - Critical pods — static, mirror, or priority ≥ 2 000 000 000 (system-cluster-critical) — are
 *   grouped as if their priority were at least that, so they always go last.
 * - Without explicit groups the kubelet's two-group layout applies: priority 0 gets
 *   (grace-period − critical-grace-period), critical priority gets critical-grace-period.
 * - A pod is killed with grace = min(group budget, its own grace), never below 1 s.
 * - Groups run in ascending priority; empty groups are dropped.
 *
 * Invariants: the plan is deterministic (same pods and options → same plan); every input pod appears
 * exactly once, either in a group or in `skipped`.
 */
import type { PodInfo } from '../../domain/session-api.js';
import { MAX_GRACE_SECONDS } from '../../engine/grace.js';
import { parseSeconds } from '../../lib/duration.js';
import { UsageError } from '../../lib/errors.js';
import { comparePods } from '../../lib/refs.js';
import { killTimeoutMs } from '../../engine/kill-now.js';
import { criticalReasonOf, DEFAULT_POD_PRIORITY, podPriority, SYSTEM_CRITICAL_PRIORITY, type CriticalReason } from '../../engine/pod-kinds.js';
import { plannedGraceSeconds } from '../terminate/grace-plan.js';

export { SYSTEM_CRITICAL_PRIORITY };
export const DEFAULT_DRAIN_GRACE_SECONDS = 30;
export const DEFAULT_CRITICAL_GRACE_SECONDS = 10;

export interface PriorityGroup {
  /** Minimum pod priority of the group. */
  priority: number;
  /** How long the drain gives the group before moving on (seconds). */
  budgetSeconds: number;
}

export interface PlannedPod {
  uid: string;
  namespace: string;
  name: string;
  priority: number;
  critical: boolean;
  criticalReason?: CriticalReason;
  /** The pod's own grace period (seconds). */
  podGraceSeconds: number;
  /** The grace the drain kills it with: the group budget as an override (it only shortens), at least 1. */
  gracePeriodSeconds: number;
}

interface PlannedGroup {
  priority: number;
  budgetSeconds: number;
  /** The group holds critical priorities (≥ 2e9). */
  critical: boolean;
  pods: PlannedPod[];
}

type SkipReason = 'already-terminated' | 'excluded' | 'self';

export interface SkippedPod {
  uid: string;
  namespace: string;
  name: string;
  reason: SkipReason;
}

export interface DrainPlan {
  groups: PlannedGroup[];
  skipped: SkippedPod[];
  /** The default bound of the whole drain: every group's budget plus the longest killPodNow bound. */
  defaultTimeoutSeconds: number;
}

/** The kubelet's layout when no per-priority groups are configured. */
export function defaultGroups(gracePeriodSeconds: number, criticalGracePeriodSeconds: number): PriorityGroup[] {
  if (!Number.isInteger(gracePeriodSeconds) || gracePeriodSeconds < 0) {
    throw new UsageError(`--grace-period ${gracePeriodSeconds} is not a number of seconds`, 'use an integer ≥ 0');
  }
  if (!Number.isInteger(criticalGracePeriodSeconds) || criticalGracePeriodSeconds < 0) {
    throw new UsageError(`--critical-grace-period ${criticalGracePeriodSeconds} is not a number of seconds`, 'use an integer ≥ 0');
  }
  if (criticalGracePeriodSeconds > gracePeriodSeconds) {
    throw new UsageError(
      `--critical-grace-period (${criticalGracePeriodSeconds}s) exceeds --grace-period (${gracePeriodSeconds}s)`,
      "--grace-period is the whole drain's budget and includes the critical pods' share",
    );
  }
  return [
    { priority: DEFAULT_POD_PRIORITY, budgetSeconds: gracePeriodSeconds - criticalGracePeriodSeconds },
    { priority: SYSTEM_CRITICAL_PRIORITY, budgetSeconds: criticalGracePeriodSeconds },
  ];
}

/** Parses repeated `--group PRIORITY:SECONDS` values into groups sorted by priority. */
export function parseGroups(values: string[]): PriorityGroup[] {
  const groups: PriorityGroup[] = [];
  for (const value of values) {
    const match = /^\s*(-?\d+)\s*:\s*(\S+)\s*$/.exec(value);
    if (!match) throw new UsageError(`--group "${value}" is not PRIORITY:SECONDS`, 'e.g. --group 0:20 --group 100000:10s --group 2000000000:10');
    const priority = Number(match[1]);
    // seconds or a duration, as every grace flag (lib/duration.ts parseSeconds)
    const budgetSeconds = parseSeconds(match[2]!, 'group');
    if (!Number.isSafeInteger(priority) || Math.abs(priority) > 2 ** 31 - 1) {
      throw new UsageError(`--group "${value}": priority out of range`, 'pod priorities are 32-bit integers');
    }
    if (!(budgetSeconds <= MAX_GRACE_SECONDS)) {
      throw new UsageError(`--group "${value}": budget past the maximum of ${MAX_GRACE_SECONDS} seconds (a year)`, 'give a shorter budget');
    }
    if (groups.some((g) => g.priority === priority)) throw new UsageError(`--group: priority ${priority} given twice`, 'give each priority once');
    groups.push({ priority, budgetSeconds });
  }
  return groups.sort((a, b) => a.priority - b.priority);
}

/** Why a pod is critical to the node (engine/pod-kinds.ts), or undefined; the runtime's static flag counts. */
export function criticalReason(pod: PodInfo): CriticalReason | undefined {
  return criticalReasonOf(pod.pod, pod.static);
}

/** Index of the group a priority belongs to (the kubelet's groupByPriority search); groups sorted. */
export function groupIndexFor(groups: readonly PriorityGroup[], priority: number): number {
  let index = groups.findIndex((g) => g.priority >= priority);
  if (index === -1) index = groups.length - 1;
  else if (index > 0 && (groups[index]?.priority ?? 0) > priority) index -= 1;
  return Math.max(0, index);
}

export interface PlanInput {
  pods: PodInfo[];
  groups: PriorityGroup[];
  /** Pods left out by --exclude. */
  isExcluded?: (pod: PodInfo) => boolean;
  /** The drainer's own pod (the agent's): never a target. */
  isSelf?: (pod: PodInfo) => boolean;
  /** Pods already terminated are skipped. */
  isTerminated?: (pod: PodInfo) => boolean;
}

export function planDrain(input: PlanInput): DrainPlan {
  if (input.groups.length === 0) throw new UsageError('no drain groups', 'give --grace-period or at least one --group');
  const sortedGroups = [...input.groups].sort((a, b) => a.priority - b.priority);
  const planned: PlannedGroup[] = sortedGroups.map((g) => ({ ...g, critical: g.priority >= SYSTEM_CRITICAL_PRIORITY, pods: [] }));
  const skipped: SkippedPod[] = [];
  for (const pod of [...input.pods].sort(comparePods)) {
    const identity = { uid: pod.uid, namespace: pod.namespace, name: pod.name };
    if (input.isSelf?.(pod)) {
      skipped.push({ ...identity, reason: 'self' });
      continue;
    }
    if (input.isExcluded?.(pod)) {
      skipped.push({ ...identity, reason: 'excluded' });
      continue;
    }
    if (input.isTerminated?.(pod)) {
      skipped.push({ ...identity, reason: 'already-terminated' });
      continue;
    }
    const priority = podPriority(pod.pod);
    const reason = criticalReason(pod);
    const groupingPriority = reason ? Math.max(priority, SYSTEM_CRITICAL_PRIORITY) : priority;
    const group = planned[groupIndexFor(sortedGroups, groupingPriority)];
    if (!group) continue;
    const own = plannedGraceSeconds(pod);
    group.pods.push({
      ...identity,
      priority,
      critical: reason !== undefined,
      ...(reason ? { criticalReason: reason } : {}),
      podGraceSeconds: own,
      gracePeriodSeconds: plannedGraceSeconds(pod, group.budgetSeconds),
    });
  }
  const groups = planned.filter((g) => g.pods.length > 0);
  const budgets = groups.reduce((sum, g) => sum + g.budgetSeconds, 0);
  const longest = Math.max(0, ...groups.flatMap((g) => g.pods.map((p) => killTimeoutMs(p.gracePeriodSeconds) / 1000)));
  return { groups, skipped, defaultTimeoutSeconds: budgets + longest };
}

/** A `--exclude` matcher that remembers which values matched a pod (to warn of those that never did). */
export type ExcludeMatcher = ((pod: PodInfo) => boolean) & { unmatched(): string[] };

/** A shell-style glob (`*`, `?`) as an anchored regular expression. */
function globOf(text: string): RegExp {
  const escaped = text
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${escaped}$`);
}

/**
 * `--exclude` values: `ns/name`, where either side may be a glob (`ns/*` a whole namespace,
 * `web/api-*` a family of pods), or a pod UID.
 */
export function parseExcludes(values: string[]): ExcludeMatcher {
  const hits = new Set<string>();
  const rules = values.map((value) => {
    const v = value.trim();
    if (v === '') throw new UsageError('--exclude: empty value', 'use ns/name, ns/* (globs allowed) or a pod UID');
    const slash = v.split('/');
    if (slash.length === 2 && slash[0] && slash[1]) {
      const ns = globOf(slash[0]);
      const name = globOf(slash[1]);
      return { value, match: (p: PodInfo) => ns.test(p.namespace) && name.test(p.name) };
    }
    if (slash.length === 1 && !/[*?]/.test(v)) return { value, match: (p: PodInfo) => p.uid === v };
    throw new UsageError(`--exclude "${value}" is not ns/name, ns/* or a UID`, 'e.g. --exclude kube-system/* --exclude default/db-0 --exclude web/api-*');
  });
  const matcher = (pod: PodInfo): boolean => {
    let excluded = false;
    for (const rule of rules) {
      if (rule.match(pod)) {
        hits.add(rule.value);
        excluded = true;
      }
    }
    return excluded;
  };
  return Object.assign(matcher, { unmatched: () => values.filter((v) => !hits.has(v)) });
}
