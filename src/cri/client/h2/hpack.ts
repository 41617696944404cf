/**
 * HPACK (RFC 7541): decoding the header blocks a runtime sends, and encoding our requests' headers.
 *
 * The decoder keeps the connection's dynamic table: it must see every header block the peer sends,
 * in order (also those of streams already reset), or later blocks decode wrong. The encoder never
 * indexes (literals without indexing, no Huffman), so the peer's table size never matters to it.
 *
 * Invariants:
 * - A block decodes to its fields in order, names and values exactly as sent (Huffman or not,
 *   indexed, from the static or the dynamic table).
 * - The dynamic table holds at most `maxTableBytes` (entry size: name + value octets + 32); adding
 *   evicts the oldest first; an entry larger than the table empties it (§4.4). A size update above
 *   our limit, or anywhere but at a block's start, an index out of range, a truncated integer or
 *   string, or a bad Huffman string throws (a COMPRESSION_ERROR for the connection).
 */
import { huffmanDecode } from './huffman.js';

/** The static table (RFC 7541 Appendix A): index 1 is element 0. */
// prettier-ignore
const STATIC: ReadonlyArray<readonly [string, string]> = [
  [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'],
  [':scheme', 'http'], [':scheme', 'https'], [':status', '200'], [':status', '204'], [':status', '206'],
  [':status', '304'], [':status', '400'], [':status', '404'], [':status', '500'], ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'], ['accept-language', ''], ['accept-ranges', ''], ['accept', ''],
  ['access-control-allow-origin', ''], ['age', ''], ['allow', ''], ['authorization', ''], ['cache-control', ''],
  ['content-disposition', ''], ['content-encoding', ''], ['content-language', ''], ['content-length', ''],
  ['content-location', ''], ['content-range', ''], ['content-type', ''], ['cookie', ''], ['date', ''], ['etag', ''],
  ['expect', ''], ['expires', ''], ['from', ''], ['host', ''], ['if-match', ''], ['if-modified-since', ''],
  ['if-none-match', ''], ['if-range', ''], ['if-unmodified-since', ''], ['last-modified', ''], ['link', ''],
  ['location', ''], ['max-forwards', ''], ['proxy-authenticate', ''], ['proxy-authorization', ''], ['range', ''],
  ['referer', ''], ['refresh', ''], ['retry-after', ''], ['server', ''], ['set-cookie', ''],
  ['strict-transport-security', ''], ['transfer-encoding', ''], ['user-agent', ''], ['vary', ''], ['via', ''],
  ['www-authenticate', ''],
];
/** The dynamic table's size until the peer says otherwise: SETTINGS_HEADER_TABLE_SIZE's initial value. */
const HEADER_TABLE_BYTES = 4096;
const ENTRY_OVERHEAD = 32;

/** One decoded field: name and value. */
export type Field = [name: string, value: string];

interface Entry {
  name: string;
  value: string;
  size: number;
}

/** Reads a block: a cursor over its bytes. */
class Cursor {
  at = 0;
  constructor(readonly bytes: Uint8Array) {}

  /** An integer with an N-bit prefix (§5.1), the prefix's first byte at the cursor. */
  integer(prefixBits: number): number {
    const max = (1 << prefixBits) - 1;
    let value = this.#byte() & max;
    if (value < max) return value;
    for (let shift = 0; ; shift += 7) {
      const byte = this.#byte();
      value += (byte & 0x7f) * 2 ** shift;
      if (value > 0x7fffffff) throw new Error('an HPACK integer too large');
      if ((byte & 0x80) === 0) return value;
    }
  }

  /** A string literal (§5.2): its H bit, length, bytes; decoded as latin1 when it is not UTF-8 clean. */
  string(): { text: string; octets: number } {
    const huffman = (this.bytes[this.at]! & 0x80) !== 0;
    const length = this.integer(7);
    if (this.at + length > this.bytes.length) throw new Error('an HPACK string past the end of its block');
    const raw = this.bytes.subarray(this.at, this.at + length);
    this.at += length;
    const octets = huffman ? huffmanDecode(raw) : Buffer.from(raw.buffer, raw.byteOffset, raw.length);
    return { text: octets.toString('latin1'), octets: octets.length };
  }

  #byte(): number {
    if (this.at >= this.bytes.length) throw new Error('an HPACK block that ends inside a field');
    return this.bytes[this.at++]!;
  }
}

/** The decoding side of one connection: its dynamic table. */
export class HpackDecoder {
  /** Newest first. */
  readonly #table: Entry[] = [];
  #size = 0;
  #maxSize = HEADER_TABLE_BYTES;

  /** `limit`: our SETTINGS_HEADER_TABLE_SIZE, the largest size update the peer may send. */
  constructor(readonly limit = HEADER_TABLE_BYTES) {}

  /** Decodes one complete header block (HEADERS + CONTINUATION payloads joined). Throws on a bad one. */
  decode(block: Uint8Array): Field[] {
    const cursor = new Cursor(block);
    const fields: Field[] = [];
    while (cursor.at < block.length) {
      const first = block[cursor.at]!;
      if (first & 0x80) {
        const index = cursor.integer(7);
        if (index === 0) throw new Error('HPACK index 0');
        const entry = this.#entry(index);
        fields.push([entry[0], entry[1]]);
      } else if (first & 0x40) {
        const field = this.#literal(cursor, 6);
        fields.push(field);
        this.#add(field[0], field[1]);
      } else if (first & 0x20) {
        if (fields.length > 0) throw new Error('an HPACK table size update after a field');
        const size = cursor.integer(5);
        if (size > this.limit) throw new Error(`an HPACK table size of ${size}, over ${this.limit}`);
        this.#maxSize = size;
        this.#evict(0);
      } else {
        // without indexing (0000) or never indexed (0001): the same to a decoder
        fields.push(this.#literal(cursor, 4));
      }
    }
    return fields;
  }

  /** The dynamic table's size in octets (RFC 7541 §4.1), for tests. */
  get tableBytes(): number {
    return this.#size;
  }

  #literal(cursor: Cursor, prefixBits: number): Field {
    const index = cursor.integer(prefixBits);
    const name = index === 0 ? cursor.string().text : this.#entry(index)[0];
    return [name, cursor.string().text];
  }

  #entry(index: number): readonly [string, string] {
    if (index <= STATIC.length) return STATIC[index - 1]!;
    const entry = this.#table[index - STATIC.length - 1];
    if (entry === undefined) throw new Error(`HPACK index ${index} out of range`);
    return [entry.name, entry.value];
  }

  /** Adds an entry (§4.4), sized by its octets (latin1 text: one char per octet). */
  #add(name: string, value: string): void {
    const size = name.length + value.length + ENTRY_OVERHEAD;
    if (size > this.#maxSize) {
      this.#table.length = 0;
      this.#size = 0;
      return;
    }
    this.#evict(size);
    this.#table.unshift({ name, value, size });
    this.#size += size;
  }

  /** Evicts the oldest entries until `room` more octets fit. */
  #evict(room: number): void {
    while (this.#size + room > this.#maxSize) {
      const oldest = this.#table.pop();
      if (oldest === undefined) break;
      this.#size -= oldest.size;
    }
  }
}

/** Writes an integer with an N-bit prefix at `at`; `flags` are the prefix byte's high bits. Returns the end. */
function writeInteger(out: Buffer, at: number, value: number, prefixBits: number, flags: number): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out[at] = flags | value;
    return at + 1;
  }
  out[at++] = flags | max;
  let rest = value - max;
  while (rest >= 0x80) {
    out[at++] = (rest % 0x80) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  out[at] = rest;
  return at + 1;
}

/**
 * Writes a string literal, not Huffman-encoded, as latin1 (each character's low octet, as
 * `Buffer.from(text, 'latin1')`), by hand: a request's few short strings cost less than the first
 * call of Buffer's writers. Returns the end.
 */
function writeString(out: Buffer, at: number, text: string): number {
  let end = writeInteger(out, at, text.length, 7, 0);
  for (let i = 0; i < text.length; i++) out[end++] = text.charCodeAt(i);
  return end;
}

/** An integer's most octets: a prefix octet and five of seven bits (a length below 2^32). */
const INTEGER_OCTETS = 6;

/** Static index of each name (its first entry). */
let staticNames: Map<string, number> | undefined;

/**
 * Encodes a request's fields: each a literal without indexing, its name by static index when it has
 * one. Written into one buffer sized for the longest encoding (each string's octets where they lie,
 * not pushed one by one).
 */
export function encodeHeaders(fields: Iterable<Field>): Buffer {
  staticNames ??= new Map(STATIC.map(([name], i) => [name, i + 1] as const).reverse());
  const list = [...fields];
  let most = 0;
  for (const [name, value] of list) most += 1 + 2 * INTEGER_OCTETS + name.length + value.length;
  const out = Buffer.allocUnsafe(most);
  let at = 0;
  for (const [name, value] of list) {
    const index = staticNames.get(name);
    if (index === undefined) {
      out[at++] = 0;
      at = writeString(out, at, name);
    } else at = writeInteger(out, at, index, 4, 0);
    at = writeString(out, at, value);
  }
  return out.subarray(0, at);
}
