/** The spill's CRC-32: the native one and zlib's give the same value, so either reads the other's files. */
import { randomBytes } from 'node:crypto';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { crc32, nativeCrc32 } from '../../src/files/crc32.js';

describe('crc32', () => {
  it('loads the native CRC-32 on this platform', () => {
    // linux-x64 is the platform CI runs on: its prebuilt binary is in the lockfile.
    expect(nativeCrc32()).toBeTypeOf('function');
  });

  it("equals zlib's, whole and continued across pieces, whatever the length", () => {
    const native = nativeCrc32()!;
    for (const length of [0, 1, 3, 15, 16, 63, 64, 65, 1_000, 4_096, 6_144, 131_072, 1_000_003]) {
      const bytes = randomBytes(length);
      const whole = zlibCrc32(bytes);
      expect(native(bytes), `length ${length}`).toBe(whole);
      expect(crc32(bytes), `length ${length}`).toBe(whole);
      const cut = Math.floor(length / 3);
      const continued = crc32(bytes.subarray(cut), crc32(bytes.subarray(0, cut)));
      expect(continued, `length ${length}, cut at ${cut}`).toBe(whole);
    }
  });

  it('is unsigned, as zlib gives it', () => {
    // CRC-32 of "a" is 0xe8b7be43: above 2^31, a signed 32-bit value would be negative.
    expect(crc32(Buffer.from('a'))).toBe(0xe8b7be43);
    expect(nativeCrc32()!(Buffer.from('a'))).toBe(0xe8b7be43);
  });
});
