/**
 * The on-disk checkpoint format: one file per pod UID, versioned, checksummed, schema-validated.
 *
 * A checkpoint file is two parts, in the spirit of the kubelet's checkpoint manager (whose checksum
 * covers the data it protects):
 * ```
 * {"format":"podctl/pod-checkpoint","version":1,"length":1234,"sha256":"<hex>"}\n
 * <payload: `length` bytes of JSON>
 * ```
 * The header names the format and version; `sha256` covers exactly the payload bytes, and `length`
 * makes truncation obvious even before hashing. The payload is a `PodCheckpoint`, validated after
 * the checksum matches by its schema in records.ts, which names the first offending field of a
 * rejected payload.
 *
 * Invariants:
 * - `encodeCheckpoint` ∘ `decodeCheckpoint` is the identity on valid checkpoints.
 * - Decoding never throws: it returns `ok` or a `rejected` outcome with a one-line reason
 *   (truncated, checksum mismatch, unknown version, schema) that the store quarantines.
 * - The history is bounded (`HISTORY_LIMIT`, oldest dropped first).
 */
// one-shot, without node:crypto's load for a short command; a watch checks every changed checkpoint
import { sha256Hex } from '../lib/sha256.js';
import type { TransitionRecord } from '../domain/session-api.js';
import { CHECKPOINT_FORMAT, HISTORY_LIMIT, checkRecord, checkpointHeaderSchema, checkpointSchema, type PodCheckpoint } from './records.js';

export const CHECKPOINT_VERSION = 1;
export { CHECKPOINT_FORMAT, HISTORY_LIMIT };

export type { PodCheckpoint } from './records.js';

/** Keeps the newest `HISTORY_LIMIT` records. */
export function boundHistory(history: TransitionRecord[]): TransitionRecord[] {
  return history.length > HISTORY_LIMIT ? history.slice(history.length - HISTORY_LIMIT) : history;
}

export function encodeCheckpoint(checkpoint: PodCheckpoint): Buffer {
  // Engine views keep `uid` non-enumerable (it is the snapshot's key); the file records it.
  const status = { ...checkpoint.status, uid: checkpoint.uid };
  const bounded = { ...checkpoint, status, history: boundHistory(checkpoint.history) };
  // JSON.stringify drops `undefined` members, so the file decodes to exactly what it encodes.
  const payload = Buffer.from(JSON.stringify(bounded), 'utf8');
  const header = JSON.stringify({
    format: CHECKPOINT_FORMAT,
    version: CHECKPOINT_VERSION,
    length: payload.length,
    sha256: sha256Hex(payload),
  });
  return Buffer.concat([Buffer.from(`${header}\n`, 'utf8'), payload]);
}

export type DecodeOutcome = { kind: 'ok'; checkpoint: PodCheckpoint } | { kind: 'rejected'; reason: string };

function rejected(reason: string): DecodeOutcome {
  return { kind: 'rejected', reason };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Validates a checkpoint file's bytes; never throws. `expectedUid` guards against misfiled copies. */
export function decodeCheckpoint(data: Uint8Array, expectedUid?: string): DecodeOutcome {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (bytes.length === 0) return rejected('empty file');
  const newline = bytes.indexOf(0x0a);
  if (newline < 0) return rejected('truncated (no header line)');
  const headerJson = parseJson(bytes.subarray(0, newline).toString('utf8'));
  if (typeof headerJson !== 'object' || headerJson === null) return rejected('unreadable header');
  const version = (headerJson as { version?: unknown }).version;
  const format = (headerJson as { format?: unknown }).format;
  if (format !== CHECKPOINT_FORMAT) return rejected(`unknown format ${JSON.stringify(format)}`);
  if (version !== CHECKPOINT_VERSION) {
    return rejected(`unsupported version ${JSON.stringify(version)} (this podctl reads version ${CHECKPOINT_VERSION})`);
  }
  const headerCheck = checkRecord(checkpointHeaderSchema, headerJson);
  if (!headerCheck.ok) return rejected(`bad header (${headerCheck.issue})`);
  const header = headerCheck.value;
  const payload = bytes.subarray(newline + 1);
  if (payload.length < header.length) {
    return rejected(`truncated (${payload.length} of ${header.length} payload bytes)`);
  }
  if (payload.length > header.length) {
    return rejected(`trailing garbage (${payload.length - header.length} bytes after the payload)`);
  }
  if (sha256Hex(payload) !== header.sha256) return rejected('checksum mismatch');
  const body = parseJson(payload.toString('utf8'));
  if (body === undefined) return rejected('payload is not JSON');
  const check = checkRecord(checkpointSchema, body);
  if (!check.ok) return rejected(`schema: ${check.issue}`);
  const checkpoint = check.value;
  if (checkpoint.status.uid !== checkpoint.uid) return rejected('status UID differs from checkpoint UID');
  if (expectedUid !== undefined && checkpoint.uid !== expectedUid) {
    return rejected(`holds UID ${checkpoint.uid}, expected ${expectedUid}`);
  }
  return { kind: 'ok', checkpoint };
}
