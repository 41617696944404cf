/**
 * src/lib/sha256.ts: SHA-256 through a WebAssembly compression function, the module's bytes kept in
 * the source. They are written here, by a small emitter of the function (below), and checked to be
 * this emitter's output; the digests are checked against node:crypto's.
 */
import { hash, randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { SHA256_MODULE, sha256Hex } from '../../src/lib/sha256.js';

/** The first 32 bits of the fractional parts of the cube roots of the first 64 primes. */
const K = [
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/** The module's memory: the state (8 words), the round constants, the message schedule, then the message (MESSAGE_AT). */
const STATE_AT = 0;
const K_AT = 32;
const W_AT = K_AT + 256;

/** The WebAssembly opcodes used below (WebAssembly core specification, 5.4). */
const OP = {
  block: 0x02,
  loop: 0x03,
  br: 0x0c,
  brIf: 0x0d,
  end: 0x0b,
  get: 0x20,
  set: 0x21,
  tee: 0x22,
  load: 0x28,
  store: 0x36,
  const: 0x41,
  ltU: 0x49,
  geU: 0x4f,
  add: 0x6a,
  and: 0x71,
  or: 0x72,
  xor: 0x73,
  shrU: 0x76,
  rotl: 0x77,
  rotr: 0x78,
} as const;

/** Unsigned LEB128 (the values here are below 2^14). */
function uleb(n: number): number[] {
  return n < 0x80 ? [n] : [(n & 0x7f) | 0x80, n >>> 7];
}

/** Signed LEB128 of a 32-bit value. */
function sleb(value: number): number[] {
  let n = value | 0;
  const out: number[] = [];
  for (;;) {
    const byte = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (byte & 0x40) === 0) || (n === -1 && (byte & 0x40) !== 0)) return [...out, byte];
    out.push(byte | 0x80);
  }
}

// compress's locals: its two parameters, the working variables a..h, the schedule's index (× 4),
// T1, T2 and a scratch word
const [FROM, TO, A, B, C, D, E, F, G, H, I4, T1, T2, X] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13] as const;
const LOCALS = 12;

/** Emits WebAssembly instructions into one array. */
class Emitter {
  readonly code: number[] = [];

  op(...bytes: number[]): this {
    for (const byte of bytes) this.code.push(byte);
    return this;
  }

  get(local: number): this {
    return this.op(OP.get, local);
  }

  set(local: number): this {
    return this.op(OP.set, local);
  }

  i32(value: number): this {
    return this.op(OP.const, ...sleb(value));
  }

  /** Loads the word at the address on the stack plus `offset`. */
  load(offset: number): this {
    return this.op(OP.load, 2, ...uleb(offset));
  }

  /** rotr(x, a) ^ rotr(x, b) ^ (c < 0 ? rotr(x, -c) : x >>> c), of the local x. */
  sigma(x: number, a: number, b: number, c: number): this {
    this.get(x).i32(a).op(OP.rotr).get(x).i32(b).op(OP.rotr, OP.xor).get(x);
    return c < 0 ? this.i32(-c).op(OP.rotr, OP.xor) : this.i32(c).op(OP.shrU, OP.xor);
  }

  /** σ(x) of the schedule's word at I4 + W_AT + offset (offset ≥ -W_AT). */
  sigmaOfWord(offset: number, b: number, c: number, d: number): this {
    return this.get(I4)
      .load(W_AT + offset)
      .set(X)
      .sigma(X, b, c, d);
  }

  /** A loop of `body` over I4 = from, from + 4, … below `to`. */
  loopI4(from: number, to: number, body: () => void): this {
    this.i32(from).set(I4).op(OP.loop, 0x40);
    body();
    return this.get(I4).i32(4).op(OP.add, OP.tee, I4).i32(to).op(OP.ltU, OP.brIf, 0, OP.end);
  }
}

/** The body of `compress(from, to)`: every 64-byte block of memory[from, to) into the state. */
function compressBody(): number[] {
  const e = new Emitter();
  e.op(OP.block, 0x40, OP.loop, 0x40).get(FROM).get(TO).op(OP.geU, OP.brIf, 1);
  // W[0..15]: the block's big-endian words ((rotr(x, 8) & 0xff00ff00) | (rotl(x, 8) & 0x00ff00ff))
  e.loopI4(0, 64, () => {
    e.get(I4).get(FROM).get(I4).op(OP.add).load(0).set(X);
    e.get(X)
      .i32(8)
      .op(OP.rotr)
      .i32(0xff00ff00)
      .op(OP.and)
      .get(X)
      .i32(8)
      .op(OP.rotl)
      .i32(0x00ff00ff)
      .op(OP.and, OP.or, OP.store, 2, ...uleb(W_AT));
  });
  // W[16..63] = σ1(W[i-2]) + W[i-7] + σ0(W[i-15]) + W[i-16]
  e.loopI4(64, 256, () => {
    e.get(I4)
      .sigmaOfWord(-8, 17, 19, 10)
      .get(I4)
      .load(W_AT - 28)
      .op(OP.add)
      .sigmaOfWord(-60, 7, 18, 3)
      .op(OP.add)
      .get(I4)
      .load(W_AT - 64)
      .op(OP.add);
    e.op(OP.store, 2, ...uleb(W_AT));
  });
  for (let j = 0; j < 8; j++)
    e.i32(0)
      .load(STATE_AT + j * 4)
      .set(A + j);
  e.loopI4(0, 256, () => {
    // T1 = h + Σ1(e) + Ch(e, f, g) + K[i] + W[i]; T2 = Σ0(a) + Maj(a, b, c)
    e.get(H).sigma(E, 6, 11, -25).op(OP.add).get(G).get(E).get(F).get(G).op(OP.xor, OP.and, OP.xor, OP.add);
    e.get(I4).load(K_AT).op(OP.add).get(I4).load(W_AT).op(OP.add).set(T1);
    e.sigma(A, 2, 13, -22).get(A).get(B).op(OP.and).get(C).get(A).get(B).op(OP.or, OP.and, OP.or, OP.add).set(T2);
    e.get(G).set(H).get(F).set(G).get(E).set(F).get(D).get(T1).op(OP.add).set(E);
    e.get(C).set(D).get(B).set(C).get(A).set(B).get(T1).get(T2).op(OP.add).set(A);
  });
  for (let j = 0; j < 8; j++)
    e.i32(0)
      .i32(0)
      .load(STATE_AT + j * 4)
      .get(A + j)
      .op(OP.add, OP.store, 2, ...uleb(STATE_AT + j * 4));
  e.get(FROM).i32(64).op(OP.add).set(FROM).op(OP.br, 0, OP.end, OP.end, OP.end);
  return e.code;
}

/** A section: its id, its size, its content. */
function section(id: number, content: number[]): number[] {
  return [id, ...uleb(content.length), ...content];
}

const name = (text: string): number[] => [...uleb(text.length), ...Array.from(text, (ch) => ch.charCodeAt(0))];

/** The module: `compress(from: i32, to: i32)` and its memory (K at K_AT), both exported. */
function moduleBytes(): Uint8Array {
  const body = [1, LOCALS, 0x7f, ...compressBody()]; // one run of i32 locals
  const k = new Uint8Array(256);
  for (const [i, word] of K.entries()) new DataView(k.buffer).setUint32(i * 4, word, true);
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, [1, 0x60, 2, 0x7f, 0x7f, 0]), // type: (i32, i32) -> ()
    ...section(3, [1, 0]), // function 0 has type 0
    ...section(5, [1, 0x00, 1]), // memory: at least one page
    ...section(7, [2, ...name('compress'), 0x00, 0, ...name('memory'), 0x02, 0]),
    ...section(10, [1, ...uleb(body.length), ...body]),
    ...section(11, [1, 0x00, OP.const, ...sleb(K_AT), OP.end, ...uleb(k.length), ...k]), // data: K at K_AT
  ]);
}

const digest = (data: Uint8Array | string): string => hash('sha256', data, 'hex');

describe('sha256Hex', () => {
  it("the module in the source is the emitter's output (a change of either shows here)", () => {
    expect(SHA256_MODULE).toBe(Buffer.from(moduleBytes()).toString('base64'));
  });

  it("gives FIPS 180-4's digests", () => {
    expect(sha256Hex(Buffer.from(''))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex(Buffer.from('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex(Buffer.from('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq'))).toBe('248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1');
    expect(sha256Hex(Buffer.alloc(1_000_000, 'a'))).toBe('cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0');
  });

  it("equals node:crypto's digest for every length around the block and padding boundaries, and past a page of memory", () => {
    for (let length = 0; length <= 200; length++) {
      const data = randomBytes(length);
      expect(sha256Hex(data), `length ${length}`).toBe(digest(data));
    }
    for (const length of [3542, 65_536 - 600, 65_536, 200_001]) {
      const data = randomBytes(length);
      expect(sha256Hex(data), `length ${length}`).toBe(digest(data));
    }
    // a view into a larger buffer hashes only its own bytes
    const whole = randomBytes(300);
    expect(sha256Hex(whole.subarray(17, 250))).toBe(digest(whole.subarray(17, 250)));
  });

  it('gives the same digests once node:crypto takes over (past 1 MiB in a process) and without WebAssembly', async () => {
    vi.resetModules();
    const fresh = (await import('../../src/lib/sha256.js')).sha256Hex;
    const big = randomBytes(1_100_000);
    expect(fresh(big)).toBe(digest(big));
    const small = randomBytes(100);
    expect(fresh(small)).toBe(digest(small));

    vi.resetModules();
    vi.stubGlobal('WebAssembly', undefined);
    try {
      const without = (await import('../../src/lib/sha256.js')).sha256Hex;
      expect(without(small)).toBe(digest(small));
    } finally {
      vi.unstubAllGlobals();
    }
  });
});
