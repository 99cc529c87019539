/**
 * CRC-32 (the IEEE polynomial, zlib's): the spill's check of every entry, so of every vector a run
 * is sent back. Node's `zlib.crc32` runs table-driven; `@node-rs/crc32` (crc32fast, carry-less
 * multiply) gives the same value faster (docs/benchmarks.md, "a twenty-first session"). Where its
 * prebuilt binary is missing for the platform, zlib's is used: the values, and so the files, are
 * the same either way.
 */
import { createRequire } from 'node:module';
import { crc32 as zlibCrc32 } from 'node:zlib';

/** CRC-32 of `data`, continuing from `value` (0 to start). */
export type Crc32 = (data: Uint8Array, value?: number) => number;

let chosen: Crc32 | undefined;

/** The fastest CRC-32 this platform has. */
export function crc32(data: Uint8Array, value = 0): number {
  chosen ??= nativeCrc32() ?? zlibCrc32;
  return chosen(data, value);
}

/** `@node-rs/crc32`'s, as an unsigned value like zlib's; undefined where it cannot load. */
export function nativeCrc32(): Crc32 | undefined {
  try {
    const native = createRequire(import.meta.url)('@node-rs/crc32') as typeof import('@node-rs/crc32');
    return (data, value = 0) => native.crc32(data, value) >>> 0;
  } catch {
    return undefined;
  }
}
