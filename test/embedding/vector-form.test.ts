import { tableFromIPC, tableToIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import {
  binaryBytes,
  FULL_FORM,
  float16Bits,
  float16Value,
  formOfPlan,
  formOfPlanKey,
  formParameter,
  int8Scale,
  keepDims,
  knownDims,
  packSigns,
  parseVectorTypes,
  reusableForm,
  toInt8,
} from '../../src/embedding/vector-form.js';
import { UsageError } from '../../src/errors.js';
import { concatBatches } from '../../src/output/concat.js';
import type { PartRows } from '../../src/output/rows.js';
import { partTable } from '../../src/output/table.js';

describe('the vector form', () => {
  it('is a plan parameter only when it is not the whole float32 vectors', () => {
    expect(formParameter(FULL_FORM)).toEqual({});
    const form = { dims: 256, types: parseVectorTypes(['binary', 'float32', 'int8']) };
    expect(form.types).toEqual(['int8', 'binary']);
    expect(formParameter(form)).toEqual({ vectors: { dims: 256, types: ['int8', 'binary'] } });
    expect(formOfPlan(formParameter(form))).toEqual(form);
    expect(formOfPlanKey(JSON.stringify({ overlap: 0, ...formParameter(form) }))).toEqual(form);
    expect(formOfPlanKey('{"overlap":0}')).toEqual(FULL_FORM);
    expect(formOfPlanKey('not json')).toEqual(FULL_FORM);
  });

  it('names the field of an unknown type', () => {
    expect(() => parseVectorTypes(['int4'], 'output.vectorTypes')).toThrow(UsageError);
    expect(() => parseVectorTypes(['int4'], 'output.vectorTypes')).toThrow(
      'output.vectorTypes: "int4" is not a vector type: use float16, int8 or binary',
    );
  });

  it('keeps a re-normalised prefix, and a prefix of a prefix is the prefix', () => {
    const vector = Float32Array.from({ length: 12 }, (_, i) => Math.sin(i + 1));
    const eight = keepDims(vector, 8)!;
    const four = keepDims(vector, 4)!;
    expect(Math.hypot(...eight)).toBeCloseTo(1, 6);
    const fourOfEight = keepDims(eight, 4)!;
    for (const [i, x] of fourOfEight.entries()) expect(x).toBeCloseTo(four[i]!, 6);
    expect(keepDims(vector, 12)).toBe(vector);
    expect(keepDims(vector, undefined)).toBe(vector);
    expect(keepDims(four, 8)).toBeUndefined();
    expect([...keepDims(new Float32Array(6), 3)!]).toEqual([0, 0, 0]);
  });

  it('reuses whole vectors for any prefix, a prefix only for a shorter one', () => {
    expect(reusableForm(FULL_FORM, FULL_FORM)).toBe(true);
    expect(reusableForm(FULL_FORM, { dims: 64, types: [] })).toBe(true);
    expect(reusableForm({ dims: 64, types: [] }, { dims: 32, types: ['int8'] })).toBe(true);
    expect(reusableForm({ dims: 64, types: [] }, { dims: 128, types: [] })).toBe(false);
    expect(reusableForm({ dims: 64, types: [] }, FULL_FORM)).toBe(false);
  });

  it('knows the dims before any answer: --dims, or a whole current version of the model', () => {
    const current = { model: 'm', dims: 1536, plan: {} };
    expect(knownDims({ dims: 256, types: [] }, 'm', current)).toBe(256);
    expect(knownDims(FULL_FORM, 'm', current)).toBe(1536);
    expect(knownDims(FULL_FORM, 'other', current)).toBeUndefined();
    expect(
      knownDims(FULL_FORM, 'm', { ...current, dims: 256, plan: { vectors: { dims: 256 } } }),
    ).toBeUndefined();
  });

  it('rounds to half precision, ties to even, as IEEE does', () => {
    expect(float16Bits(1)).toBe(0x3c00);
    expect(float16Bits(-2)).toBe(0xc000);
    expect(float16Bits(65504)).toBe(0x7bff);
    expect(float16Bits(65520)).toBe(0x7c00); // rounds up to infinity
    expect(float16Bits(2 ** -24)).toBe(0x0001); // the smallest subnormal
    expect(float16Bits(2 ** -26)).toBe(0x0000);
    expect(float16Bits(1 + 2 ** -11)).toBe(0x3c00); // a tie to the even 1
    expect(float16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(float16Bits(Number.NaN) & 0x7e00).toBe(0x7e00);
    for (const x of [0.1, -0.333, 1e-5, 3.3, 60000, -1e-7]) {
      const back = float16Value(float16Bits(x));
      expect(Math.abs(back - x)).toBeLessThanOrEqual(Math.max(Math.abs(x) * 2 ** -11, 2 ** -25));
    }
  });

  it('quantizes to int8 with one scale, and packs signs first dimension first', () => {
    const vector = [0.5, -0.25, 0, 0.127];
    const scale = int8Scale(vector);
    expect(scale).toBeCloseTo(0.5 / 127, 12);
    expect(vector.map((x) => toInt8(x, scale))).toEqual([127, -63, 0, 32]); // -63.5: a half rounds up
    expect(int8Scale([0, 0])).toBe(0);
    const bits = new Uint8Array(binaryBytes(10));
    packSigns([1, -1, 1, 1, -1, -1, -1, -1, 0, -3], 0, 10, bits, 0);
    expect([...bits]).toEqual([0b10110000, 0b10000000]);
  });
});

describe('the quantized columns of a part', () => {
  const rows = (n: number, dims: number): PartRows => ({
    ids: Array.from({ length: n }, (_, i) => `d${i}`),
    chunkIndex: new Int32Array(n),
    texts: Array.from({ length: n }, () => 't'),
    tokens: new Int32Array(n),
    hashes: Array.from({ length: n }, (_, i) => `h${i}`),
    vectorRuns: [Float32Array.from({ length: n * dims }, (_, i) => Math.cos(i))],
    dims,
  });
  const metadata = {
    'embedpipe.plan': JSON.stringify({ vectors: { types: ['float16', 'int8', 'binary'] } }),
  };

  it('follow the plan in the metadata, survive Arrow IPC, and concatenate', () => {
    const table = tableFromIPC(tableToIPC(partTable(rows(3, 10), metadata), 'stream'));
    expect(table.schema.fields.map((f) => `${f.name}:${f.type}`).slice(6)).toEqual([
      'embedding_float16:FixedSizeList[10]<Float16>',
      'embedding_int8:FixedSizeList[10]<Int8>',
      'embedding_int8_scale:Float32',
      'embedding_binary:FixedSizeBinary[2]',
    ]);
    const joined = concatBatches(table.schema, [...table.batches, ...table.batches]);
    expect(joined.numRows).toBe(6);
    expect(joined.getChild('embedding_binary')!.get(4)).toEqual(table.getChild('embedding_binary')!.get(1));
    expect([...(joined.getChild('embedding_int8')!.get(5) as { toArray(): Int8Array }).toArray()]).toEqual([
      ...(table.getChild('embedding_int8')!.get(2) as { toArray(): Int8Array }).toArray(),
    ]);
    expect(partTable(rows(2, 4), {}).schema.fields).toHaveLength(6);
  });
});
