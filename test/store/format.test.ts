import { describe, expect, it } from 'vitest';
import { CHECKPOINT_VERSION, HISTORY_LIMIT, decodeCheckpoint, encodeCheckpoint } from '../../src/store/format.js';
import { checkpointFor } from './support/fixtures.js';

describe('checkpoint format', () => {
  it('round-trips every field of the worker status, the history and the last error', () => {
    const checkpoint = checkpointFor('0b6f3a52-1111-4c1e-9d4f-aaaaaaaaaaaa');
    const decoded = decodeCheckpoint(encodeCheckpoint(checkpoint));
    expect(decoded).toEqual({ kind: 'ok', checkpoint });
  });

  it('writes a header naming format, version, payload length and sha256', () => {
    const bytes = encodeCheckpoint(checkpointFor('u1'));
    const header = JSON.parse(bytes.subarray(0, bytes.indexOf(0x0a)).toString('utf8'));
    expect(header.format).toBe('podctl/pod-checkpoint');
    expect(header.version).toBe(CHECKPOINT_VERSION);
    expect(header.length).toBe(bytes.length - bytes.indexOf(0x0a) - 1);
    expect(header.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('drops undefined members so the JSON round trip is exact', () => {
    const checkpoint = checkpointFor('u2', { lastError: undefined });
    const decoded = decodeCheckpoint(encodeCheckpoint(checkpoint));
    expect(decoded.kind).toBe('ok');
    if (decoded.kind === 'ok') expect('lastError' in decoded.checkpoint).toBe(false);
  });

  it('bounds the history to the newest HISTORY_LIMIT records', () => {
    const history = Array.from({ length: HISTORY_LIMIT + 10 }, (_, i) => ({ at: i, type: 't', detail: `d${i}`, pid: 1 }));
    const decoded = decodeCheckpoint(encodeCheckpoint(checkpointFor('u3', { history })));
    expect(decoded.kind).toBe('ok');
    if (decoded.kind === 'ok') {
      expect(decoded.checkpoint.history).toHaveLength(HISTORY_LIMIT);
      expect(decoded.checkpoint.history[0]!.detail).toBe('d10');
    }
  });

  it('rejects every truncation of a valid file', () => {
    const bytes = encodeCheckpoint(checkpointFor('u4'));
    for (let cut = 0; cut < bytes.length; cut += 7) {
      const outcome = decodeCheckpoint(bytes.subarray(0, cut));
      expect(outcome.kind, `cut at ${cut}`).toBe('rejected');
    }
  });

  it('rejects a single flipped bit anywhere in the payload (checksum) or the header', () => {
    const bytes = encodeCheckpoint(checkpointFor('u5'));
    for (let i = 0; i < bytes.length; i += 5) {
      for (const bit of [0, 3, 6]) {
        const flipped = Buffer.from(bytes);
        flipped[i] = flipped[i]! ^ (1 << bit);
        expect(decodeCheckpoint(flipped).kind, `byte ${i} bit ${bit}`).toBe('rejected');
      }
    }
  });

  it('names the reason: checksum, truncation, version', () => {
    const bytes = encodeCheckpoint(checkpointFor('u6'));
    const newline = bytes.indexOf(0x0a);
    const flipped = Buffer.from(bytes);
    flipped[newline + 20] = flipped[newline + 20]! ^ 1;
    expect(decodeCheckpoint(flipped)).toEqual({ kind: 'rejected', reason: 'checksum mismatch' });
    expect(decodeCheckpoint(bytes.subarray(0, bytes.length - 3))).toMatchObject({ reason: expect.stringMatching(/^truncated/) });
    const v2 = Buffer.from(bytes.toString('utf8').replace('"version":1', '"version":2'), 'utf8');
    expect(decodeCheckpoint(v2)).toMatchObject({ reason: expect.stringMatching(/unsupported version 2/) });
  });

  it('rejects a valid envelope whose payload breaks the schema', () => {
    const bad = checkpointFor('u7') as unknown as Record<string, unknown>;
    (bad.status as Record<string, unknown>).gracePeriod = 'thirty';
    const outcome = decodeCheckpoint(encodeCheckpoint(bad as never));
    expect(outcome).toMatchObject({ kind: 'rejected', reason: expect.stringMatching(/^schema: status.gracePeriod/) });
  });

  it('rejects a header line that is JSON but not an object, and names a bad header field', () => {
    const bytes = encodeCheckpoint(checkpointFor('u10'));
    const payload = bytes.subarray(bytes.indexOf(0x0a));
    for (const line of ['null', '3', '"x"']) {
      expect(decodeCheckpoint(Buffer.concat([Buffer.from(line), payload]))).toEqual({ kind: 'rejected', reason: 'unreadable header' });
    }
    const badSum = Buffer.from(bytes.toString('utf8').replace(/"sha256":"[0-9a-f]{64}"/, `"sha256":"${'A'.repeat(64)}"`), 'utf8');
    expect(decodeCheckpoint(badSum)).toMatchObject({ kind: 'rejected', reason: expect.stringMatching(/^bad header \(sha256: /) });
  });

  it('rejects a checkpoint filed under another UID', () => {
    expect(decodeCheckpoint(encodeCheckpoint(checkpointFor('u8')), 'u9')).toMatchObject({ kind: 'rejected' });
  });
});
