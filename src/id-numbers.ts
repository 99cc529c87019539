/**
 * Document ids numbered 0, 1, 2… in order of first appearance, looked up exactly. A `Map<string,
 * number>` costs 28–56 bytes an entry and copies itself whole as it doubles; this keeps the ids in
 * one array and an open-addressing table of numbers (4 bytes a slot, at most half full) beside each
 * id's hash (4 bytes), so growing rehashes without hashing a string again.
 */
import { hash32 } from './fingerprint.js';

export class IdNumbers {
  readonly #ids: string[] = [];
  #hashes = new Int32Array(512);
  /** Open addressing, linear probing: a slot holds number + 1, 0 while empty. */
  #slots = new Int32Array(1024);
  /** The id asked for last, and its number: a document's chunks come one after another. */
  #lastId: string | undefined;
  #lastNumber = -1;

  get size(): number {
    return this.#ids.length;
  }

  /** The id's number; -1 when it has none. */
  get(id: string): number {
    if (id === this.#lastId) return this.#lastNumber;
    const slots = this.#slots;
    const mask = slots.length - 1;
    for (let slot = hash32(id) & mask; ; slot = (slot + 1) & mask) {
      const held = slots[slot]!;
      if (held === 0) return -1;
      if (this.#ids[held - 1] === id) return this.#remember(id, held - 1);
    }
  }

  /** The id's number, numbering it next when it has none. */
  add(id: string): number {
    if (id === this.#lastId) return this.#lastNumber;
    const hash = hash32(id);
    const slots = this.#slots;
    const mask = slots.length - 1;
    let slot = hash & mask;
    for (; ; slot = (slot + 1) & mask) {
      const held = slots[slot]!;
      if (held === 0) break;
      if (this.#ids[held - 1] === id) return this.#remember(id, held - 1);
    }
    const number = this.#ids.push(id) - 1;
    if (number === this.#hashes.length) {
      const hashes = new Int32Array(2 * number);
      hashes.set(this.#hashes);
      this.#hashes = hashes;
    }
    this.#hashes[number] = hash;
    slots[slot] = number + 1;
    if (2 * this.#ids.length > slots.length) this.#grow();
    return this.#remember(id, number);
  }

  has(id: string): boolean {
    return this.get(id) >= 0;
  }

  /** The id numbered `number`. */
  idOf(number: number): string {
    const id = this.#ids[number];
    if (id === undefined) throw new RangeError(`no id numbered ${number} (${this.#ids.length} ids)`);
    return id;
  }

  /** The ids in number order. */
  values(): IterableIterator<string> {
    return this.#ids.values();
  }

  #remember(id: string, number: number): number {
    this.#lastId = id;
    this.#lastNumber = number;
    return number;
  }

  #grow(): void {
    const slots = new Int32Array(2 * this.#slots.length);
    const mask = slots.length - 1;
    for (let number = 0; number < this.#ids.length; number++) {
      let slot = this.#hashes[number]! & mask;
      while (slots[slot] !== 0) slot = (slot + 1) & mask;
      slots[slot] = number + 1;
    }
    this.#slots = slots;
  }
}
