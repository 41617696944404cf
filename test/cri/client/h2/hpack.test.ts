/**
 * HPACK as the CRI client decodes it (src/cri/client/h2/hpack.ts, huffman.ts): the RFC 7541 examples
 * (Appendix C: literals, Huffman strings, the dynamic table's growth), malformed strings refused,
 * and against the real thing — a node:http2 server (nghttp2's encoder, which Huffman-encodes and
 * indexes as containerd's Go server does) answering with many headers and trailers: random values,
 * long ones (CONTINUATION), repeated ones that get indexed, a small table that evicts (our
 * SETTINGS_HEADER_TABLE_SIZE, which the server's encoder must answer with a size update).
 */
import http2 from 'node:http2';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { huffmanCodes, huffmanDecode } from '../../../../src/cri/client/h2/huffman.js';
import { HpackDecoder, encodeHeaders, type Field } from '../../../../src/cri/client/h2/hpack.js';
import { connect, type H2Session, type IncomingHeaders } from '../../../../src/cri/client/h2/session.js';
import { useTempDir } from '../../support.js';

const dir = useTempDir('podctl-hpack-');
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const hex = (text: string): Buffer => Buffer.from(text.replace(/\s+/g, ''), 'hex');

describe('Huffman strings (RFC 7541 §5.2, Appendix B)', () => {
  it('decodes the RFC examples', () => {
    expect(huffmanDecode(hex('f1e3 c2e5 f23a 6ba0 ab90 f4ff')).toString()).toBe('www.example.com');
    expect(huffmanDecode(hex('a8eb 1064 9cbf')).toString()).toBe('no-cache');
    expect(huffmanDecode(hex('25a8 49e9 5ba9 7d7f')).toString()).toBe('custom-key');
    expect(huffmanDecode(hex('25a8 49e9 5bb8 e8b4 bf')).toString()).toBe('custom-value');
    expect(huffmanDecode(hex('6402')).toString()).toBe('302');
    expect(huffmanDecode(hex('aec3 771a 4b')).toString()).toBe('private');
  });

  it('derives the codes of Appendix B from their lengths (a sample of the table)', () => {
    const codes = huffmanCodes();
    expect(codes).toHaveLength(257);
    expect(codes[0]).toEqual([0x1ff8, 13]);
    expect(codes[9]).toEqual([0xffffea, 24]);
    expect(codes[0x30]).toEqual([0x0, 5]);
    expect(codes[0x61]).toEqual([0x3, 5]);
    expect(codes[0x7e]).toEqual([0x1ffd, 13]);
    expect(codes[0xff]).toEqual([0x3ffffee, 26]);
    expect(codes[256]).toEqual([0x3fffffff, 30]);
  });

  it('decodes every byte value, each code read back whole', () => {
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    expect(huffmanDecode(huffmanEncode(all)).equals(all)).toBe(true);
  });

  it('refuses bad padding, padding of 8 bits or more, and EOS', () => {
    // 'a' is 00011: padded with ones it reads, with zeros it is refused
    expect(huffmanDecode(Buffer.of(0x1f)).toString()).toBe('a');
    expect(() => huffmanDecode(Buffer.of(0x18))).toThrow(/padding/);
    expect(() => huffmanDecode(Buffer.of(0x1f, 0xff))).toThrow(/padding/);
    expect(() => huffmanDecode(Buffer.of(0xff, 0xff, 0xff, 0xff))).toThrow(/EOS/);
  });
});

/** Huffman-encodes `bytes` with the derived codes (test helper: the client never encodes). */
function huffmanEncode(bytes: Uint8Array): Buffer {
  const codes = huffmanCodes();
  let bits = '';
  for (const byte of bytes) bits += codes[byte]![0].toString(2).padStart(codes[byte]![1], '0');
  bits += '1'.repeat((8 - (bits.length % 8)) % 8);
  return Buffer.from(bits.match(/.{8}/g)!.map((b) => parseInt(b, 2)));
}

describe('header blocks (RFC 7541 Appendix C)', () => {
  it('decodes the requests of C.4 in order on one table, Huffman strings and indexed entries', () => {
    const decoder = new HpackDecoder();
    expect(decoder.decode(hex('8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff'))).toEqual([
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/'],
      [':authority', 'www.example.com'],
    ]);
    expect(decoder.tableBytes).toBe(57);
    expect(decoder.decode(hex('8286 84be 5886 a8eb 1064 9cbf'))).toEqual([
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/'],
      [':authority', 'www.example.com'],
      ['cache-control', 'no-cache'],
    ]);
    expect(decoder.tableBytes).toBe(110);
    expect(decoder.decode(hex('8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf'))).toEqual([
      [':method', 'GET'],
      [':scheme', 'https'],
      [':path', '/index.html'],
      [':authority', 'www.example.com'],
      ['custom-key', 'custom-value'],
    ]);
    expect(decoder.tableBytes).toBe(164);
  });

  it('evicts the oldest entries past the table size, and refuses a size update over our limit or an index past the table', () => {
    const decoder = new HpackDecoder();
    // a size update to 100 bytes, then two literals with indexing (57 and 53 bytes): the first is evicted
    expect(decoder.decode(Buffer.concat([Buffer.of(0x3f, 0x45), hex('418c f1e3 c2e5 f23a 6ba0 ab90 f4ff'), hex('5886 a8eb 1064 9cbf')]))).toHaveLength(2);
    expect(decoder.tableBytes).toBe(53);
    expect(decoder.decode(Buffer.of(0xbe))).toEqual([['cache-control', 'no-cache']]);
    expect(() => decoder.decode(Buffer.of(0xbf))).toThrow(/out of range/);
    expect(() => decoder.decode(Buffer.of(0x3f, 0xe2, 0x1f))).toThrow(/over 4096/);
    expect(() => decoder.decode(Buffer.of(0x80))).toThrow(/index 0/);
  });
});

/** A seeded generator, so a failure is repeatable. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** A header value of `length` printable characters (no space at either end). */
function value(next: () => number, length: number): string {
  let out = '';
  for (let i = 0; i < length; i += 1) {
    const edge = i === 0 || i === length - 1;
    out += String.fromCharCode(edge ? 0x21 + Math.floor(next() * 94) : 0x20 + Math.floor(next() * 95));
  }
  return out;
}

/** The headers and trailers of response `n`: some repeated on every response (indexed), some random, some long. */
function headersOf(n: number): { headers: Record<string, string>; trailers: Record<string, string> } {
  const next = random(n + 1);
  const headers: Record<string, string> = { 'content-type': 'application/grpc', 'x-repeated': 'the same value on every response', 'x-runtime': 'containerd' };
  for (let i = 0; i < 12; i += 1) headers[`x-random-${i}`] = value(next, 1 + Math.floor(next() * 60));
  headers['x-lower'] = 'abcdefghijklmnopqrstuvwxyz0123456789-_.'.repeat(3);
  if (n % 5 === 0) headers['x-long'] = value(next, 9000) + 'abc'.repeat(3000);
  const trailers: Record<string, string> = { 'grpc-status': '0', 'grpc-message': `done%20${n}`, 'x-trailer-repeated': 'trailer value', 'x-trailer-random': value(next, 40) };
  return { headers, trailers };
}

/** A node:http2 server answering request `n` (its path /n) with headersOf(n), then one byte, then the trailers. */
async function answeringServer(name: string): Promise<string> {
  const socketPath = path.join(dir(), `${name}.sock`);
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => sessions.add(s));
  server.on('stream', (stream, asked) => {
    const { headers, trailers } = headersOf(Number(String(asked[':path']).slice(1)));
    stream.respond({ ':status': 200, ...headers }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    stream.end('x');
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  cleanups.push(() => {
    for (const s of sessions) s.destroy();
    server.close();
  });
  return socketPath;
}

/** Asks for /n on `session`: the response's headers and trailers. */
function ask(session: H2Session, n: number): Promise<{ headers: IncomingHeaders; trailers: IncomingHeaders }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': 'POST', ':path': `/${n}` }, { endStream: true });
    let headers: IncomingHeaders = {};
    let trailers: IncomingHeaders = {};
    stream.on('response', (h: IncomingHeaders) => (headers = h));
    stream.on('trailers', (t: IncomingHeaders) => (trailers = t));
    stream.on('data', () => undefined);
    stream.on('close', () => (stream.rstCode === 0 ? resolve({ headers, trailers }) : reject(new Error(`reset ${stream.rstCode}`))));
  });
}

describe('header blocks from a node:http2 server', { timeout: 60_000 }, () => {
  it.each([
    ['the default table', undefined],
    ['a 256-byte table (size update, constant eviction)', 256],
  ])('decodes every header and trailer exactly, with %s', async (_label, headerTableSize) => {
    const socketPath = await answeringServer(`answers-${headerTableSize ?? 'default'}`);
    const session = connect(socketPath, headerTableSize === undefined ? {} : { headerTableSize });
    cleanups.push(() => session.destroy());
    for (let round = 0; round < 3; round += 1) {
      const ns = Array.from({ length: 15 }, (_, i) => round * 15 + i);
      const answers = await Promise.all(ns.map((n) => ask(session, n)));
      answers.forEach(({ headers, trailers }, i) => {
        const expected = headersOf(ns[i]!);
        expect(headers).toMatchObject({ ':status': '200', ...expected.headers });
        expect(trailers).toEqual(expected.trailers);
      });
    }
  });
});

describe('the request encoder', () => {
  it('writes each field as a literal without indexing, its name by static index when it has one (RFC 7541 §6.2.2)', () => {
    // C.2.2's field, its name ":path" (static index 4) by index
    expect(encodeHeaders([[':path', '/sample/path']])).toEqual(hex('040c 2f73 616d 706c 652f 7061 7468'));
    // a name with no static entry: index 0 and the name as a literal (C.2.2's bytes, not indexed)
    expect(encodeHeaders([['custom-key', 'custom-header']])).toEqual(hex('000a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572'));
    // static index 58 (user-agent) past the 4-bit prefix: 15, then 43
    expect(encodeHeaders([['user-agent', 'x']])).toEqual(hex('0f2b 0178'));
    expect(encodeHeaders([])).toEqual(Buffer.alloc(0));
    // latin1: a character past 0xff is written as its low octet, as Buffer.from(text, 'latin1') does
    expect(encodeHeaders([['x', 'a\u20ac']])).toEqual(Buffer.concat([hex('0001 7802 61'), Buffer.from('\u20ac', 'latin1')]));
  });

  it('encodes what a request sends, long values and latin1 text included, and decodes back to the same fields', () => {
    const fields: Field[] = [
      [':method', 'POST'],
      [':scheme', 'http'],
      [':path', '/runtime.v1.RuntimeService/ListContainers'],
      [':authority', 'localhost'],
      ['content-type', 'application/grpc'],
      ['te', 'trailers'],
      ['grpc-timeout', '9999m'],
      ['user-agent', 'podctl'],
      ['x-long', 'v'.repeat(127)],
      ['x-longer', 'w'.repeat(20_000)],
      ['x-latin1', 'caf\u00e9 \u00ff'],
      ['', ''],
    ];
    const block = encodeHeaders(fields);
    expect(new HpackDecoder().decode(block)).toEqual(fields);
    // every length and index in its shortest form: the block's size is the sum of its parts
    const integer = (value: number, prefix: number) => (value < 2 ** prefix - 1 ? 1 : 1 + Math.max(1, Math.ceil(Math.log2(value - (2 ** prefix - 1) + 1) / 7)));
    const statics = new Map([
      [':method', 2],
      [':scheme', 6],
      [':path', 4],
      [':authority', 1],
      ['content-type', 31],
      ['user-agent', 58],
    ]);
    let size = 0;
    for (const [name, value] of fields) {
      const index = statics.get(name);
      size += index === undefined ? 1 + integer(name.length, 7) + name.length : integer(index, 4);
      size += integer(value.length, 7) + value.length;
    }
    expect(block.length).toBe(size);
  });
});
