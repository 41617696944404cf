/**
 * HPACK's Huffman code (RFC 7541 §5.2, Appendix B): decoding a string literal sent Huffman-encoded.
 *
 * The code is canonical: given each symbol's code length, the codes are assigned in order of length,
 * then of symbol, each the previous plus one shifted to its length. So the table is written as the
 * 257 lengths (bytes 0-255, then EOS), and the codes are derived from them once, on first use.
 *
 * Invariants: a string decodes to exactly the bytes encoded; a string that holds EOS, ends in
 * padding longer than 7 bits or padding that is not the most significant bits of EOS (all ones), or
 * a code that is no symbol's, is refused with an Error (a COMPRESSION_ERROR for the connection).
 */

/** Code length in bits of each symbol, 0-255 then EOS (256): RFC 7541 Appendix B. */
// prettier-ignore
const LENGTHS: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
  30,
];
const EOS = 256;
const MAX_BITS = 30;

/** The canonical decoding tables: per length, the first code, how many codes, where they start in `symbols`. */
interface Canonical {
  first: Int32Array;
  count: Int32Array;
  offset: Int32Array;
  /** Symbols sorted by (length, symbol). */
  symbols: Uint16Array;
}

let canonical: Canonical | undefined;

function build(): Canonical {
  const count = new Int32Array(MAX_BITS + 1);
  for (const length of LENGTHS) count[length]! += 1;
  const first = new Int32Array(MAX_BITS + 1);
  const offset = new Int32Array(MAX_BITS + 1);
  let code = 0;
  let at = 0;
  for (let length = 1; length <= MAX_BITS; length += 1) {
    first[length] = code;
    offset[length] = at;
    code = (code + count[length]!) * 2;
    at += count[length]!;
  }
  const symbols = new Uint16Array(LENGTHS.length);
  const placed = new Int32Array(MAX_BITS + 1);
  for (let symbol = 0; symbol < LENGTHS.length; symbol += 1) {
    const length = LENGTHS[symbol]!;
    symbols[offset[length]! + placed[length]!] = symbol;
    placed[length]! += 1;
  }
  return { first, count, offset, symbols };
}

/** Each symbol's code (for tests and the encoder of tests): `[code, length]`. */
export function huffmanCodes(): Array<[number, number]> {
  const table = (canonical ??= build());
  const codes: Array<[number, number]> = [];
  for (let symbol = 0; symbol < LENGTHS.length; symbol += 1) {
    const length = LENGTHS[symbol]!;
    const rank = table.symbols.subarray(table.offset[length], table.offset[length]! + table.count[length]!).indexOf(symbol);
    codes.push([table.first[length]! + rank, length]);
  }
  return codes;
}

/** Decodes a Huffman-encoded string literal's bytes. Throws on a malformed one (see the invariants). */
export function huffmanDecode(bytes: Uint8Array): Buffer {
  const { first, count, offset, symbols } = (canonical ??= build());
  const out = Buffer.allocUnsafe(Math.ceil((bytes.length * 8) / 5));
  let written = 0;
  let code = 0;
  let length = 0;
  for (let i = 0; i < bytes.length; i += 1) {
    const byte = bytes[i]!;
    for (let bit = 7; bit >= 0; bit -= 1) {
      code = code * 2 + ((byte >> bit) & 1);
      length += 1;
      const rank = code - first[length]!;
      if (rank < 0 || rank >= count[length]!) {
        if (length >= MAX_BITS) throw new Error('a Huffman code that is no symbol');
        continue;
      }
      const symbol = symbols[offset[length]! + rank]!;
      if (symbol === EOS) throw new Error('a Huffman string that holds EOS');
      out[written++] = symbol;
      code = 0;
      length = 0;
    }
  }
  // what is left is padding: under 8 bits, all ones (the top bits of EOS)
  if (length > 7 || code !== 2 ** length - 1) throw new Error('a Huffman string with bad padding');
  return out.subarray(0, written);
}
