import { describe, expect, it } from 'vitest';
import { roundToFloat16 } from '../../src/embedding/vector-form.js';
import { applyVariant, bytesPerVector, parseVariants } from '../../src/eval/variants.js';
import { versionOf } from './versions.js';

const version = (rows: number[][]) => versionOf(rows.map((v, i) => ({ id: `d${i}`, v })));

describe('smaller vectors', () => {
  it('parses variants and refuses others by name', () => {
    expect(parseVariants('dims:256, int8,binary,float16').map((v) => v.label)).toEqual([
      'dims:256',
      'int8',
      'binary',
      'float16',
    ]);
    expect(() => parseVariants('int4')).toThrow(
      /"int4" is not a variant: use dims:N, float16, int8 or binary/,
    );
    expect(() => parseVariants('dims:0')).toThrow(/keeps no dimension/);
  });

  it('rounds to the nearest half-precision value, ties to even', () => {
    expect(roundToFloat16(1)).toBe(1);
    expect(roundToFloat16(1 + 2 ** -11)).toBe(1); // a tie: 1 is even
    expect(roundToFloat16(1 + 3 * 2 ** -11)).toBe(1 + 2 ** -9); // a tie: rounds to the even neighbour
    expect(roundToFloat16(0.1)).toBeCloseTo(0.0999755859375, 12);
    expect(roundToFloat16(2 ** -20)).toBe(2 ** -20); // a subnormal, exact
    expect(roundToFloat16(-70_000)).toBe(Number.NEGATIVE_INFINITY);
  });

  it('keeps a prefix re-normalised, and counts the bytes of each form', () => {
    const v = applyVariant(version([[3, 4, 12]]), { kind: 'dims', dims: 2, label: 'dims:2' });
    expect(Array.from(v.matrix)).toEqual([expect.closeTo(0.6, 6), expect.closeTo(0.8, 6)]);
    expect(v.name).toBe('v000001 dims:2');
    expect(bytesPerVector(undefined, 384)).toBe(1536);
    expect(bytesPerVector({ kind: 'float16', label: 'float16' }, 384)).toBe(768);
    expect(bytesPerVector({ kind: 'int8', label: 'int8' }, 384)).toBe(388);
    expect(bytesPerVector({ kind: 'binary', label: 'binary' }, 384)).toBe(48);
    expect(() => applyVariant(version([[1, 2]]), { kind: 'dims', dims: 3, label: 'dims:3' })).toThrow(
      /more than the 2 dims/,
    );
  });

  it('int8 rounds each value to a 127th of the row maximum; binary keeps the signs', () => {
    const int8 = applyVariant(version([[1, 0.5, -0.25, 0.001]]), { kind: 'int8', label: 'int8' });
    const max = Math.max(...Array.from(int8.matrix, Math.abs));
    for (const value of int8.matrix)
      expect(Math.abs(Math.round((value / max) * 127) - (value / max) * 127)).toBeLessThan(1e-3);
    const binary = applyVariant(version([[0.3, -0.2, 0, -5]]), { kind: 'binary', label: 'binary' });
    expect(Array.from(binary.matrix, Math.sign)).toEqual([1, -1, 1, -1]);
  });
});
