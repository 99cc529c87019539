import { describe, expect, it } from 'vitest';
import { OutputError } from '../../src/errors.js';
import { partRowsFromBatch } from '../../src/output/rows.js';
import { makeBatch } from './fixtures.js';

describe('partRowsFromBatch', () => {
  it('copies the columns and the vectors into one flat array', () => {
    const batch = makeBatch({ batchId: 'b', rows: 5, dims: 3, seed: 1 });
    const rows = partRowsFromBatch(batch);
    expect(rows.dims).toBe(3);
    expect(rows.ids).toEqual(batch.chunks.map((c) => c.documentId));
    expect(rows.texts).toEqual(batch.chunks.map((c) => c.text));
    expect(rows.hashes).toEqual(batch.chunks.map((c) => c.hash));
    expect([...rows.chunkIndex]).toEqual(batch.chunks.map((c) => c.index));
    expect([...rows.tokens]).toEqual(batch.chunks.map((c) => c.tokens));
    expect(rows.embeddings.length).toBe(15);
    batch.vectors.forEach((v, i) => {
      expect(rows.embeddings.subarray(i * 3, i * 3 + 3)).toEqual(v);
    });
    // A copy: later changes to the batch's vectors do not leak into the rows.
    batch.vectors[0]![0] = 42;
    expect(rows.embeddings[0]).not.toBe(42);
  });

  it('refuses mixed dims, wrong expected dims and a vector/chunk count mismatch', () => {
    const batch = makeBatch({ batchId: 'b', rows: 3, dims: 4, seed: 1 });
    const mixed = { ...batch, vectors: [batch.vectors[0]!, new Float32Array(5), batch.vectors[2]!] };
    expect(() => partRowsFromBatch(mixed)).toThrow(OutputError);
    expect(() => partRowsFromBatch(mixed)).toThrow(/vector 1 .* has 5 dims, expected 4/);
    expect(() => partRowsFromBatch(batch, 8)).toThrow(/expected 8/);
    expect(() => partRowsFromBatch({ ...batch, vectors: batch.vectors.slice(1) })).toThrow(
      /3 chunks but 2 vectors/,
    );
  });

  it('types an empty batch with the expected dims', () => {
    const empty = makeBatch({ batchId: 'e', rows: 0, dims: 4, seed: 1 });
    expect(partRowsFromBatch(empty, 4)).toMatchObject({ dims: 4, ids: [] });
    expect(partRowsFromBatch(empty).dims).toBe(0);
  });
});
