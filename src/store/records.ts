/**
 * The store's on-disk records — a pod's checkpoint (payload and header line), a lease generation,
 * an inbox request, the agent's mark — each defined once, as a valibot schema, with its TypeScript type inferred
 * from that schema. Every read validates through these schemas (format.ts, lease.ts, inbox.ts);
 * nothing else decides what a record may contain.
 *
 * Owns: the schemas, the types inferred from them, the record bounds (`HISTORY_LIMIT`, the grace
 * bound of engine/grace.ts, the latest epoch a Date can hold; `isStoredEpochMs` and
 * `isStoredGrace` let a repair ask the schema's own rule) and `checkRecord`, the one way to
 * validate. valibot is small and side-effect free (~1 ms to load, bundled), so the start-up path
 * loads it like any other module. Every read runs valibot itself (`v.safeParse`): one definition
 * decides and words what a record may contain (docs/bench/history.md, "Issue 41", has its cost).
 * Each exported schema is a `v.lazy` over its definition, built at its first use and kept (`once`):
 * a command that reads no record of a kind builds none of its schemas (docs/bench/startup.md).
 *
 * Invariants:
 * - `checkRecord` never throws; a rejection names the first offending field ("path: message"),
 *   as `v.safeParse` words it; an acceptance is valibot's output (members the schema does not know
 *   dropped).
 * - A record object is a plain JSON object (never an array); an optional member may be absent or
 *   `undefined`; numbers are finite; "int" means a safe integer; a stored grace obeys the engine's
 *   `isGraceInRange`.
 * - The checkpoint's `status` is the engine's `PodSyncStatusView` exactly, its timeline entries and
 *   last error the domain's `TransitionRecord` and `RuntimeErrorInfo` (those layers own the types
 *   and import no store; test/store/records.test.ts checks the types are the same).
 * - A schema's definition is built at most once per process; the lazy wrapper adds no check and no
 *   issue of its own (valibot's `lazy` runs the wrapped schema on the same input, path and config).
 * - Imports nothing from the rest of the store, so the codecs (format.ts) and the folders
 *   (checkpoints.ts, lease.ts, inbox.ts) all depend on it and never on one another in a circle.
 */
import * as v from 'valibot';
import { MAX_GRACE_SECONDS, isGraceInRange } from '../engine/grace.js';
import type { V1Pod } from '../engine/types.js';

/** One-line reports about files the store moved aside or could not use. */
export type StoreReporter = (message: string) => void;

/** Transition records kept per pod (oldest dropped first). */
export const HISTORY_LIMIT = 64;
export const CHECKPOINT_FORMAT = 'podctl/pod-checkpoint';
/** The latest instant a Date can hold (ms since the epoch): later times on disk are damage. */
const MAX_EPOCH_MS = 8.64e15;

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `build`'s result, made at the first call and returned by every later one. */
function once<T>(build: () => T): () => T {
  let built: T | undefined;
  return () => (built ??= build());
}

/** A schema whose definition is built at its first use (then kept): the same checks and issues. */
function lazily<S extends v.GenericSchema>(build: () => S): v.LazySchema<S> {
  return v.lazy(once(build));
}

/**
 * A JSON object with these members. valibot's `object` also takes an array, which can only pass
 * when no member is required (an array has no named members), so the all-optional ones are
 * `optionsRecord`s, which refuse arrays; the rest stay plain `object`s (cheaper on every read).
 */
const record = v.object;
function optionsRecord<const Entries extends v.ObjectEntries>(entries: Entries) {
  return v.pipe(v.custom<Record<string, unknown>>(isPlainObject, 'Invalid type: Expected Object'), v.object(entries));
}

const num = () => v.pipe(v.number(), v.finite());
const int = () => v.pipe(v.number(), v.safeInteger());
const nonEmpty = () => v.pipe(v.string(), v.minLength(1));
// Range checks are one `check` each (not finite + minValue + maxValue): a third of the reading cost.
/** Epoch milliseconds a Date can hold. */
const epochMs = () =>
  v.pipe(
    v.number(),
    v.check((ms) => Number.isFinite(ms) && ms >= 0 && ms <= MAX_EPOCH_MS, `not a time in 0…${MAX_EPOCH_MS} ms since the epoch`),
  );
/** A grace period (seconds) podctl can act on, by the engine's rule: one past MAX_GRACE_SECONDS on disk is damage, not intent. */
const grace = () => v.pipe(v.number(), v.check(isGraceInRange, `grace period negative or past the maximum of ${MAX_GRACE_SECONDS} s`));
/** The schema's own rules for one stored time and one stored grace, for code that repairs a record (salvage.ts). */
const epochMsRule = once(epochMs);
const graceRule = once(grace);
export const isStoredEpochMs = (value: unknown): value is number => v.is(epochMsRule(), value);
export const isStoredGrace = (value: unknown): value is number => v.is(graceRule(), value);
/** A pod spec as the API server gives it: kept whole, only required to be an object. */
const pod = () => v.custom<V1Pod>(isPlainObject, 'Invalid type: Expected a pod object');

const runningPodSchema = once(() =>
  record({
    id: v.string(),
    name: v.string(),
    namespace: v.string(),
    containers: v.array(record({ id: v.string(), name: v.string(), state: v.picklist(['created', 'running', 'exited', 'unknown']) })),
    sandboxes: v.array(record({ id: v.string(), state: v.picklist(['ready', 'notready']) })),
  }),
);

/** An update as the engine stores and shows it: the kill options without their callbacks. */
const updateViewSchema = once(() =>
  record({
    updateType: v.picklist(['sync', 'update', 'create', 'kill']),
    startTime: v.optional(num()),
    pod: v.optional(pod()),
    mirrorPod: v.optional(pod()),
    runningPod: v.optional(runningPodSchema()),
    killPodOptions: v.optional(optionsRecord({ evict: v.optional(v.boolean()), gracePeriodSecondsOverride: v.optional(grace()) })),
  }),
);

/** The worker's sync status as a checkpoint holds it: engine/types.ts's `PodSyncStatusView`. */
const podSyncStatus = once(() =>
  record({
    uid: nonEmpty(),
    fullname: v.string(),
    working: v.boolean(),
    syncedAt: v.optional(epochMs()),
    startedAt: v.optional(epochMs()),
    terminatingAt: v.optional(epochMs()),
    terminatedAt: v.optional(epochMs()),
    gracePeriod: grace(),
    startedTerminating: v.boolean(),
    deleted: v.boolean(),
    evicted: v.boolean(),
    finished: v.boolean(),
    restartRequested: v.boolean(),
    observedRuntime: v.boolean(),
    pendingUpdate: v.optional(updateViewSchema()),
    activeUpdate: v.optional(updateViewSchema()),
  }),
);

/** The same, as a schema of its own (built with the checkpoint's, once). */
export const podSyncStatusSchema = v.lazy(podSyncStatus);

/** One entry of a pod's bounded timeline: domain/session-api.ts's `TransitionRecord`. */
const transitionRecordSchema = once(() =>
  record({
    at: epochMs(),
    /** The engine event type, or a store/session event such as 'lease-taken', 'request-applied'. */
    type: v.string(),
    /** Human-readable detail: "grace 30s → 5s", "StopContainer: DeadlineExceeded", … */
    detail: v.string(),
    pid: int(),
    /** A step that lasted: when it began (it ended at `at`); what it was about, its kind and how it ended. */
    from: v.optional(epochMs()),
    subject: v.optional(v.string()),
    kind: v.optional(v.string()),
    outcome: v.optional(v.string()),
    exitCode: v.optional(int()),
  }),
);

/** The last runtime error of a pod's worker: domain/session-api.ts's `RuntimeErrorInfo`. */
const runtimeErrorSchema = once(() =>
  record({
    message: v.string(),
    at: epochMs(),
    /** When the worker will retry (epoch ms), if known. */
    retryAt: v.optional(epochMs()),
  }),
);

/** Everything the store keeps about one pod: the payload of `pods/<uid>.ckpt`. */
export const checkpointSchema = lazily(() =>
  record({
    uid: nonEmpty(),
    namespace: v.string(),
    name: v.string(),
    /** The worker's full sync status (pending/active updates without callbacks). */
    status: podSyncStatus(),
    /** When the current worker state (or finished) was entered, epoch ms. */
    since: epochMs(),
    /** Bounded timeline, oldest first. */
    history: v.pipe(v.array(transitionRecordSchema()), v.maxLength(HISTORY_LIMIT)),
    lastError: v.optional(runtimeErrorSchema()),
    /** While terminating: when the grace period in force runs out (epoch ms); only moves earlier. */
    graceDeadline: v.optional(epochMs()),
    /** When and by which process this checkpoint was written. */
    writtenAt: epochMs(),
    writerPid: int(),
  }),
);
export type PodCheckpoint = v.InferOutput<typeof checkpointSchema>;

/** The header line of a checkpoint file (format and version are checked by the decoder first). */
export const checkpointHeaderSchema = lazily(() =>
  record({
    format: v.literal(CHECKPOINT_FORMAT),
    version: int(),
    /** Payload bytes after the header line. */
    length: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
    /** Of exactly the payload bytes, lowercase hex. */
    sha256: v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/)),
  }),
);

/** One lease generation, `leases/<uid>@<generation>`: who holds the pod (lease.ts). */
export const leaseRecordSchema = lazily(() =>
  record({
    uid: v.string(),
    generation: v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
    pid: int(),
    /** The holder's kernel start time (clock ticks since boot), to tell a reused PID from it. */
    startTicks: v.pipe(v.number(), v.finite(), v.minValue(0)),
    /** The holder's start time, epoch ms. */
    startedAt: num(),
    /** The holder's PID namespace (inode number), when known. */
    pidNs: v.optional(v.pipe(v.string(), v.regex(/^\d+$/))),
    /** Tells two managers inside one process apart. */
    token: v.string(),
    acquiredAt: num(),
    /** A release tombstone. */
    released: v.boolean(),
  }),
);
export type LeaseRecord = v.InferOutput<typeof leaseRecordSchema>;

/** The agent serving a state dir, `agent.pid` (agent-mark.ts): its identity, as a lease records its holder. */
export const agentMarkSchema = lazily(() =>
  record({
    pid: v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
    startTicks: v.pipe(v.number(), v.finite(), v.minValue(0)),
    startedAt: num(),
    pidNs: v.optional(v.pipe(v.string(), v.regex(/^\d+$/))),
  }),
);
export type AgentMark = v.InferOutput<typeof agentMarkSchema>;

/** A request for a pod's owner: `inbox/<uid>@<id>.req` (inbox.ts). */
export const inboxRequestSchema = lazily(() =>
  record({
    id: nonEmpty(),
    uid: nonEmpty(),
    /** When it was written (epoch ms). */
    at: num(),
    fromPid: int(),
    kind: v.literal('kill'),
    gracePeriodSeconds: v.optional(grace()),
    evict: v.optional(v.boolean()),
    reason: v.optional(v.string()),
    message: v.optional(v.string()),
    /** The pod's spec, when the requester had a fresher one (e.g. from the API server). */
    pod: v.optional(pod()),
  }),
);
export type InboxRequest = v.InferOutput<typeof inboxRequestSchema>;

export type RecordCheck<T> = { ok: true; value: T } | { ok: false; issue: string };

/**
 * Validates `input` against one record schema; never throws. On success `value` is the record
 * (members the schema does not know are dropped); on failure `issue` names the first offending
 * field, as "status.gracePeriod: grace period past the maximum of 31536000 s".
 */
export function checkRecord<S extends v.GenericSchema>(schema: S, input: unknown): RecordCheck<v.InferOutput<S>> {
  const result = v.safeParse(schema, input, { abortEarly: true });
  if (result.success) return { ok: true, value: result.output };
  const issue = result.issues[0];
  const path = v.getDotPath(issue);
  return { ok: false, issue: `${path ?? '(root)'}: ${issue.message}` };
}
