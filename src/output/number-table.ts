/**
 * A map from non-negative integer keys (below 2^53) to numbers, in two Float64Arrays with open
 * addressing: 16 bytes a slot, no object per entry. The vector index keeps one entry per row of a
 * dataset (millions): as a Map of numbers that cost several times more a row, and two heap numbers
 * per row for every full GC to trace (docs/benchmarks.md, "Design figures").
 *
 * Keys are spread by their low 32 bits, so they must be well mixed already (hash prefixes are).
 */
const EMPTY = -1;
const MAX_LOAD = 0.7;

export class NumberTable {
  #keys: Float64Array;
  #values: Float64Array;
  #mask: number;
  #size = 0;

  constructor(capacity = 1024) {
    let slots = 16;
    while (slots * MAX_LOAD < capacity) slots *= 2;
    this.#keys = new Float64Array(slots).fill(EMPTY);
    this.#values = new Float64Array(slots);
    this.#mask = slots - 1;
  }

  get size(): number {
    return this.#size;
  }

  has(key: number): boolean {
    return this.#keys[this.#slotOf(key)] !== EMPTY;
  }

  get(key: number): number | undefined {
    const slot = this.#slotOf(key);
    return this.#keys[slot] === EMPTY ? undefined : this.#values[slot];
  }

  /** Empties the table, keeping its arrays (a table refilled to the same size allocates nothing). */
  clear(): void {
    this.#keys.fill(EMPTY);
    this.#size = 0;
  }

  /** The keys, in slot order. */
  keys(): Float64Array {
    const keys = new Float64Array(this.#size);
    let n = 0;
    for (const key of this.#keys) if (key !== EMPTY) keys[n++] = key;
    return keys;
  }

  /** Sets `key` unless it is there already (the first value stays); true when it was added. */
  add(key: number, value: number): boolean {
    if (!(Number.isInteger(key) && key >= 0 && key < 2 ** 53)) {
      throw new RangeError(`NumberTable keys are integers in [0, 2^53), got ${key}`);
    }
    const slot = this.#slotOf(key);
    if (this.#keys[slot] !== EMPTY) return false;
    this.#keys[slot] = key;
    this.#values[slot] = value;
    this.#size += 1;
    if (this.#size > this.#keys.length * MAX_LOAD) this.#grow();
    return true;
  }

  /** The slot holding `key`, or the empty slot where it would go (linear probing). */
  #slotOf(key: number): number {
    const keys = this.#keys;
    const mask = this.#mask;
    let slot = (key >>> 0) & mask;
    for (;;) {
      const found = keys[slot]!;
      if (found === key || found === EMPTY) return slot;
      slot = (slot + 1) & mask;
    }
  }

  #grow(): void {
    const keys = this.#keys;
    const values = this.#values;
    this.#keys = new Float64Array(keys.length * 2).fill(EMPTY);
    this.#values = new Float64Array(values.length * 2);
    this.#mask = this.#keys.length - 1;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (key === EMPTY) continue;
      const slot = this.#slotOf(key);
      this.#keys[slot] = key;
      this.#values[slot] = values[i]!;
    }
  }
}
