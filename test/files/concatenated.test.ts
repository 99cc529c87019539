import { describe, expect, it } from 'vitest';
import { concatenated } from '../../src/concatenated.js';

describe('concatenated', () => {
  it('is flatMap: every picked list in order, empty lists and items included', () => {
    const items = [{ xs: [1, 2] }, { xs: [] }, { xs: [3] }, { xs: [4, 5, 6] }];
    expect(concatenated(items, (item) => item.xs)).toEqual(items.flatMap((item) => item.xs));
    expect(concatenated([], (item: { xs: number[] }) => item.xs)).toEqual([]);
  });

  it('keeps the elements themselves (arrays inside are not flattened) and copies nothing in place', () => {
    const inner = [9];
    const lists = [[inner, [8]], [[7]]];
    const out = concatenated(lists, (list) => list);
    expect(out).toEqual([[9], [8], [7]]);
    expect(out[0]).toBe(inner);
    out.push([0]);
    expect(lists).toEqual([[[9], [8]], [[7]]]);
  });
});
