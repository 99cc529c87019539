import { createHash } from 'node:crypto';

/** Outputs thrown away after seeding, so related seeds have drifted apart before anything is drawn. */
const DISCARDED_OUTPUTS = 12;

/**
 * sfc32 ("small fast counting", 32-bit, from PractRand): 128 bits of state, a few integer operations
 * per output. One step, with all arithmetic modulo 2^32:
 *
 *   t = a + b + d;  d = d + 1;  a = b ^ (b >>> 9);  b = c + (c << 3);
 *   c = rotl(c, 21) + t;  output t (as unsigned)
 *
 * It is not cryptographic; it is fast, and reproducible from its seed, which is all the emulator asks.
 */
export class Sfc32 {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(a: number, b: number, c: number, d: number) {
    this.a = a | 0;
    this.b = b | 0;
    this.c = c | 0;
    this.d = d | 0;
    for (let i = 0; i < DISCARDED_OUTPUTS; i++) this.nextUint32();
  }

  /** Seeded with the first four little-endian uint32 words of a digest (at least 16 bytes). */
  static fromDigest(digest: Buffer): Sfc32 {
    return new Sfc32(
      digest.readUInt32LE(0),
      digest.readUInt32LE(4),
      digest.readUInt32LE(8),
      digest.readUInt32LE(12),
    );
  }

  /** Seeded from sha256 of a label, for streams that need no outside meaning (faults, shuffles). */
  static fromLabel(label: string): Sfc32 {
    return Sfc32.fromDigest(createHash('sha256').update(label, 'utf8').digest());
  }

  nextUint32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /**
   * Fills `out[0, count)` with next() / 2^32 * 2 - 1 (uniform in [-1, 1), exact in float64) and
   * returns the sum of their squares, added in index order. The same draws as calling nextUint32
   * per element; the state lives in locals for the loop, which made the emulator's vectors several
   * times cheaper (docs/benchmarks.md, "Design figures").
   */
  fillSigned(out: Float64Array, count = out.length): number {
    let { a, b, c, d } = this;
    let sumOfSquares = 0;
    for (let i = 0; i < count; i++) {
      const t = (((a + b) | 0) + d) | 0;
      d = (d + 1) | 0;
      a = b ^ (b >>> 9);
      b = (c + (c << 3)) | 0;
      c = (c << 21) | (c >>> 11);
      c = (c + t) | 0;
      const x = ((t >>> 0) / 2 ** 32) * 2 - 1;
      out[i] = x;
      sumOfSquares += x * x;
    }
    this.a = a;
    this.b = b;
    this.c = c;
    this.d = d;
    return sumOfSquares;
  }

  /** Uniform in [0, 1). */
  nextFloat(): number {
    return this.nextUint32() / 2 ** 32;
  }

  /** Uniform integer in [0, n). */
  nextInt(n: number): number {
    return Math.floor(this.nextFloat() * n);
  }
}
