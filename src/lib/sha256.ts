/**
 * SHA-256 (FIPS 180-4) without node:crypto, for the store's checksums: a short command (a `kill`
 * writes two or three checkpoints of a few KB) should not pay node:crypto's first use, which
 * compiles some fifty of Node's internal modules (20-35 ms of CPU at a command's start).
 *
 * The compression function is WebAssembly (`SHA256_MODULE`): compiled and run on its first 3.5 KB in
 * ~2-3 ms of CPU, where the same function in JavaScript spends 8-15 ms in the interpreter (and
 * writing the module's bytes at run time, 3-7 ms more: they are kept here instead).
 *
 * Contract: `sha256Hex(data)` equals `crypto.hash('sha256', data, 'hex')` for every input (tested
 * against node:crypto on the standard's vectors and on inputs of every length around the block and
 * padding boundaries). Without WebAssembly (`--jitless`), or once this process has hashed
 * `NATIVE_AFTER_BYTES` (a watch or an agent over a node's checkpoints), node:crypto does it.
 */
// node:crypto is asked for where it hashes (process.getBuiltinModule): a static import's interop
// object, made at load, defines a getter for each of its exports whether or not it is used

/** Past this much hashed, node:crypto (loaded once) is cheaper per byte than the module below. */
const NATIVE_AFTER_BYTES = 1 << 20;

/**
 * The module, base64: `compress(from: i32, to: i32)` runs the compression function over each 64-byte
 * block of memory[from, to) into the state (eight words at 0, in the machine's byte order), with the
 * round constants at 32 and the message schedule at 288; `memory` (one page to start) is exported.
 * Written by the emitter in test/lib/sha256.test.ts, which checks that this is its output.
 */
export const SHA256_MODULE = [
  'AGFzbQEAAAABBgFgAn9/AAMCAQAFAwEAAQcVAghjb21wcmVzcwAABm1lbW9yeQIACuADAd0DAQx/AkADQCAAIAFPDQFBACEKA0Ag',
  'CiAAIApqKAIAIQ0gDUEIeEGA/oN4cSANQQh3Qf+B/AdxcjYCoAIgCkEEaiIKQcAASQ0AC0HAACEKA0AgCiAKKAKYAiENIA1BEXgg',
  'DUETeHMgDUEKdnMgCigChAJqIAooAuQBIQ0gDUEHeCANQRJ4cyANQQN2c2ogCigC4AFqNgKgAiAKQQRqIgpBgAJJDQALQQAoAgAh',
  'AkEAKAIEIQNBACgCCCEEQQAoAgwhBUEAKAIQIQZBACgCFCEHQQAoAhghCEEAKAIcIQlBACEKA0AgCSAGQQZ4IAZBC3hzIAZBGXhz',
  'aiAIIAYgByAIc3FzaiAKKAIgaiAKKAKgAmohCyACQQJ4IAJBDXhzIAJBFnhzIAIgA3EgBCACIANycXJqIQwgCCEJIAchCCAGIQcg',
  'BSALaiEGIAQhBSADIQQgAiEDIAsgDGohAiAKQQRqIgpBgAJJDQALQQBBACgCACACajYCAEEAQQAoAgQgA2o2AgRBAEEAKAIIIARq',
  'NgIIQQBBACgCDCAFajYCDEEAQQAoAhAgBmo2AhBBAEEAKAIUIAdqNgIUQQBBACgCGCAIajYCGEEAQQAoAhwgCWo2AhwgAEHAAGoh',
  'AAwACwsLC4cCAQBBIAuAApgvikKRRDdxz/vAtaXbtelbwlY58RHxWaSCP5LVXhyrmKoH2AFbgxK+hTEkw30MVXRdvnL+sd6Apwbc',
  'm3Txm8HBaZvkhke+78adwQ/MoQwkbyzpLaqEdErcqbBc2oj5dlJRPphtxjGoyCcDsMd/Wb/zC+DGR5Gn1VFjygZnKSkUhQq3Jzgh',
  'Gy78bSxNEw04U1RzCmW7Cmp2LsnCgYUscpKh6L+iS2YaqHCLS8KjUWzHGeiS0SQGmdaFNQ70cKBqEBbBpBkIbDceTHdIJ7W8sDSz',
  'DBw5SqrYTk/KnFvzby5o7oKPdG9jpXgUeMiECALHjPr/vpDrbFCk96P5vvJ4ccY=',
].join('');

/** Where the message goes in the module's memory (after the state, the constants and the schedule). */
const MESSAGE_AT = 544;
const PAGE = 65_536;

/** The first 32 bits of the fractional parts of the square roots of the first 8 primes. */
const INITIAL = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/** The part of WebAssembly's JavaScript API used here (not in the TypeScript libraries podctl builds with). */
interface WebAssemblyApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: object };
  compile?: (bytes: Uint8Array) => Promise<object>;
}

interface Compressor {
  compress(from: number, to: number): void;
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
}

let compressor: Compressor | null | undefined;
let hashedBytes = 0;
let preparing = false;

/**
 * Compiles the module off the main thread (`WebAssembly.compile`) and, once it is compiled, makes
 * the instance and runs the function once over no block (which changes nothing: V8 compiles a wasm
 * function on its first call), so that the first checksum a command needs later does not compile
 * them on its path. Idempotent; a failure leaves it to `sha256Hex`'s synchronous compile (or
 * node:crypto), as without it; the digests are the same either way.
 */
export function prepareSha256(): void {
  const api = (globalThis as { WebAssembly?: WebAssemblyApi }).WebAssembly;
  if (preparing || compressor !== undefined || !api?.compile) return;
  preparing = true;
  api.compile(Buffer.from(SHA256_MODULE, 'base64')).then(
    (module) => {
      if (compressor !== undefined) return;
      try {
        const ready = new api.Instance(module).exports as Compressor;
        ready.compress(MESSAGE_AT, MESSAGE_AT);
        compressor = ready;
      } catch {
        // left to compressorOf
      }
    },
    () => undefined,
  );
}

/** The module's instance, made at the first use; null where WebAssembly is unavailable. */
function compressorOf(): Compressor | null {
  if (compressor !== undefined) return compressor;
  const api = (globalThis as { WebAssembly?: WebAssemblyApi }).WebAssembly;
  try {
    compressor = api ? (new api.Instance(new api.Module(Buffer.from(SHA256_MODULE, 'base64'))).exports as Compressor) : null;
  } catch {
    compressor = null;
  }
  return compressor;
}

/** The SHA-256 digest of `data` as 64 lowercase hex digits. */
export function sha256Hex(data: Uint8Array): string {
  hashedBytes += data.length;
  const wasm = hashedBytes > NATIVE_AFTER_BYTES ? null : compressorOf();
  if (!wasm) return process.getBuiltinModule('node:crypto').hash('sha256', data, 'hex');
  // the message, the 0x80 marker, zeros, and the length in bits (64 bits, big-endian): whole blocks
  const end = MESSAGE_AT + ((data.length + 9 + 63) & ~63);
  const { memory } = wasm;
  if (memory.buffer.byteLength < end) memory.grow(Math.ceil((end - memory.buffer.byteLength) / PAGE));
  const bytes = new Uint8Array(memory.buffer);
  const view = new DataView(memory.buffer);
  bytes.set(data, MESSAGE_AT);
  bytes.fill(0, MESSAGE_AT + data.length, end);
  bytes[MESSAGE_AT + data.length] = 0x80;
  view.setUint32(end - 8, Math.floor(data.length / 2 ** 29));
  view.setUint32(end - 4, (data.length * 8) >>> 0);
  for (let j = 0; j < 8; j++) view.setUint32(j * 4, INITIAL[j]!, true);
  wasm.compress(MESSAGE_AT, end);
  let hex = '';
  for (let j = 0; j < 8; j++)
    hex += view
      .getUint32(j * 4, true)
      .toString(16)
      .padStart(8, '0');
  return hex;
}
