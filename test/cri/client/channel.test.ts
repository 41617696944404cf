/**
 * The edges of the gRPC-over-HTTP/2 protocol as the CRI client speaks it (src/cri/client/channel.ts),
 * through `connectCri` as the session uses it, against tiny HTTP/2 servers that answer as a runtime
 * may (or may not), and against the simulator for a runtime that restarts:
 * - the deadline goes to the runtime (`grpc-timeout`) and is kept locally: the call ends with
 *   DeadlineExceeded naming how long was waited, and is cancelled at the runtime;
 * - a Trailers-Only error (the status in the response's headers) reaches the caller as its code and
 *   its percent-decoded message;
 * - an HTTP/2 server that is not gRPC (404, no status) fails the call in one line;
 * - messages up to 16 MiB pass both ways; one over it is refused with ResourceExhausted, a request
 *   before it is sent;
 * - every call of a client goes over one connection, and a runtime that restarted is reached again
 *   by the same client.
 */
import http2 from 'node:http2';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connectCri, type CriClient } from '../../../src/cri/client/client.js';
import { CriError, GrpcStatus, isDeadlineExceeded, isNotFound } from '../../../src/cri/client/errors.js';
import { resolveEndpoint } from '../../../src/cri/client/endpoint.js';
import { ListContainersResponse, VersionResponse } from '../../../src/cri/client/generated/runtime_v1.js';
import { startSimulator } from '../../../src/cri/simulator/index.js';
import { useTempDir } from '../support.js';

const dir = useTempDir();

/** A message with its 5-byte gRPC prefix. */
function framed(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

interface TinyServer {
  socketPath: string;
  /** Each request's headers, in order. */
  asked: http2.IncomingHttpHeaders[];
  /** How many connections were made. */
  sessions: number;
  /** How many streams the client cancelled (RST_STREAM CANCEL). */
  cancelled: number;
  close(): Promise<void>;
}

const servers: TinyServer[] = [];
const clients: CriClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** An HTTP/2 server on a unix socket that answers each request with `answer`. */
async function tinyServer(answer: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void): Promise<TinyServer> {
  const socketPath = path.join(dir(), `tiny-${servers.length}.sock`);
  const server = http2.createServer();
  const open = new Set<http2.ServerHttp2Session>();
  const tiny: TinyServer = {
    socketPath,
    asked: [],
    sessions: 0,
    cancelled: 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const session of open) session.destroy();
        server.close(() => resolve());
      }),
  };
  server.on('session', (session) => {
    tiny.sessions += 1;
    open.add(session);
    session.on('close', () => open.delete(session));
  });
  server.on('stream', (stream, headers) => {
    tiny.asked.push(headers);
    stream.on('error', () => undefined);
    stream.on('close', () => {
      if (stream.rstCode === http2.constants.NGHTTP2_CANCEL) tiny.cancelled += 1;
    });
    // the request is read to its end first, as a runtime does
    stream.resume();
    stream.on('end', () => answer(stream, headers));
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  servers.push(tiny);
  return tiny;
}

async function client(socketPath: string, timeoutMs = 5_000): Promise<CriClient> {
  const c = await connectCri({ endpoint: `unix://${socketPath}`, timeoutMs });
  clients.push(c);
  return c;
}

/** Answers with one message and an OK status in the trailers. */
function answerWith(message: Uint8Array) {
  return (stream: http2.ServerHttp2Stream): void => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(framed(message));
  };
}

const VERSION = VersionResponse.encode({ version: '0.1.0', runtimeName: 'tiny', runtimeVersion: '1', runtimeApiVersion: 'v1' }).finish();

describe('CRI client over HTTP/2: protocol edges', () => {
  it('sends the deadline as grpc-timeout, ends the call at it with DeadlineExceeded, and cancels it at the runtime', async () => {
    const tiny = await tinyServer(() => undefined);
    const c = await client(tiny.socketPath);
    const err = await c.listContainers(undefined, { timeoutMs: 300 }).catch((e: unknown) => e);
    expect(isDeadlineExceeded(err)).toBe(true);
    expect((err as CriError).message).toBe('ListContainers: DeadlineExceeded: no answer within 300ms');
    const [asked] = tiny.asked;
    expect(asked).toMatchObject({ ':method': 'POST', ':path': '/runtime.v1.RuntimeService/ListContainers', 'content-type': 'application/grpc', te: 'trailers' });
    // at most the 300 ms asked for, in gRPC's form (digits and a unit)
    expect(asked!['grpc-timeout']).toMatch(/^\d{1,8}m$/);
    expect(Number(String(asked!['grpc-timeout']).slice(0, -1))).toBeLessThanOrEqual(300);
    await expect.poll(() => tiny.cancelled).toBe(1);
  });

  it('reads a Trailers-Only error: its code and its percent-decoded message', async () => {
    const tiny = await tinyServer((stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(GrpcStatus.NOT_FOUND), 'grpc-message': 'container%20%22abc%22%20not%20found' }, { endStream: true });
    });
    const c = await client(tiny.socketPath);
    const err = await c.containerStatus('abc').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CriError);
    expect(isNotFound(err)).toBe(true);
    expect((err as CriError).message).toBe('ContainerStatus: NotFound: container "abc" not found');
  });

  it('fails in one line on an HTTP/2 server that is not gRPC', async () => {
    const tiny = await tinyServer((stream) => {
      stream.respond({ ':status': 404, 'content-type': 'text/plain' });
      stream.end('no such page\n');
    });
    const c = await client(tiny.socketPath);
    await c.waitForReady(2_000);
    const err = await c.version().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CriError);
    expect((err as CriError).code).toBe(GrpcStatus.UNIMPLEMENTED);
    expect((err as CriError).message).toBe('Version: Unimplemented: HTTP status 404 from the runtime');
  });

  it('fails with Internal when the runtime ends the call without a status', async () => {
    const tiny = await tinyServer((stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.end(framed(VERSION));
    });
    const c = await client(tiny.socketPath);
    const err = await c.version().catch((e: unknown) => e);
    expect((err as CriError).message).toBe('Version: Internal: the runtime ended the call without a status');
  });

  it('receives a listing of several MiB whole, and refuses one over 16 MiB with ResourceExhausted', async () => {
    const many = ListContainersResponse.encode(
      ListContainersResponse.fromPartial({
        containers: Array.from({ length: 4000 }, (_, i) => ({
          id: `c${i}`,
          podSandboxId: `s${i}`,
          labels: { big: 'x'.repeat(1000) },
          annotations: {},
          imageRef: '',
          imageId: '',
          state: 1,
          createdAt: 0n,
        })),
      }),
    ).finish();
    expect(many.length).toBeGreaterThan(3 * 1024 * 1024);
    const tiny = await tinyServer(answerWith(many));
    const c = await client(tiny.socketPath);
    const listed = await c.listContainers();
    expect(listed).toHaveLength(4000);
    expect(listed[3999]).toMatchObject({ id: 'c3999', labels: { big: 'x'.repeat(1000) } });

    const huge = await tinyServer(answerWith(Buffer.alloc(16 * 1024 * 1024 + 1)));
    const h = await client(huge.socketPath);
    const err = await h.listContainers().catch((e: unknown) => e);
    expect((err as CriError).code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    expect((err as CriError).message).toBe(`ListContainers: ResourceExhausted: a response of ${16 * 1024 * 1024 + 1} bytes, over the ${16 * 1024 * 1024}-byte limit`);
  });

  it('refuses a request over 16 MiB before sending it', async () => {
    const tiny = await tinyServer(answerWith(VERSION));
    const c = await client(tiny.socketPath);
    const err = await c.execSync('abc', ['x'.repeat(16 * 1024 * 1024)], 0).catch((e: unknown) => e);
    expect((err as CriError).code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    expect(tiny.asked).toHaveLength(0);
  });

  it('makes every call of a client over one connection', async () => {
    const tiny = await tinyServer(answerWith(VERSION));
    const c = await client(tiny.socketPath);
    await c.waitForReady(2_000);
    const versions = await Promise.all(Array.from({ length: 20 }, () => c.version()));
    await c.version();
    expect(versions.map((v) => v.runtimeName)).toEqual(Array.from({ length: 20 }, () => 'tiny'));
    expect(tiny.asked).toHaveLength(21);
    expect(tiny.sessions).toBe(1);
  });

  it("goes over the endpoint check's connection when it is handed over: the runtime is connected to once", async () => {
    const tiny = await tinyServer(answerWith(VERSION));
    const resolved = await resolveEndpoint({ flag: `unix://${tiny.socketPath}`, keepConnection: true });
    expect(resolved.connection?.destroyed).toBe(false);
    const c = await connectCri({ endpoint: resolved.endpoint, timeoutMs: 5_000, ...(resolved.connection ? { connection: resolved.connection } : {}) });
    clients.push(c);
    await c.waitForReady(2_000);
    expect((await Promise.all([c.version(), c.version()])).map((v) => v.runtimeName)).toEqual(['tiny', 'tiny']);
    expect(tiny.sessions).toBe(1);
    // without keepConnection the check's connection is closed: the calls need another one
    const probed = await resolveEndpoint({ flag: `unix://${tiny.socketPath}` });
    expect(probed.connection).toBeUndefined();
    expect((await (await client(tiny.socketPath)).version()).runtimeName).toBe('tiny');
    expect(tiny.sessions).toBe(3);
  });

  it('makes a new connection when the one handed over closed before the first call', async () => {
    const tiny = await tinyServer(answerWith(VERSION));
    const resolved = await resolveEndpoint({ flag: `unix://${tiny.socketPath}`, keepConnection: true });
    resolved.connection?.destroy();
    const c = await connectCri({ endpoint: resolved.endpoint, timeoutMs: 5_000, ...(resolved.connection ? { connection: resolved.connection } : {}) });
    clients.push(c);
    expect((await c.version()).runtimeName).toBe('tiny');
  });

  it('reaches a runtime that restarted with the same client: a new connection after the old one closed', async () => {
    const socketPath = path.join(dir(), 'restarting.sock');
    let sim = await startSimulator({ socketPath, pods: 1 });
    try {
      const c = await client(socketPath, 10_000);
      expect((await c.listPodSandbox()).length).toBe(1);
      await sim.close();
      // while the runtime is away the call fails as Unavailable (after the client's retries)
      const away = await c.version({ timeoutMs: 500 }).catch((e: unknown) => e);
      expect([GrpcStatus.UNAVAILABLE, GrpcStatus.DEADLINE_EXCEEDED]).toContain((away as CriError).code);
      sim = await startSimulator({ socketPath, pods: 2 });
      expect((await c.listPodSandbox()).length).toBe(2);
    } finally {
      await sim.close();
    }
  });
});
