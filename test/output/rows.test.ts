import { describe, expect, it } from 'vitest';
import { OutputError } from '../../src/errors.js';
import { flatVectors, partRowsFromBatch } from '../../src/output/rows.js';
import { makeBatch } from './fixtures.js';

describe('partRowsFromBatch', () => {
  it('takes the columns, and the vectors as views where they are', () => {
    const batch = makeBatch({ batchId: 'b', rows: 5, dims: 3, seed: 1 });
    const rows = partRowsFromBatch(batch);
    expect(rows.dims).toBe(3);
    expect(rows.ids).toEqual(batch.chunks.map((c) => c.documentId));
    expect(rows.texts).toEqual(batch.chunks.map((c) => c.text));
    expect(rows.hashes).toEqual(batch.chunks.map((c) => c.hash));
    expect([...rows.chunkIndex]).toEqual(batch.chunks.map((c) => c.index));
    expect([...rows.tokens]).toEqual(batch.chunks.map((c) => c.tokens));
    const flat = flatVectors(rows);
    expect(flat.length).toBe(15);
    batch.vectors.forEach((v, i) => {
      expect(flat.subarray(i * 3, i * 3 + 3)).toEqual(v);
    });
    // Views, not copies (a part is encoded before anything can change them): one run per vector here,
    // as each of these vectors has a buffer of its own.
    expect(rows.vectorRuns.map((run) => run.buffer)).toEqual(batch.vectors.map((v) => v.buffer));
  });

  it("joins the vectors of one answer's buffer into one run, and starts a run where they leave it", () => {
    const dims = 4;
    const answer = Float32Array.from({ length: 5 * dims }, (_, i) => i);
    const reused = Float32Array.from({ length: dims }, (_, i) => 100 + i);
    const view = (row: number) => answer.subarray(row * dims, (row + 1) * dims);
    const batch = makeBatch({ batchId: 'b', rows: 6, dims, seed: 1 });
    // Rows 0-2 of the answer in order, a vector from elsewhere, then rows 4 and 3 (out of order).
    const vectors = [view(0), view(1), view(2), reused, view(4), view(3)];
    const rows = partRowsFromBatch({ ...batch, vectors });
    expect(rows.vectorRuns.map((run) => [run.buffer === answer.buffer, run.byteOffset, run.length])).toEqual([
      [true, 0, 12],
      [false, 0, 4],
      [true, 64, 4],
      [true, 48, 4],
    ]);
    expect([...flatVectors(rows)]).toEqual(vectors.flatMap((v) => [...v]));
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
