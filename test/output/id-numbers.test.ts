import { describe, expect, it } from 'vitest';
import { hash32 } from '../../src/fingerprint.js';
import { IdNumbers } from '../../src/id-numbers.js';

describe('IdNumbers', () => {
  it('numbers ids in order of first appearance and finds each again exactly', () => {
    const ids = new IdNumbers();
    expect(ids.add('a')).toBe(0);
    expect(ids.add('b')).toBe(1);
    expect(ids.add('a')).toBe(0);
    expect(ids.get('b')).toBe(1);
    expect(ids.get('c')).toBe(-1);
    expect(ids.has('a')).toBe(true);
    expect(ids.has('')).toBe(false);
    expect(ids.add('')).toBe(2);
    expect(ids.idOf(2)).toBe('');
    expect([...ids.values()]).toEqual(['a', 'b', '']);
    expect(() => ids.idOf(3)).toThrow(/no id numbered 3 \(3 ids\)/);
  });

  it('keeps every number through growth, ids built afresh (not the same string objects)', () => {
    const ids = new IdNumbers();
    const n = 200_000;
    for (let i = 0; i < n; i++) expect(ids.add(`doc-${i}`)).toBe(i);
    expect(ids.size).toBe(n);
    for (let i = 0; i < n; i += 7) expect(ids.get(['doc', String(i)].join('-'))).toBe(i);
    expect(ids.get('doc-200000')).toBe(-1);
  });

  it('tells apart ids whose hashes collide in the table (linear probing compares the ids)', () => {
    // Ids that land on the same slot of a 1,024-slot table.
    const slotOf = (id: string) => hash32(id) & 1023;
    const target = slotOf('x0');
    const colliding = ['x0'];
    for (let i = 1; colliding.length < 5; i++) if (slotOf(`x${i}`) === target) colliding.push(`x${i}`);
    const ids = new IdNumbers();
    expect(colliding.map((id) => ids.add(id))).toEqual([0, 1, 2, 3, 4]);
    expect(colliding.map((id) => ids.get(id))).toEqual([0, 1, 2, 3, 4]);
    expect(ids.get('x-absent')).toBe(-1);
  });

  it('hashes UTF-16 content: astral, combining and RTL ids stay distinct', () => {
    const ids = new IdNumbers();
    const names = ['😀', '😁', 'e\u0301', 'é', 'שלום', 'مرحبا', '\u0000', ''];
    const numbers = names.map((_, i) => i);
    expect(names.map((id) => ids.add(id))).toEqual(numbers);
    expect(names.map((id) => ids.get(id))).toEqual(numbers);
  });
});
