/**
 * A runtime that is not there: a missing socket, a socket nobody listens on. Needs no containerd,
 * so it runs on every machine (this file is not skipped without a test node).
 *
 * What must hold: the failure is a CriError Unavailable (not a hang until the deadline, not a raw
 * grpc-js error) with a one-line message naming the socket; endpoint resolution names the path and
 * the flag; a node session on a socket that accepts but never speaks HTTP/2, or speaks something
 * else, is refused at its connect bound with one line naming the endpoint and the flag; the engine
 * records the failure, retries with backoff, and closes cleanly.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectCri } from '../../src/cri/client/client.js';
import { resolveEndpoint, EndpointError } from '../../src/cri/client/endpoint.js';
import { openSession } from '../../src/session/open.js';
import { CriError, GrpcStatus } from '../../src/cri/client/errors.js';
import { EngineStack } from './support/engine.js';
import { buildPod } from './support/pods.js';
import { waitFor } from '../support/wait.js';

describe('runtime unreachable', () => {
  let dir: string;
  let missing: string;
  let deaf: string;
  let deafServer: Server;
  let garbage: string;
  let garbageServer: Server;
  /** Every connection either server accepted (destroyed at the end, so the servers can close). */
  const deafConnections = new Set<Socket>();

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'podctl-e2e-unreachable-'));
    missing = join(dir, 'missing.sock');
    // a socket that accepts connections and never speaks HTTP/2
    deaf = join(dir, 'deaf.sock');
    deafServer = createServer((conn) => {
      deafConnections.add(conn);
      conn.on('error', () => undefined);
      conn.on('close', () => deafConnections.delete(conn));
    });
    await new Promise<void>((resolve) => deafServer.listen(deaf, resolve));
    // a socket that answers every connection with something other than HTTP/2
    garbage = join(dir, 'garbage.sock');
    garbageServer = createServer((conn) => {
      deafConnections.add(conn);
      conn.on('close', () => deafConnections.delete(conn));
      conn.on('error', () => undefined);
      conn.end('\x00\x01 not a gRPC server\n');
    });
    await new Promise<void>((resolve) => garbageServer.listen(garbage, resolve));
  });
  afterAll(async () => {
    const closed = Promise.all([deafServer, garbageServer].map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
    for (const conn of deafConnections) conn.destroy();
    await closed;
    await rm(dir, { recursive: true, force: true });
  });

  it('a call on a missing socket fails after the client retries (1.75 s, not the 20 s deadline) with CriError Unavailable, in one line naming the socket', async () => {
    const client = await connectCri({ endpoint: `unix://${missing}`, timeoutMs: 20_000 });
    try {
      const started = Date.now();
      const error = await client.version().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(CriError);
      const cri = error as CriError;
      // Unavailable, not DeadlineExceeded: it did not wait out the 20 s deadline, only the retries' 1.75 s
      expect(cri.code).toBe(GrpcStatus.UNAVAILABLE);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(cri.method).toBe('Version');
      expect(cri.message).not.toContain('\n');
      expect(cri.message).toMatch(/^Version: Unavailable: /);
      expect(cri.message).toContain(missing);
    } finally {
      client.close();
    }
  });

  it('a socket that never answers ends at the call deadline (DeadlineExceeded), not never', async () => {
    const client = await connectCri({ endpoint: deaf, timeoutMs: 300 });
    try {
      const error = await client.listPodSandbox().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(CriError);
      expect([GrpcStatus.DEADLINE_EXCEEDED, GrpcStatus.UNAVAILABLE]).toContain((error as CriError).code);
      expect((error as CriError).message).not.toContain('\n');
    } finally {
      client.close();
    }
  });

  it('resolving an explicit endpoint that does not exist is one line naming the path and the flag', async () => {
    const error = await resolveEndpoint({ flag: `unix://${missing}`, env: {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(EndpointError);
    const message = (error as Error).message;
    expect(message).not.toContain('\n');
    expect(message).toContain(missing);
    expect(message).toContain('--runtime-endpoint');
  });

  it.each([
    ['accepts and never speaks', () => deaf],
    ['speaks something else', () => garbage],
  ])('a node session on a socket that %s is refused at the connect bound, in one line naming it and the flag', async (_what, socket) => {
    const error = await openSession({ stateDir: join(dir, 'state'), runtimeEndpoint: `unix://${socket()}` }).then(
      async (session) => {
        await session.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(EndpointError);
    expect((error as EndpointError).reason).toBe('not-cri');
    expect((error as Error).message).toBe(`the runtime at unix://${socket()} did not answer as a CRI runtime within 2s (is --runtime-endpoint right?)`);
  });

  it('the engine records the runtime error, retries with backoff, and closes without hanging', async () => {
    const stack = await EngineStack.open(missing, { backOffPeriodMs: 100, rpcTimeoutMs: 2_000 });
    try {
      const pod = buildPod({ containers: [{ name: 'main', mode: 'default' }] }, 'unreachable', 'b0a3b8a2-0d5e-4a59-9f0e-0c2d7d8e7a11');
      stack.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodSecondsOverride: 1 } });
      const failures = await waitFor(
        'two failed terminating syncs',
        () => {
          const failed = stack.eventsFor(pod.metadata!.uid!, 'sync-failed');
          return failed.length >= 2 ? failed : undefined;
        },
        { timeoutMs: 10_000, everyMs: 25 },
      );
      for (const failure of failures) {
        expect(failure).toMatchObject({ phase: 'terminating' });
        const { error, retryInMs } = failure as { error: string; retryInMs: number };
        expect(error).not.toContain('\n');
        expect(error).toMatch(/Unavailable/);
        expect(retryInMs).toBeGreaterThan(0);
      }
      expect(stack.workers.isPodKnownTerminated(pod.metadata!.uid!)).toBe(false);
      expect(stack.workers.isPodTerminationRequested(pod.metadata!.uid!)).toBe(true);
    } finally {
      await stack.close();
    }
  });
});
