/**
 * services/terminate/drive.ts: the background driver waits for a runtime that is away instead of exiting —
 * which failures count as "away", the pauses between attempts, what the log says, and that any
 * other failure or an abort still ends it, and so does a state dir that no longer records its pods.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EndpointError } from '../../../src/cri/client/endpoint.js';
import { CriError, GrpcStatus } from '../../../src/cri/client/errors.js';
import { RuntimeFailure } from '../../../src/lib/errors.js';
import { awayPauseMs, checkpointsRemain, isRuntimeAway, NothingLeftToDrive, untilRuntimeAnswers } from '../../../src/services/terminate/drive.js';

function recorder(): { lines: string[]; reporter: { warn: (m: string) => void; debug: (m: string) => void } } {
  const lines: string[] = [];
  return { lines, reporter: { warn: (m) => lines.push(`warn ${m}`), debug: (m) => lines.push(`debug ${m}`) } };
}

describe('isRuntimeAway', () => {
  it('a missing or refusing socket, a runtime found nowhere, or one that does not speak gRPC is away', () => {
    for (const reason of ['missing', 'refused', 'none', 'not-cri'] as const) expect(isRuntimeAway(new EndpointError('x', reason)), reason).toBe(true);
  });

  it('an invalid endpoint, a path that is no socket and a permission are not mended by waiting', () => {
    for (const reason of ['invalid', 'not-a-socket', 'permission'] as const) expect(isRuntimeAway(new EndpointError('x', reason)), reason).toBe(false);
  });

  it('a CRI call that could not reach the runtime (UNAVAILABLE, a deadline) is away; a runtime that answered with an error is not', () => {
    expect(isRuntimeAway(new CriError('ListPodSandbox', GrpcStatus.UNAVAILABLE, 'connect ECONNREFUSED'))).toBe(true);
    expect(isRuntimeAway(new CriError('ListPodSandbox', GrpcStatus.DEADLINE_EXCEEDED, ''))).toBe(true);
    expect(isRuntimeAway(new CriError('StopContainer', GrpcStatus.UNKNOWN, 'failed'))).toBe(false);
    expect(isRuntimeAway(new CriError('StopContainer', GrpcStatus.NOT_FOUND, ''))).toBe(false);
  });

  it('looks through wrapping errors (cause), and nothing else counts', () => {
    const wrapped = new RuntimeFailure('listing pods failed', 'check the runtime', { cause: new CriError('ListContainers', GrpcStatus.UNAVAILABLE, '') });
    expect(isRuntimeAway(wrapped)).toBe(true);
    expect(isRuntimeAway(new Error('EACCES on the state dir'))).toBe(false);
    expect(isRuntimeAway(undefined)).toBe(false);
  });
});

describe('awayPauseMs', () => {
  it('doubles from half a second up to the engine back-off period, and stays there', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 100].map((n) => awayPauseMs(n))).toEqual([500, 1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]);
  });
});

describe('untilRuntimeAnswers', () => {
  const away = (): EndpointError => new EndpointError('runtime endpoint /run/x.sock (--runtime-endpoint): no such socket', 'missing');

  it('retries while the runtime is away, pausing as awayPauseMs says, and says when it answers again', async () => {
    const { lines, reporter } = recorder();
    const pauses: number[] = [];
    let clock = 0;
    let calls = 0;
    const value = await untilRuntimeAnswers(
      async () => {
        calls += 1;
        if (calls <= 3) throw away();
        return 'opened';
      },
      {
        what: 'opening the session',
        reporter,
        signal: new AbortController().signal,
        now: () => clock,
        pause: async (ms) => {
          pauses.push(ms);
          clock += ms;
        },
      },
    );
    expect(value).toBe('opened');
    expect(pauses).toEqual([500, 1000, 2000]);
    const warnings = lines.filter((l) => l.startsWith('warn'));
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('opening the session: runtime endpoint /run/x.sock (--runtime-endpoint): no such socket; waiting for the runtime');
    expect(warnings[1]).toBe('warn opening the session: the runtime answered again 3s after it went away');
    expect(lines.filter((l) => l.startsWith('debug'))).toHaveLength(2);
  });

  it('an attempt that succeeds at once logs nothing', async () => {
    const { lines, reporter } = recorder();
    expect(await untilRuntimeAnswers(async () => 7, { what: 'x', reporter, signal: new AbortController().signal })).toBe(7);
    expect(lines).toEqual([]);
  });

  it('any other failure ends it at once, without a pause', async () => {
    const { reporter } = recorder();
    const pauses: number[] = [];
    const attempt = untilRuntimeAnswers(
      async () => {
        throw new EndpointError('permission denied', 'permission');
      },
      { what: 'x', reporter, signal: new AbortController().signal, pause: async (ms) => void pauses.push(ms) },
    );
    await expect(attempt).rejects.toThrow('permission denied');
    expect(pauses).toEqual([]);
  });

  it('ends, without another pause, once none of its pods is recorded (leftToDrive false)', async () => {
    const { reporter } = recorder();
    const pauses: number[] = [];
    let recorded = 2;
    const attempt = untilRuntimeAnswers(
      async () => {
        throw away();
      },
      { what: 'opening the session', reporter, signal: new AbortController().signal, leftToDrive: () => (recorded -= 1) > 0, pause: async (ms) => void pauses.push(ms) },
    );
    await expect(attempt).rejects.toBeInstanceOf(NothingLeftToDrive);
    await expect(attempt).rejects.toThrow(/nothing left to drive \(the runtime: runtime endpoint \/run\/x\.sock/);
    expect(pauses).toEqual([500]);
  });

  it('an abort during a pause ends the wait with the abort', async () => {
    const { reporter } = recorder();
    const controller = new AbortController();
    const attempt = untilRuntimeAnswers(
      async () => {
        throw away();
      },
      { what: 'x', reporter, signal: controller.signal },
    );
    setTimeout(() => controller.abort(new Error('SIGTERM')), 50);
    await expect(attempt).rejects.toThrow('SIGTERM');
  });
});

describe('checkpointsRemain', () => {
  it("is true while one of the driver's pods has a checkpoint file, false once none has (or the state dir is gone)", () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-drive-'));
    try {
      expect(checkpointsRemain(dir, ['a-1', 'b-2'])).toBe(false);
      mkdirSync(path.join(dir, 'pods'));
      writeFileSync(path.join(dir, 'pods', 'b-2.ckpt'), '');
      expect(checkpointsRemain(dir, ['a-1', 'b-2'])).toBe(true);
      expect(checkpointsRemain(dir, ['a-1'])).toBe(false);
      rmSync(dir, { recursive: true, force: true });
      expect(checkpointsRemain(dir, ['b-2'])).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
