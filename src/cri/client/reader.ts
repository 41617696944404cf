/**
 * The reader the CRI client decodes responses with: the generated messages' own `BinaryReader`
 * (@bufbuild/protobuf), whose strings are cut from the response's Buffer by Node's UTF-8 decoder in
 * one call each instead of byte by byte.
 *
 * Why: a listing is mostly strings (IDs, names, label and annotation keys and values); the library
 * reads a string of up to 32 bytes in a JavaScript loop over its bytes and a longer one through a
 * `TextDecoder` on a subarray. In a fresh process that loop runs cold, and decoding a 50-pod listing
 * took about twice as long as with this reader (docs/bench/startup.md).
 *
 * Invariant: a message decodes to exactly what the generated decoder makes of the same bytes with the
 * library's reader (test/cri/client/reader.test.ts): invalid UTF-8 becomes U+FFFD in both (the
 * WHATWG rule both decoders follow), a byte-order mark is kept by both (the library's decoder
 * ignores none), `string(true)` (strict) is left to the library, and a length past the end fails
 * as the library's does ("premature EOF").
 */
import { BinaryReader } from '@bufbuild/protobuf/wire';

export class BufferReader extends BinaryReader {
  readonly #bytes: Buffer;

  constructor(bytes: Buffer) {
    super(bytes);
    this.#bytes = bytes;
  }

  override string(strict?: boolean): string {
    const at = this.pos;
    const length = this.uint32();
    const start = this.pos;
    const end = start + length;
    if (strict || end > this.len) {
      this.pos = at;
      return super.string(strict);
    }
    this.pos = end;
    return this.#bytes.toString('utf8', start, end);
  }
}
