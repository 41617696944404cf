/**
 * The HTTP/2 frame layout as the CRI client writes and reads it (src/cri/client/h2/frames.ts): the
 * 9-byte header (RFC 9113 §4.1: 24-bit length, type, flags, reserved bit and 31-bit stream id).
 */
import { describe, expect, it } from 'vitest';
import { FrameReader, frameBytes, type Frame } from '../../../../src/cri/client/h2/frames.js';

describe('HTTP/2 frames', () => {
  it('writes the header in network order, the reserved bit clear', () => {
    expect(frameBytes(0x1, 0x5, 3, Buffer.from('ab'))).toEqual(Buffer.from([0, 0, 2, 0x1, 0x5, 0, 0, 0, 3, 0x61, 0x62]));
    expect(frameBytes(0x0, 0x1, 0xffffffff, Buffer.alloc(0x012345))).toEqual(Buffer.concat([Buffer.from([0x01, 0x23, 0x45, 0x0, 0x1, 0x7f, 0xff, 0xff, 0xff]), Buffer.alloc(0x012345)]));
    expect(frameBytes(0x4, 0, 0x12345678)).toEqual(Buffer.from([0, 0, 0, 0x4, 0, 0x12, 0x34, 0x56, 0x78]));
  });

  it('reads back every frame written, the stream id without the reserved bit, however the bytes are split', () => {
    const sizes = [0, 1, 255, 256, 16_384];
    const written = sizes.map((size, i) => frameBytes(i, 0xff - i, [0, 1, 0x7fffffff, 0x80000001, 0x12345678][i]!, Buffer.alloc(size, i)));
    const all = Buffer.concat(written);
    for (const step of [1, 7, 9, 1000, all.length]) {
      const reader = new FrameReader();
      const frames: Frame[] = [];
      for (let at = 0; at < all.length; at += step) reader.push(all.subarray(at, at + step), (frame) => frames.push({ ...frame, payload: Buffer.from(frame.payload) }));
      expect(frames.map((f) => [f.type, f.flags, f.streamId, f.payload.length])).toEqual(sizes.map((size, i) => [i, 0xff - i, [0, 1, 0x7fffffff, 1, 0x12345678][i], size]));
      expect(frames.every((f, i) => f.payload.equals(Buffer.alloc(sizes[i]!, i)))).toBe(true);
    }
  });
});
