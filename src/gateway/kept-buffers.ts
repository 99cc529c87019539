/**
 * Buffers kept to be used again: the smallest kept one large enough is handed out, and one given
 * back is kept while there is room (the smallest kept goes for a larger one). What an answer's body
 * is read into and a request's body is written into: hundreds of KB each, one per request, and as
 * fresh allocations they were most of the memory a run's collections swept (docs/benchmarks.md,
 * a thirty-second and a thirty-third session).
 */

export interface KeptBuffersLimits {
  /** Buffers kept at most; one needed beyond these is made, and let go when given back. */
  readonly count: number;
  /** A buffer larger than this (a rare, huge body) is let go rather than kept. */
  readonly largest: number;
  /** A new buffer holds a multiple of this: bodies a little apart in size share buffers. */
  readonly step: number;
}

export class KeptBuffers {
  readonly #free: ArrayBuffer[] = [];
  readonly #limits: KeptBuffersLimits;

  constructor(limits: KeptBuffersLimits) {
    this.#limits = limits;
  }

  /** A kept buffer of at least `bytes`, the smallest there is; a new one when none is large enough. */
  take(bytes: number): ArrayBuffer {
    let best = -1;
    for (let i = 0; i < this.#free.length; i++) {
      const size = this.#free[i]!.byteLength;
      if (size >= bytes && (best < 0 || size < this.#free[best]!.byteLength)) best = i;
    }
    if (best >= 0) return this.#free.splice(best, 1)[0]!;
    // Uninitialized: a caller hands out only the bytes it wrote.
    const { step } = this.#limits;
    return Buffer.allocUnsafeSlow(Math.max(1, Math.ceil(bytes / step)) * step).buffer as ArrayBuffer;
  }

  /** `store` is no longer read or written by anyone: it may serve the next `take`. */
  keep(store: ArrayBuffer): void {
    if (store.byteLength > this.#limits.largest || this.#free.includes(store)) return;
    if (this.#free.length >= this.#limits.count) {
      // The smallest goes: bodies of one run are much alike, and the larger serves more of them.
      let smallest = 0;
      for (let i = 1; i < this.#free.length; i++)
        if (this.#free[i]!.byteLength < this.#free[smallest]!.byteLength) smallest = i;
      if (this.#free[smallest]!.byteLength >= store.byteLength) return;
      this.#free.splice(smallest, 1);
    }
    this.#free.push(store);
  }
}
