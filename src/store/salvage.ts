/**
 * What can be kept of a bad checkpoint of a pod on its way out. A checkpoint that fails its
 * checksum or schema (a forged grace, a timestamp in year 3000, a flipped bit) is quarantined; if
 * its payload still reads as JSON and says the pod's termination was requested, the pod must stay
 * terminating — treating it as a plain running pod would resurrect it (a `sync-known` against the
 * runtime would then keep it). The salvaged checkpoint keeps what is in range and replaces what is
 * not by its lower bound: a grace out of range becomes SALVAGE_GRACE_SECONDS (the kubelet's minimum
 * for a kill), a time out of range becomes now, and the deadline is never later than the salvaged
 * grace allows — so a salvage can only shorten a termination, never lengthen it.
 *
 * Invariants: pure; returns a checkpoint that `decodeCheckpoint` accepts, or undefined (nothing
 * worth keeping: the payload is not JSON, names another pod, or no termination was requested).
 */
import { CHECKPOINT_FORMAT, CHECKPOINT_VERSION, decodeCheckpoint, encodeCheckpoint, type PodCheckpoint } from './format.js';
import { isStoredEpochMs as isEpoch, isStoredGrace as isGrace } from './records.js';

/** The grace a salvaged termination gets when its recorded one is out of range (seconds). */
const SALVAGE_GRACE_SECONDS = 2;

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An update view with a forged grace override brought down to `grace`. */
function saneUpdate(update: unknown, grace: number): unknown {
  if (!isObject(update)) return update;
  const kill = update.killPodOptions;
  if (!isObject(kill) || kill.gracePeriodSecondsOverride === undefined || isGrace(kill.gracePeriodSecondsOverride)) return update;
  return { ...update, killPodOptions: { ...kill, gracePeriodSecondsOverride: grace } };
}

export function salvageTerminating(data: Uint8Array, uid: string, now: number, pid: number, reason: string): PodCheckpoint | undefined {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const newline = bytes.indexOf(0x0a);
  if (newline < 0) return undefined;
  // only a checkpoint of this format and version is understood well enough to keep parts of it
  let header: unknown;
  try {
    header = JSON.parse(bytes.subarray(0, newline).toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isObject(header) || header.format !== CHECKPOINT_FORMAT || header.version !== CHECKPOINT_VERSION) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(bytes.subarray(newline + 1).toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isObject(body) || body.uid !== uid || !isObject(body.status)) return undefined;
  const old = body.status;
  if (old.terminatingAt === undefined || old.finished === true) return undefined;
  const grace = isGrace(old.gracePeriod) ? old.gracePeriod : SALVAGE_GRACE_SECONDS;
  const terminatingAt = isEpoch(old.terminatingAt) && old.terminatingAt <= now ? old.terminatingAt : now;
  const status: Obj = { ...old, uid, gracePeriod: grace, terminatingAt, working: false };
  for (const key of ['syncedAt', 'startedAt', 'terminatedAt'] as const) {
    const value = status[key];
    if (value !== undefined && !(isEpoch(value) && value <= now)) delete status[key];
  }
  status.activeUpdate = saneUpdate(status.activeUpdate, grace);
  status.pendingUpdate = saneUpdate(status.pendingUpdate, grace);
  if (status.activeUpdate === undefined) delete status.activeUpdate;
  if (status.pendingUpdate === undefined) delete status.pendingUpdate;
  // the deadline: never later than the salvaged grace allows from the salvaged start
  const latest = terminatingAt + grace * 1000;
  const graceDeadline = isEpoch(body.graceDeadline) ? Math.min(body.graceDeadline, latest) : latest;
  const history: unknown[] = Array.isArray(body.history) ? (body.history as unknown[]).filter((h) => isObject(h) && isEpoch(h.at) && h.at <= now) : [];
  const candidate = {
    ...body,
    status,
    since: isEpoch(body.since) && body.since <= now ? body.since : now,
    history: [...history, { at: now, type: 'salvaged', detail: `checkpoint ${reason}: kept terminating with grace ${grace}s`, pid }],
    graceDeadline,
    writtenAt: now,
    writerPid: pid,
  } as unknown as PodCheckpoint;
  if (!isObject(candidate.lastError) || !isEpoch((candidate.lastError as unknown as Obj).at)) delete (candidate as Partial<PodCheckpoint>).lastError;
  let encoded: Buffer;
  try {
    encoded = encodeCheckpoint(candidate);
  } catch {
    return undefined;
  }
  const decoded = decodeCheckpoint(encoded, uid);
  return decoded.kind === 'ok' ? decoded.checkpoint : undefined;
}
