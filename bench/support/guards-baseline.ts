/**
 * Baseline for bench/store.bench.ts only: the hand-written guards that validated the store's
 * records before their valibot schemas (src/store/records.ts) became the one definition, as they
 * were (then src/store/shapes.ts, commit f97658c), so the benchmark can compare the import and
 * parse cost of both in one run. Nothing in src/ or test/ uses it.
 */
import type { PodCheckpoint } from '../../src/store/records.js';
import { isGraceInRange } from '../../src/engine/grace.js';

const HISTORY_LIMIT = 64;

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
const isString = (v: unknown): v is string => typeof v === 'string';
const isNonEmptyString = (v: unknown): boolean => typeof v === 'string' && v.length > 0;
const isBoolean = (v: unknown): v is boolean => typeof v === 'boolean';
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isInt = (v: unknown): boolean => Number.isSafeInteger(v);
const isEpoch = (v: unknown): boolean => isNumber(v) && v >= 0 && v <= MAX_EPOCH_MS;
/** A grace period podctl can act on (engine/grace.ts): a larger one on disk is damage. */
const isGrace = (v: unknown): boolean => isNumber(v) && isGraceInRange(v);
/** The latest instant a Date can hold (ms since the epoch). */
const MAX_EPOCH_MS = 8.64e15;
/** Absent, or present and valid (JSON never holds `undefined`, but objects built in memory may). */
const optional = (o: Obj, key: string, check: (v: unknown) => boolean): boolean => o[key] === undefined || check(o[key]);

const UPDATE_TYPES = new Set(['sync', 'update', 'create', 'kill']);
const CONTAINER_STATES = new Set(['created', 'running', 'exited', 'unknown']);
const SANDBOX_STATES = new Set(['ready', 'notready']);

function isRunningPod(v: unknown): boolean {
  if (!isObject(v) || !isString(v.id) || !isString(v.name) || !isString(v.namespace)) return false;
  if (!Array.isArray(v.containers) || !Array.isArray(v.sandboxes)) return false;
  for (const c of v.containers) {
    if (!isObject(c) || !isString(c.id) || !isString(c.name) || !CONTAINER_STATES.has(c.state as string)) return false;
  }
  for (const s of v.sandboxes) {
    if (!isObject(s) || !isString(s.id) || !SANDBOX_STATES.has(s.state as string)) return false;
  }
  return true;
}

function isKillOptions(v: unknown): boolean {
  return isObject(v) && optional(v, 'evict', isBoolean) && optional(v, 'gracePeriodSecondsOverride', isGrace);
}

function isUpdateView(v: unknown): boolean {
  return (
    isObject(v) &&
    UPDATE_TYPES.has(v.updateType as string) &&
    optional(v, 'startTime', isNumber) &&
    optional(v, 'pod', isObject) &&
    optional(v, 'mirrorPod', isObject) &&
    optional(v, 'runningPod', isRunningPod) &&
    optional(v, 'killPodOptions', isKillOptions)
  );
}

const STATUS_FLAGS = ['working', 'startedTerminating', 'deleted', 'evicted', 'finished', 'restartRequested', 'observedRuntime'];
const STATUS_TIMES = ['syncedAt', 'startedAt', 'terminatingAt', 'terminatedAt'];

function isStatusView(v: unknown): boolean {
  if (!isObject(v) || !isNonEmptyString(v.uid) || !isString(v.fullname) || !isGrace(v.gracePeriod)) return false;
  for (const flag of STATUS_FLAGS) if (!isBoolean(v[flag])) return false;
  for (const time of STATUS_TIMES) if (!optional(v, time, isEpoch)) return false;
  return optional(v, 'pendingUpdate', isUpdateView) && optional(v, 'activeUpdate', isUpdateView);
}

function isTransition(v: unknown): boolean {
  return isObject(v) && isEpoch(v.at) && isString(v.type) && isString(v.detail) && isInt(v.pid);
}

function isRuntimeError(v: unknown): boolean {
  return isObject(v) && isString(v.message) && isEpoch(v.at) && optional(v, 'retryAt', isEpoch);
}

/** The checkpoint payload (after its checksum matched). */
export function isCheckpointShape(v: unknown): v is PodCheckpoint {
  return (
    isObject(v) &&
    isNonEmptyString(v.uid) &&
    isString(v.namespace) &&
    isString(v.name) &&
    isStatusView(v.status) &&
    isEpoch(v.since) &&
    Array.isArray(v.history) &&
    v.history.length <= HISTORY_LIMIT &&
    v.history.every(isTransition) &&
    optional(v, 'lastError', isRuntimeError) &&
    optional(v, 'graceDeadline', isEpoch) &&
    isEpoch(v.writtenAt) &&
    isInt(v.writerPid)
  );
}
