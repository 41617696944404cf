/**
 * The store's zod schemas (checkpoint payload and header, lease record, inbox request): the
 * reference definition of what each on-disk record may contain. format.ts, lease.ts and inbox.ts
 * own the formats; shapes.ts holds fast guards that accept exactly what these schemas accept
 * (test/store/shapes.test.ts keeps the two in agreement).
 *
 * zod costs ~40 ms to import, which every podctl command would pay, so it is loaded synchronously
 * (through `require`) on first use — in practice only to name the offending field of a rejected
 * checkpoint.
 */
import { createRequire } from 'node:module';
import type { z } from 'zod';
import { MAX_GRACE_SECONDS } from '../engine/grace.js';
import type { V1Pod } from '../engine/types.js';

/** The latest instant a Date can hold (ms since the epoch): later times on disk are damage. */
const MAX_EPOCH_MS = 8.64e15;

/** Transition records kept per pod (oldest dropped first). */
export const HISTORY_LIMIT = 64;
export const CHECKPOINT_FORMAT = 'podctl/pod-checkpoint';

type Zod = typeof z;

function build(z: Zod) {
  const podSchema = z.looseObject({}).transform((v) => v as V1Pod);
  const runtimeStateSchema = z.enum(['created', 'running', 'exited', 'unknown']);
  const runningPodSchema = z.object({
    id: z.string(),
    name: z.string(),
    namespace: z.string(),
    containers: z.array(z.object({ id: z.string(), name: z.string(), state: runtimeStateSchema })),
    sandboxes: z.array(z.object({ id: z.string(), state: z.enum(['ready', 'notready']) })),
  });
  // a grace past MAX_GRACE_SECONDS on disk is damage, not intent: the file is quarantined
  const grace = z.number().finite().min(0).max(MAX_GRACE_SECONDS, `grace period past the maximum of ${MAX_GRACE_SECONDS} s`);
  const updateViewSchema = z.object({
    updateType: z.enum(['sync', 'update', 'create', 'kill']),
    startTime: z.number().optional(),
    pod: podSchema.optional(),
    mirrorPod: podSchema.optional(),
    runningPod: runningPodSchema.optional(),
    killPodOptions: z
      .object({ evict: z.boolean().optional(), gracePeriodSecondsOverride: grace.optional() })
      .optional(),
  });
  const epochMs = z.number().finite().nonnegative().max(MAX_EPOCH_MS);
  const statusSchema = z.object({
    uid: z.string().min(1),
    fullname: z.string(),
    working: z.boolean(),
    syncedAt: epochMs.optional(),
    startedAt: epochMs.optional(),
    terminatingAt: epochMs.optional(),
    terminatedAt: epochMs.optional(),
    gracePeriod: grace,
    startedTerminating: z.boolean(),
    deleted: z.boolean(),
    evicted: z.boolean(),
    finished: z.boolean(),
    restartRequested: z.boolean(),
    observedRuntime: z.boolean(),
    pendingUpdate: updateViewSchema.optional(),
    activeUpdate: updateViewSchema.optional(),
  });
  const transitionSchema = z.object({
    at: epochMs,
    type: z.string(),
    detail: z.string(),
    pid: z.number().int(),
  });
  const checkpointSchema = z.object({
    uid: z.string().min(1),
    namespace: z.string(),
    name: z.string(),
    status: statusSchema,
    since: epochMs,
    history: z.array(transitionSchema).max(HISTORY_LIMIT),
    lastError: z.object({ message: z.string(), at: epochMs, retryAt: epochMs.optional() }).optional(),
    graceDeadline: epochMs.optional(),
    writtenAt: epochMs,
    writerPid: z.number().int(),
  });
  const headerSchema = z.object({
    format: z.literal(CHECKPOINT_FORMAT),
    version: z.number().int(),
    length: z.number().int().nonnegative(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  });
  const leaseRecordSchema = z.object({
    uid: z.string(),
    generation: z.number().int().positive(),
    pid: z.number().int(),
    startTicks: z.number().nonnegative(),
    startedAt: z.number(),
    pidNs: z.string().regex(/^\d+$/).optional(),
    token: z.string(),
    acquiredAt: z.number(),
    released: z.boolean(),
  });
  const requestSchema = z.object({
    id: z.string().min(1),
    uid: z.string().min(1),
    at: z.number(),
    fromPid: z.number().int(),
    kind: z.literal('kill'),
    gracePeriodSeconds: grace.optional(),
    evict: z.boolean().optional(),
    reason: z.string().optional(),
    message: z.string().optional(),
    pod: z.looseObject({}).optional(),
  });
  return { checkpointSchema, headerSchema, leaseRecordSchema, requestSchema };
}

export type StoreSchemas = ReturnType<typeof build>;
export type LeaseRecord = z.infer<StoreSchemas['leaseRecordSchema']>;

let built: StoreSchemas | undefined;

export function storeSchemas(): StoreSchemas {
  if (!built) {
    const zod = createRequire(import.meta.url)('zod') as { z: Zod };
    built = build(zod.z);
  }
  return built;
}

/** The first issue of a failed validation, as "path: message". */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  const at = issue.path.length > 0 ? issue.path.join('.') : '(root)';
  return `${at}: ${issue.message}`;
}
