/** VectorCache: a byte budget, least recently used out first, and an order queue that stays bounded. */
import { describe, expect, it } from 'vitest';
import { VectorCache } from '../../src/output/vector-cache.js';

const vector = (n: number) => Float32Array.of(n, n, n, n); // 16 bytes

describe('VectorCache', () => {
  it('keeps what fits in its budget, evicting the least recently used first', () => {
    const cache = new VectorCache(3 * 16);
    cache.set('a', vector(1));
    cache.set('b', vector(2));
    cache.set('c', vector(3));
    expect(cache.get('a')).toEqual(vector(1)); // a is now the most recent
    cache.set('d', vector(4)); // evicts b
    expect(cache.get('b')).toBeUndefined();
    expect([cache.get('a'), cache.get('c'), cache.get('d')]).toEqual([vector(1), vector(3), vector(4)]);
    cache.set('c', vector(30)); // replaced, same size: nothing evicted
    expect(cache.size).toBe(3);
    expect(cache.get('c')).toEqual(vector(30));
  });

  it('evicts in order over many sets, at a constant cost per set', () => {
    const cache = new VectorCache(1000 * 16);
    for (let i = 0; i < 200_000; i++) cache.set(`h${i}`, vector(i));
    expect(cache.size).toBe(1000);
    expect(cache.get('h198999')).toBeUndefined();
    expect(cache.get('h199000')).toEqual(vector(199_000));
    expect(cache.queued).toBeLessThanOrEqual(4 * cache.size + 3072);
  });

  it('keeps its order queue bounded when a few entries are used again and again', () => {
    const cache = new VectorCache(10 * 16);
    for (let i = 0; i < 5; i++) cache.set(`hot${i}`, vector(i));
    for (let round = 0; round < 100_000; round++) cache.get(`hot${round % 5}`);
    expect(cache.size).toBe(5);
    expect(cache.queued).toBeLessThanOrEqual(4 * cache.size + 3072);
  });
});
