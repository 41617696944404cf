/**
 * The HTTP/2 client connection (src/cri/client/h2/session.ts) against a node:http2 server and, for
 * what no well-behaved server sends, a raw socket writing frames by hand:
 * - a 16 MiB response arrives whole in many padded DATA frames across our windows (the defaults, and
 *   the channel's 4 MiB / 32 MiB); a request larger than the server's windows waits for them,
 *   including a window that opens only by an INITIAL_WINDOW_SIZE change;
 * - GOAWAY: the streams above its last stream id are refused, the others finish, no new stream;
 * - RST_STREAM codes reach the stream, and through the CRI client their gRPC codes;
 * - a server closing mid-stream, a PING answered with its payload;
 * - HEADERS with PADDED and PRIORITY, CONTINUATION, padded DATA from a raw socket; a frame over
 *   our size limit and a header block that cannot be decoded fail the connection (GOAWAY with the
 *   error's code) and every stream on it.
 */
import { createHash, randomBytes } from 'node:crypto';
import http2 from 'node:http2';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connectCri } from '../../../../src/cri/client/client.js';
import { CriError, GrpcStatus } from '../../../../src/cri/client/errors.js';
import { connect, type H2Session, type H2Stream, type IncomingHeaders } from '../../../../src/cri/client/h2/session.js';
import { useTempDir } from '../../support.js';

const dir = useTempDir('podctl-h2-');
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});
let seq = 0;

/** A node:http2 server on a unix socket; `onStream` answers each request. */
async function server(onStream: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, session: http2.ServerHttp2Session) => void, options: http2.ServerOptions = {}): Promise<string> {
  const socketPath = path.join(dir(), `s-${(seq += 1)}.sock`);
  const srv = http2.createServer(options);
  const sessions = new Set<http2.ServerHttp2Session>();
  srv.on('session', (s) => {
    sessions.add(s);
    s.on('error', () => undefined);
  });
  srv.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    onStream(stream, headers, stream.session as http2.ServerHttp2Session);
  });
  await new Promise<void>((resolve) => srv.listen(socketPath, resolve));
  cleanups.push(() => {
    for (const s of sessions) s.destroy();
    srv.close();
  });
  return socketPath;
}

function open(socketPath: string, options: Parameters<typeof connect>[1] = {}): H2Session {
  const session = connect(socketPath, options);
  session.on('error', () => undefined);
  cleanups.push(() => session.destroy());
  return session;
}

interface Outcome {
  headers?: IncomingHeaders;
  trailers?: IncomingHeaders;
  data: Buffer;
  rstCode: number | undefined;
  error?: Error;
}

/** Reads a stream to its close. */
function read(stream: H2Stream): Promise<Outcome> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const outcome: Outcome = { data: Buffer.alloc(0), rstCode: undefined };
    stream.on('response', (h: IncomingHeaders) => (outcome.headers = h));
    stream.on('trailers', (t: IncomingHeaders) => (outcome.trailers = t));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', (error: Error) => (outcome.error = error));
    stream.on('close', () => resolve({ ...outcome, data: Buffer.concat(chunks), rstCode: stream.rstCode }));
  });
}

const post = (p = '/x'): Record<string, string> => ({ ':method': 'POST', ':path': p });
const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

describe('HTTP/2 client connection against node:http2', { timeout: 60_000 }, () => {
  const body = randomBytes(16 * 1024 * 1024);

  it.each([
    ['the default windows', {}, 0],
    ['4 MiB streams and a 32 MiB connection', { initialWindowSize: 4 * 1024 * 1024 }, 32 * 1024 * 1024],
  ])('receives a 16 MiB response whole in padded DATA frames, with %s', async (_label, options, connectionWindow) => {
    const socketPath = await server(
      (stream) => {
        stream.respond({ ':status': 200 }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'x-sha': sha(body) }));
        stream.end(body);
      },
      { paddingStrategy: http2.constants.PADDING_STRATEGY_MAX },
    );
    const session = open(socketPath, options);
    if (connectionWindow > 0) session.setLocalWindowSize(connectionWindow);
    const outcome = await read(session.request(post(), { endStream: true }));
    expect(outcome.rstCode).toBe(0);
    expect(outcome.headers?.[':status']).toBe('200');
    expect(outcome.data.length).toBe(body.length);
    expect(sha(outcome.data)).toBe(outcome.trailers?.['x-sha']);
  });

  it('sends a request larger than the server windows as they open, one opened only by an INITIAL_WINDOW_SIZE change', async () => {
    const request = randomBytes(3 * 1024 * 1024 + 17);
    const socketPath = await server(
      (stream, _headers, session) => {
        // nothing can be sent on the stream until the server raises its initial window
        session.settings({ initialWindowSize: 20_000 });
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          stream.respond({ ':status': 200, 'x-sha': sha(Buffer.concat(chunks)) });
          stream.end();
        });
      },
      { settings: { initialWindowSize: 0 } },
    );
    const session = open(socketPath);
    const stream = session.request(post(), { endStream: false });
    const outcome = read(stream);
    stream.end(request);
    const { headers, rstCode } = await outcome;
    expect(rstCode).toBe(0);
    expect(headers?.['x-sha']).toBe(sha(request));
  });

  it('honours GOAWAY: streams above its last stream id are refused, those below finish, no new stream', async () => {
    const held: http2.ServerHttp2Stream[] = [];
    const socketPath = await server((stream, _headers, session) => {
      held.push(stream);
      if (held.length < 2) return;
      session.goaway(http2.constants.NGHTTP2_NO_ERROR, held[0]!.id);
      held[0]!.respond({ ':status': 200, 'x-first': 'yes' });
      held[0]!.end('first');
    });
    const session = open(socketPath);
    const goaways: number[] = [];
    session.on('goaway', (_code: number, last: number) => goaways.push(last));
    const closed = new Promise((resolve) => session.once('close', resolve));
    const [first, second] = await Promise.all([read(session.request(post('/1'), { endStream: true })), read(session.request(post('/2'), { endStream: true }))]);
    expect(goaways).toEqual([1]);
    expect(first).toMatchObject({ rstCode: 0, headers: expect.objectContaining({ 'x-first': 'yes' }) });
    expect(first.data.toString()).toBe('first');
    expect(second.rstCode).toBe(http2.constants.NGHTTP2_REFUSED_STREAM);
    expect(() => session.request(post('/3'))).toThrow(/GOAWAY|closed/);
    await closed;
    expect(session.destroyed).toBe(true);
  });

  it('hands on a reset stream its code, and the CRI client the code gRPC gives it', async () => {
    // the code is the path's number; a CRI method's path is refused
    const socketPath = await server((stream, headers) => stream.close(Number(String(headers[':path']).slice(1)) || http2.constants.NGHTTP2_REFUSED_STREAM));
    const session = open(socketPath);
    const codes = [http2.constants.NGHTTP2_REFUSED_STREAM, http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, http2.constants.NGHTTP2_INTERNAL_ERROR];
    const outcomes = await Promise.all(codes.map((code) => read(session.request(post(`/${code}`), { endStream: true }))));
    expect(outcomes.map((o) => o.rstCode)).toEqual(codes);
    expect(session.destroyed).toBe(false);
    const client = await connectCri({ endpoint: `unix://${socketPath}`, timeoutMs: 5000 });
    cleanups.push(() => client.close());
    // the server resets Version with the code its path names: REFUSED_STREAM is UNAVAILABLE (retried, then given up)
    const refused = await client.version().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CriError);
    expect((refused as CriError).code).toBe(GrpcStatus.UNAVAILABLE);
  });

  it('ends the streams of a server that closes mid-stream, and the session', async () => {
    const socketPath = await server((stream, _headers, session) => {
      stream.respond({ ':status': 200 });
      stream.write(Buffer.alloc(100_000, 1), () => setTimeout(() => session.destroy(), 20));
    });
    const session = open(socketPath);
    const closed = new Promise((resolve) => session.once('close', resolve));
    const outcome = await read(session.request(post(), { endStream: true }));
    await closed;
    expect(session.destroyed).toBe(true);
    expect(outcome.headers?.[':status']).toBe('200');
    expect(outcome.data.length).toBeGreaterThan(0);
    expect(outcome.data.length).toBeLessThanOrEqual(100_000);
    expect(outcome.trailers).toBeUndefined();
    expect(() => session.request(post())).toThrow(/closed/);
  });

  it('answers a PING with its payload', async () => {
    let ping: Promise<Buffer> | undefined;
    const socketPath = await server((stream, _headers, session) => {
      ping = new Promise((resolve, reject) => session.ping(Buffer.from('podctl!!'), (error, _ms, payload) => (error ? reject(error) : resolve(payload))));
      stream.respond({ ':status': 200 });
      stream.end();
    });
    const session = open(socketPath);
    await read(session.request(post(), { endStream: true }));
    expect((await ping!).toString()).toBe('podctl!!');
  });
});

/** A frame as a peer writes it (test-side, independent of the client's writer). */
function frameOf(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

/** A literal header field without indexing, new name, no Huffman (names and values under 127 bytes). */
const literal = (name: string, value: string): Buffer => Buffer.concat([Buffer.of(0, name.length), Buffer.from(name), Buffer.of(value.length), Buffer.from(value)]);

/** A raw server: after the client's preface and first stream's HEADERS, `answer(streamId)` is written. Records the frames the client sent. */
async function rawServer(answer: (streamId: number) => Buffer): Promise<{ socketPath: string; frames: Array<{ type: number; flags: number; streamId: number; payload: Buffer }> }> {
  const socketPath = path.join(dir(), `raw-${(seq += 1)}.sock`);
  const frames: Array<{ type: number; flags: number; streamId: number; payload: Buffer }> = [];
  const srv = net.createServer((socket) => {
    let bytes = Buffer.alloc(0);
    let answered = false;
    socket.on('error', () => undefined);
    socket.write(frameOf(4, 0, 0, Buffer.alloc(0)));
    socket.on('data', (chunk: Buffer) => {
      bytes = Buffer.concat([bytes, chunk]);
      if (bytes.subarray(0, 24).toString('latin1').startsWith('PRI')) bytes = bytes.subarray(24);
      while (bytes.length >= 9 && bytes.length >= 9 + bytes.readUIntBE(0, 3)) {
        const length = bytes.readUIntBE(0, 3);
        const frame = { type: bytes[3]!, flags: bytes[4]!, streamId: bytes.readUInt32BE(5), payload: bytes.subarray(9, 9 + length) };
        frames.push(frame);
        bytes = bytes.subarray(9 + length);
        if (frame.type === 1 && !answered) {
          answered = true;
          socket.write(answer(frame.streamId));
        }
      }
    });
  });
  await new Promise<void>((resolve) => srv.listen(socketPath, resolve));
  cleanups.push(() => srv.close());
  return { socketPath, frames };
}

describe('HTTP/2 client connection against frames written by hand', { timeout: 30_000 }, () => {
  it('reads HEADERS with PADDED and PRIORITY continued in CONTINUATION, padded DATA, and trailers', async () => {
    const { socketPath } = await rawServer((id) => {
      const block = Buffer.concat([Buffer.of(0x88), literal('x-one', 'first'), literal('x-two', 'second')]);
      const pad = 7;
      const headersPayload = Buffer.concat([Buffer.of(pad), Buffer.of(0, 0, 0, 0, 16), block.subarray(0, 5), Buffer.alloc(pad)]);
      const data = Buffer.concat([Buffer.of(3), Buffer.from('hello'), Buffer.alloc(3)]);
      return Buffer.concat([
        frameOf(1, 0x08 | 0x20, id, headersPayload),
        frameOf(9, 0, id, block.subarray(5, 12)),
        frameOf(9, 0x04, id, block.subarray(12)),
        frameOf(0, 0x08, id, data),
        frameOf(1, 0x04 | 0x01, id, literal('grpc-status', '0')),
      ]);
    });
    const session = open(socketPath);
    const outcome = await read(session.request(post(), { endStream: true }));
    expect(outcome).toMatchObject({ rstCode: 0, headers: { ':status': '200', 'x-one': 'first', 'x-two': 'second' }, trailers: { 'grpc-status': '0' } });
    expect(outcome.data.toString()).toBe('hello');
  });

  it.each([
    ['a frame over 16 KiB', (id: number) => frameOf(0, 0, id, Buffer.alloc(20_000)), 6, /over 16384/],
    ['a header block that cannot be decoded', (id: number) => frameOf(1, 0x04, id, Buffer.of(0x80)), 9, /cannot be decoded/],
    ['a Huffman string holding EOS', (id: number) => frameOf(1, 0x04, id, Buffer.of(0x00, 0x84, 0xff, 0xff, 0xff, 0xff)), 9, /EOS/],
  ])('fails the connection and its streams on %s, telling the server why (GOAWAY)', async (_label, answer, goawayCode, message) => {
    const { socketPath, frames } = await rawServer(answer);
    const session = open(socketPath);
    const errors: Error[] = [];
    session.on('error', (error: Error) => errors.push(error));
    const closed = new Promise((resolve) => session.once('close', resolve));
    const outcome = await read(session.request(post(), { endStream: true }));
    await closed;
    expect(session.destroyed).toBe(true);
    expect(outcome.headers).toBeUndefined();
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(message)]);
    await expect.poll(() => frames.find((f) => f.type === 7)?.payload.readUInt32BE(4)).toBe(goawayCode);
  });

  it('ends a CRI call UNAVAILABLE, naming the cause, when the runtime sends a header block that cannot be decoded', async () => {
    const { socketPath } = await rawServer((id) => frameOf(1, 0x04, id, Buffer.of(0xff, 0x7f)));
    const client = await connectCri({ endpoint: `unix://${socketPath}`, timeoutMs: 5000 });
    cleanups.push(() => client.close());
    const error = await client.version().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CriError);
    expect((error as CriError).code).toBe(GrpcStatus.UNAVAILABLE);
    expect((error as CriError).message).toMatch(/cannot be decoded/);
  });
});
