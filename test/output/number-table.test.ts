/** NumberTable and its spilling form against a Map, through growth, with keys like the vector index's (52-bit hash prefixes). */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NumberTable } from '../../src/output/number-table.js';
import { SpillingNumberTable } from '../../src/output/spilling-number-table.js';
import { seeded } from '../helpers/corpus.js';

/**
 * Adds `count` random 52-bit keys to `table` and to a Map (every tenth an earlier key again: the
 * first value stays), checking each answer; returns the keys added and the Map, and a fresh key.
 */
function fillLikeMap(
  table: Pick<NumberTable, 'add' | 'size'>,
  seed: number,
  count: number,
  keys: number[] = [],
  map = new Map<number, number>(),
) {
  const random = seeded(seed);
  const key52 = () => Math.floor(random() * 2 ** 20) * 2 ** 32 + Math.floor(random() * 2 ** 32);
  for (let i = 0; i < count; i++) {
    const key = i % 10 === 9 ? keys[Math.floor(random() * keys.length)]! : key52();
    keys.push(key);
    const value = i * 2 ** 26 + (i % 1000);
    expect(table.add(key, value)).toBe(!map.has(key));
    if (!map.has(key)) map.set(key, value);
  }
  expect(table.size).toBe(map.size);
  return { keys, map, key52 };
}

describe('NumberTable', () => {
  it('answers as a Map does for 200,000 random 52-bit keys, duplicates and misses included', () => {
    const table = new NumberTable();
    const { keys, map, key52 } = fillLikeMap(table, 11, 200_000);
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

  it('is empty once cleared, forgets every key, and refills as a new table would', () => {
    const table = new NumberTable();
    const { keys } = fillLikeMap(table, 12, 50_000);
    table.clear();
    expect(table.size).toBe(0);
    expect(table.keys()).toHaveLength(0);
    for (const key of keys.slice(0, 5_000)) expect(table.get(key)).toBeUndefined();
    const { keys: again, map } = fillLikeMap(table, 13, 50_000);
    for (const key of again) expect(table.get(key)).toBe(map.get(key));
  });
});

describe('SpillingNumberTable', () => {
  it('answers as a Map does with most entries moved to sorted runs in its file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'spilling-table-'));
    // 1,000 entries in memory: 60,000 keys make ~55 runs, and blocks end mid-run.
    const table = new SpillingNumberTable(dir, 1_000);
    const map = new Map<number, number>();
    const keys: number[] = [0, 2 ** 53 - 1];
    for (const key of keys) {
      expect(table.add(key, key === 0 ? 7 : 8)).toBe(true);
      map.set(key, key === 0 ? 7 : 8);
    }
    // Keys seen again come from any run.
    const { key52 } = fillLikeMap(table, 12, 60_000, keys, map);
    for (const key of keys) expect(table.get(key)).toBe(map.get(key));
    for (let i = 0; i < 20_000; i++) {
      const key = key52();
      expect(table.has(key)).toBe(map.has(key));
    }
    // The file was unlinked when opened: nothing is left beside the dataset, during or after.
    expect(await readdir(dir)).toEqual([]);
    table.close();
    expect(table.size).toBe(0);
    await rm(dir, { recursive: true });
  });

  it('opens no file while its entries fit in memory', () => {
    const table = new SpillingNumberTable('/nonexistent-dir', 100);
    for (let key = 0; key < 99; key++) table.add(key * 2 ** 30, key);
    expect(table.get(98 * 2 ** 30)).toBe(98);
    // The 100th entry needs the file, and the folder does not exist: the error says where.
    expect(() => table.add(2 ** 40, 1)).toThrow(/nonexistent-dir/);
  });
});
