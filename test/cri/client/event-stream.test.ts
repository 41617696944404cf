/**
 * The container event stream read over HTTP/2 directly, against a plain HTTP/2 server on a unix
 * socket that writes gRPC frames by hand: messages split over chunks and several in one, the
 * status in the trailers or alone in the headers, a runtime that closes without a status, and the
 * messages a reader must refuse. (test/cri/client/client.test.ts reads it from the simulator's grpc-js
 * server, and the containerd suite from containerd.)
 */
import http2 from 'node:http2';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ContainerEventResponse } from '../../../src/cri/client/generated/runtime_v1.js';
import { decodeContainerEventSummary, type ContainerEventSummary } from '../../../src/cri/client/container-event.js';
import { openContainerEventStream } from '../../../src/cri/client/event-stream.js';
import { CriError, GrpcStatus } from '../../../src/cri/client/errors.js';
import { useTempDir } from '../support.js';

const dir = useTempDir('podctl-events-');
const servers: http2.Http2Server[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** One event as a runtime encodes it, with its 5-byte gRPC prefix. */
function frame(containerId: string, type = 2, compressed = 0): Buffer {
  const message = ContainerEventResponse.encode(
    ContainerEventResponse.fromPartial({ containerId, containerEventType: type, podSandboxStatus: { id: `s-${containerId}`, metadata: { uid: `uid-${containerId}` } } }),
  ).finish();
  const prefix = Buffer.alloc(5);
  prefix[0] = compressed;
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** Serves one call: `respond` writes the answer on the stream; resolves with the socket path and what the server was asked. */
async function serve(respond: (stream: http2.ServerHttp2Stream) => void): Promise<{ socket: string; asked: http2.IncomingHttpHeaders[] }> {
  const socket = path.join(dir(), `rt-${servers.length}.sock`);
  const asked: http2.IncomingHttpHeaders[] = [];
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    asked.push(headers);
    respond(stream);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return { socket, asked };
}

/** Reads the stream to its end: the events in the batches they came in, and how it ended. */
function read(socket: string, signal = new AbortController().signal): Promise<{ batches: string[][]; error: CriError | undefined }> {
  const batches: string[][] = [];
  return new Promise((resolve) => {
    openContainerEventStream({
      socketPath: socket,
      decode: decodeContainerEventSummary,
      signal,
      maxMessageBytes: 4096,
      onEvents: (events: ContainerEventSummary[]) => batches.push(events.map((e) => `${e.containerId}/${e.containerEventType}/${e.podUid}`)),
      onEnd: (error) => resolve({ batches, error }),
    });
  });
}

const OK_HEADERS = { ':status': 200, 'content-type': 'application/grpc' };

describe('container event stream over HTTP/2', () => {
  it('asks as a gRPC client does, reads split and packed messages in order, and ends on an OK status', async () => {
    const { socket, asked } = await serve((stream) => {
      stream.respond(OK_HEADERS, { waitForTrailers: true });
      const two = Buffer.concat([frame('a'), frame('b')]);
      const three = frame('c', 3);
      // a and b in one chunk; c split inside its prefix and inside its body
      stream.write(two);
      setTimeout(() => stream.write(three.subarray(0, 3)), 20);
      setTimeout(() => stream.write(three.subarray(3, 9)), 40);
      setTimeout(() => stream.end(three.subarray(9)), 60);
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    });
    const { batches, error } = await read(socket);
    expect(error).toBeUndefined();
    expect(batches.flat()).toEqual(['a/2/uid-a', 'b/2/uid-b', 'c/3/uid-c']);
    expect(batches[0]).toEqual(['a/2/uid-a', 'b/2/uid-b']);
    expect(asked[0]).toMatchObject({ ':method': 'POST', ':path': '/runtime.v1.RuntimeService/GetContainerEvents', 'content-type': 'application/grpc', te: 'trailers' });
  });

  it("ends with the runtime's status code and its percent-decoded message", async () => {
    const { socket } = await serve((stream) => {
      stream.respond(OK_HEADERS, { waitForTrailers: true });
      stream.end(frame('a'));
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': String(GrpcStatus.UNAVAILABLE), 'grpc-message': 'shutting%20down%3A%20bye' }));
    });
    const { batches, error } = await read(socket);
    expect(batches.flat()).toEqual(['a/2/uid-a']);
    expect(error).toBeInstanceOf(CriError);
    expect(error).toMatchObject({ method: 'GetContainerEvents', code: GrpcStatus.UNAVAILABLE, details: 'shutting down: bye' });
  });

  it('reads a status sent alone in the headers (Unimplemented from a runtime without events)', async () => {
    const { socket } = await serve((stream) => {
      stream.respond({ ...OK_HEADERS, 'grpc-status': String(GrpcStatus.UNIMPLEMENTED), 'grpc-message': 'unknown method' }, { endStream: true });
    });
    const { error } = await read(socket);
    expect(error).toMatchObject({ code: GrpcStatus.UNIMPLEMENTED, details: 'unknown method' });
  });

  it('maps an HTTP error status to its gRPC code (404: Unimplemented)', async () => {
    const { socket } = await serve((stream) => {
      stream.respond({ ':status': 404 }, { endStream: true });
    });
    const { error } = await read(socket);
    expect(error).toMatchObject({ code: GrpcStatus.UNIMPLEMENTED });
  });

  it('fails Unavailable when the runtime goes without a status, or is not there', async () => {
    const { socket } = await serve((stream) => {
      stream.respond(OK_HEADERS);
      stream.write(frame('a'));
      setTimeout(() => stream.session?.destroy(), 20);
    });
    const gone = await read(socket);
    expect(gone.batches.flat()).toEqual(['a/2/uid-a']);
    expect(gone.error).toMatchObject({ code: GrpcStatus.UNAVAILABLE });
    const nobody = await read(path.join(dir(), 'nothing.sock'));
    expect(nobody.error).toMatchObject({ code: GrpcStatus.UNAVAILABLE });
    expect(nobody.error?.details).toContain('ENOENT');
  });

  it('refuses a compressed message, one over the size limit and one it cannot decode, ending the stream after the events before it', async () => {
    // each server ends its stream with an OK status after the bad message: only a refusal fails it
    const endOk = (stream: http2.ServerHttp2Stream, bytes: Buffer): void => {
      stream.respond(OK_HEADERS, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(bytes);
    };
    const compressed = await serve((stream) => endOk(stream, Buffer.concat([frame('a'), frame('b', 2, 1), frame('c')])));
    const first = await read(compressed.socket);
    // what came before the refused message is handed on; nothing after it
    expect(first.batches.flat()).toEqual(['a/2/uid-a']);
    expect(first.error).toMatchObject({ code: GrpcStatus.INTERNAL });
    expect(first.error?.details).toContain('compressed');

    const large = Buffer.concat([Buffer.from([0, 0, 0, 0x13, 0x88]), Buffer.alloc(5000)]);
    expect((await read((await serve((stream) => endOk(stream, large))).socket)).error).toMatchObject({ code: GrpcStatus.RESOURCE_EXHAUSTED });

    // field 1, length-delimited, 100 bytes long, but only 2 bytes follow
    const garbage = Buffer.from([0, 0, 0, 0, 4, 0x0a, 100, 1, 2]);
    expect((await read((await serve((stream) => endOk(stream, garbage))).socket)).error).toMatchObject({ code: GrpcStatus.INTERNAL });

    // a stream that ends inside a message lost it
    const cut = frame('a').subarray(0, 8);
    const ended = await read((await serve((stream) => endOk(stream, cut))).socket);
    expect(ended.error).toMatchObject({ code: GrpcStatus.INTERNAL });
    expect(ended.error?.details).toContain('inside a message');
  });

  it('ends quietly on abort, delivers nothing after it and closes its connection', async () => {
    let closed = false;
    const { socket } = await serve((stream) => {
      stream.respond(OK_HEADERS);
      stream.write(frame('a'));
      stream.session?.on('close', () => {
        closed = true;
      });
      const timer = setInterval(() => {
        if (!stream.destroyed) stream.write(frame('late'));
      }, 10);
      stream.on('close', () => clearInterval(timer));
    });
    const ac = new AbortController();
    const batches: string[][] = [];
    const ended = await new Promise<CriError | undefined>((resolve) => {
      openContainerEventStream({
        socketPath: socket,
        decode: decodeContainerEventSummary,
        signal: ac.signal,
        onEvents: (events) => {
          batches.push(events.map((e) => e.containerId));
          ac.abort();
        },
        onEnd: resolve,
      });
    });
    expect(ended).toBeUndefined();
    const seen = batches.length;
    await new Promise((r) => setTimeout(r, 60));
    expect(batches.length).toBe(seen);
    expect(batches.flat()[0]).toBe('a');
    await new Promise((r) => setTimeout(r, 50));
    expect(closed).toBe(true);
  });
});
