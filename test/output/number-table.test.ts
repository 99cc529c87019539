/** NumberTable against a Map, through growth, with keys like the vector index's (52-bit hash prefixes). */
import { describe, expect, it } from 'vitest';
import { NumberTable } from '../../src/output/number-table.js';
import { seeded } from '../helpers/corpus.js';

describe('NumberTable', () => {
  it('answers as a Map does for 200,000 random 52-bit keys, duplicates and misses included', () => {
    const random = seeded(11);
    const key52 = () => Math.floor(random() * 2 ** 20) * 2 ** 32 + Math.floor(random() * 2 ** 32);
    const table = new NumberTable();
    const map = new Map<number, number>();
    const keys: number[] = [];
    for (let i = 0; i < 200_000; i++) {
      // Every tenth key again: the first value stays.
      const key = i % 10 === 9 ? keys[Math.floor(random() * keys.length)]! : key52();
      keys.push(key);
      const value = i * 2 ** 26 + (i % 1000);
      expect(table.add(key, value)).toBe(!map.has(key));
      if (!map.has(key)) map.set(key, value);
    }
    expect(table.size).toBe(map.size);
    for (const key of keys) {
      expect(table.has(key)).toBe(true);
      expect(table.get(key)).toBe(map.get(key));
    }
    for (let i = 0; i < 10_000; i++) {
      const key = key52();
      expect(table.has(key)).toBe(map.has(key));
      expect(table.get(key)).toBe(map.get(key));
    }
  });

  it('keeps 0 and the largest keys apart, and refuses keys it cannot hold', () => {
    const table = new NumberTable(4);
    // Same low 32 bits: the same home slot, told apart by probing.
    for (const [i, key] of [0, 2 ** 32, 2 ** 52, 2 ** 53 - 1].entries()) table.add(key, i);
    expect([0, 2 ** 32, 2 ** 52, 2 ** 53 - 1].map((key) => table.get(key))).toEqual([0, 1, 2, 3]);
    expect(table.get(1)).toBeUndefined();
    for (const bad of [-1, 0.5, 2 ** 53, Number.NaN]) expect(() => table.add(bad, 0)).toThrow(RangeError);
  });
});
