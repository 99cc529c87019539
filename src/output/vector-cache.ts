/**
 * Vectors by hash within a byte budget; the least recently used go first. The order is a queue of
 * (hash, stamp) with stale stamps skipped, not the Map's own order: evicting through a fresh Map
 * iterator walks over every slot deleted before it, which made each commit's rows costly
 * (docs/benchmarks.md, "Design figures").
 */
export class VectorCache {
  readonly #budget: number;
  readonly #entries = new Map<string, { readonly vector: Float32Array; readonly stamp: number }>();
  #queue: { readonly hash: string; readonly stamp: number }[] = [];
  #head = 0;
  #stamp = 0;
  #bytes = 0;

  /** `budget`: the bytes of vectors kept. */
  constructor(budget: number) {
    this.#budget = budget;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Places the order queue holds, evicted, stale or live (bounded by a few times the entries). */
  get queued(): number {
    return this.#queue.length;
  }

  get(hash: string): Float32Array | undefined {
    const entry = this.#entries.get(hash);
    if (entry) this.#put(hash, entry.vector);
    return entry?.vector;
  }

  set(hash: string, vector: Float32Array): void {
    this.#put(hash, vector);
    while (this.#bytes > this.#budget && this.#head < this.#queue.length) {
      const { hash: oldest, stamp } = this.#queue[this.#head++]!;
      const entry = this.#entries.get(oldest);
      // A stale stamp: the hash was used (or set) again since, and queued again.
      if (entry?.stamp !== stamp) continue;
      this.#entries.delete(oldest);
      this.#bytes -= entry.vector.byteLength;
    }
  }

  /** Makes `hash` the most recent entry. */
  #put(hash: string, vector: Float32Array): void {
    const old = this.#entries.get(hash);
    if (old) this.#bytes -= old.vector.byteLength;
    const stamp = ++this.#stamp;
    this.#entries.set(hash, { vector, stamp });
    this.#queue.push({ hash, stamp });
    this.#bytes += vector.byteLength;
    this.#compact();
  }

  /**
   * Drops the places already evicted once they are half the queue, and the stale ones once they
   * outnumber the live ones: otherwise the queue (and the hashes it holds) grows with every row
   * committed, or with every use of a few hot entries.
   */
  #compact(): void {
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
    if (this.#queue.length - this.#head > 2 * this.#entries.size + 1024) {
      this.#queue = this.#queue
        .slice(this.#head)
        .filter((place) => this.#entries.get(place.hash)?.stamp === place.stamp);
      this.#head = 0;
    }
  }
}
