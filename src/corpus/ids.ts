import { fingerprint } from '../fingerprint.js';

/**
 * Duplicate-id detection for one corpus: the first occurrence of an id wins, later ones are
 * rejected naming where it was first seen.
 *
 * Memory is the only per-corpus state that grows with the corpus, so the registry keeps a 64-bit
 * fingerprint and the first location of each id in typed arrays (16 bytes a slot, at most 2 slots
 * an id) instead of the id strings: a Map<string, …> costs about 70 bytes an entry and cannot hold
 * more than 2^24 entries. The price: two different ids with the same fingerprint would be reported
 * as duplicates; with n ids that happens with probability about n²/2^65 (3·10⁻⁶ for 10 million).
 */
export class IdRegistry {
  // Open addressing with linear probing; a slot is empty while its line is 0 (lines start at 1).
  #hi = new Uint32Array(1024);
  #lo = new Uint32Array(1024);
  #line = new Uint32Array(1024);
  #file = new Uint32Array(1024);
  #size = 0;
  readonly #files: string[] = [];
  readonly #fileIndex = new Map<string, number>();

  /** Number of distinct ids registered. */
  get size(): number {
    return this.#size;
  }

  /**
   * Registers `id` as seen at `file`:`line`. Returns undefined for a new id, or the first location
   * ("file:line") when the id was registered before (and then registers nothing).
   */
  claim(id: string, file: string, line: number): string | undefined {
    const [hi, lo] = fingerprint(id);
    const mask = this.#line.length - 1;
    let slot = lo & mask;
    for (;;) {
      const seenLine = this.#line[slot]!;
      if (seenLine === 0) break;
      if (this.#hi[slot] === hi && this.#lo[slot] === lo) {
        return `${this.#files[this.#file[slot]!]}:${seenLine}`;
      }
      slot = (slot + 1) & mask;
    }
    this.#hi[slot] = hi;
    this.#lo[slot] = lo;
    this.#line[slot] = line;
    this.#file[slot] = this.#indexOf(file);
    this.#size += 1;
    // Keep the load at most 1/2 so probe sequences stay short.
    if (this.#size * 2 > this.#line.length) this.#grow();
    return undefined;
  }

  #indexOf(file: string): number {
    let index = this.#fileIndex.get(file);
    if (index === undefined) {
      index = this.#files.push(file) - 1;
      this.#fileIndex.set(file, index);
    }
    return index;
  }

  #grow(): void {
    const hi = this.#hi;
    const lo = this.#lo;
    const line = this.#line;
    const file = this.#file;
    const capacity = line.length * 2;
    const mask = capacity - 1;
    this.#hi = new Uint32Array(capacity);
    this.#lo = new Uint32Array(capacity);
    this.#line = new Uint32Array(capacity);
    this.#file = new Uint32Array(capacity);
    for (let old = 0; old < line.length; old++) {
      if (line[old] === 0) continue;
      let slot = lo[old]! & mask;
      while (this.#line[slot] !== 0) slot = (slot + 1) & mask;
      this.#hi[slot] = hi[old]!;
      this.#lo[slot] = lo[old]!;
      this.#line[slot] = line[old]!;
      this.#file[slot] = file[old]!;
    }
  }
}
