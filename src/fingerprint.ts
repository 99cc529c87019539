/**
 * A 64-bit fingerprint of a string's UTF-16 code units, as two unsigned 32-bit halves: two
 * multiply-rotate lanes with different constants, cross-mixed and avalanched at the end.
 * Non-cryptographic on purpose: it runs once per document (a crypto hash is much slower here:
 * docs/benchmarks.md, "Design figures").
 */
export function fingerprint(text: string): [hi: number, lo: number] {
  let a = 0x9e3779b9 ^ text.length;
  let b = 0x85ebca6b ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    a = Math.imul(a ^ unit, 0xcc9e2d51);
    a = (a << 15) | (a >>> 17);
    b = Math.imul(b ^ unit, 0x1b873593);
    b = (b << 13) | (b >>> 19);
  }
  a ^= b >>> 16;
  a = Math.imul(a ^ (a >>> 16), 0x85ebca6b);
  a = Math.imul(a ^ (a >>> 13), 0xc2b2ae35);
  a ^= a >>> 16;
  b ^= a;
  b = Math.imul(b ^ (b >>> 16), 0x7feb352d);
  b = Math.imul(b ^ (b >>> 15), 0x846ca68b);
  b ^= b >>> 16;
  return [a >>> 0, b >>> 0];
}

/** A 32-bit hash of a string's UTF-16 code units (one lane of fingerprint's), for hash tables. */
export function hash32(text: string): number {
  let a = 0x9e3779b9 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    a = Math.imul(a ^ text.charCodeAt(i), 0xcc9e2d51);
    a = (a << 15) | (a >>> 17);
  }
  a = Math.imul(a ^ (a >>> 16), 0x85ebca6b);
  a = Math.imul(a ^ (a >>> 13), 0xc2b2ae35);
  return (a ^ (a >>> 16)) >>> 0;
}
