/**
 * A content hash as a number: its first 52 bits (13 hex digits), exact in a double. Millions of rows
 * are keyed by it (the vector index, the dataset contract) at 8 bytes a row instead of a
 * 64-character string. A 52-bit prefix may collide: callers that must be exact compare full hashes.
 */
import { hash as digest } from 'node:crypto';

/** Hex digits of the key. */
const KEY_DIGITS = 13;

/** The hash's first KEY_DIGITS hex digits as a number (read per character: no substring per row). */
export function hashKey(hash: string): number {
  let key = 0;
  for (let i = 0; i < KEY_DIGITS; i++) {
    const digit = HEX[hash.charCodeAt(i)] ?? -1;
    // A value that is not a hex hash (never written by embedpipe) is keyed by a hash of it.
    if (digit < 0) return i === hash.length && i > 0 ? key : hashKey(digest('sha256', hash, 'hex'));
    key = key * 16 + digit;
  }
  return key;
}

/** Hex digit values by character code; -1 for any other character. */
const HEX = new Int8Array(256).fill(-1);
for (let d = 0; d < 16; d++) {
  HEX['0123456789abcdef'.charCodeAt(d)] = d;
  HEX['0123456789ABCDEF'.charCodeAt(d)] = d;
}

/** hashKey of the UTF-8 text `bytes[start, end)`, read from the bytes (no string for hex, the usual case). */
export function hashKeyAt(bytes: Buffer, start: number, end: number): number {
  if (end - start >= KEY_DIGITS) {
    let key = 0;
    for (let i = start; i < start + KEY_DIGITS; i++) {
      const digit = HEX[bytes[i]!]!;
      if (digit < 0) return hashKey(bytes.toString('utf8', start, end));
      key = key * 16 + digit;
    }
    return key;
  }
  return hashKey(bytes.toString('utf8', start, end));
}
