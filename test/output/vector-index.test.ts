/**
 * VectorIndex: stored vectors by content hash, from real files (single rows read alone, then the
 * whole file once many of its rows are asked for), and from memory for the rows this run committed
 * last and for vectors reused before (no file read: the tests remove the file to prove it).
 */
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { contentHash } from '../../src/content-hash.js';
import type { EmbeddedBatch } from '../../src/domain.js';
import { DatasetWriter } from '../../src/output/dataset.js';
import type { OutputFormat } from '../../src/output/part-file.js';
import { CACHED_FILES, VectorIndex } from '../../src/output/vector-index.js';
import { tempFolder } from '../helpers/temp.js';
import { makeBatch } from './fixtures.js';

const root = await tempFolder('embedpipe-vector-index-');
let n = 0;

/** The fixture's batch with real content hashes (its own are zero-padded: one key for all). */
function batchOf(batchId: string, rows: number, dims: number, seed: number): EmbeddedBatch {
  const batch = makeBatch({ batchId, rows, dims, seed });
  return { ...batch, chunks: batch.chunks.map((c) => ({ ...c, hash: contentHash('m', c.text) })) };
}

async function written(format: OutputFormat, batch: EmbeddedBatch): Promise<{ dir: string; file: string }> {
  const dir = join(root, `d${n++}`);
  const writer = new DatasetWriter({ dir, format, metadata: {} });
  const { file } = await writer.writeGroup([{ batchId: batch.batchId, batch }]);
  return { dir, file };
}

describe('VectorIndex', () => {
  for (const format of ['parquet', 'arrow'] as const) {
    it(`answers each row's own vector from a ${format} file, read alone or with the whole file`, async () => {
      const batch = batchOf('g1', 500, 16, 3);
      const { dir, file } = await written(format, batch);
      const index = await VectorIndex.build(dir, [file], format);
      expect(index.size).toBe(500);
      // One row at a time: each read alone.
      for (const row of [499, 0, 250, 3, 17, 498, 128, 1, 400, 42]) {
        const hash = batch.chunks[row]!.hash;
        expect(index.has(hash)).toBe(true);
        expect(index.origin(hash)).toBe('dataset');
        expect(await index.vector(hash)).toEqual(batch.vectors[row]);
      }
      // Many rows of one file at once: the file read whole; unknown hashes answer undefined.
      const missing = 'f'.repeat(64);
      const asked = [...batch.chunks.map((c) => c.hash).reverse(), missing];
      const vectors = await index.vectors(asked);
      expect(vectors.at(-1)).toBeUndefined();
      expect(vectors.slice(0, -1)).toEqual([...batch.vectors].reverse());
      expect(index.has('f'.repeat(64))).toBe(false);
      expect(await index.vector('f'.repeat(64))).toBeUndefined();
    });
  }

  it('keeps the vectors of rows committed last, and of vectors reused, in memory', async () => {
    const first = batchOf('a', 50, 8, 1);
    const { dir, file } = await written('parquet', first);
    const index = await VectorIndex.build(dir, [file]);
    const reusedHash = first.chunks[7]!.hash;
    expect(await index.vector(reusedHash)).toEqual(first.vectors[7]);

    const later = batchOf('b', 20, 8, 2);
    const { file: laterFile, dir: laterDir } = await written('parquet', later);
    index.addFile(
      join('..', laterDir.split('/').at(-1)!, laterFile),
      later.chunks.map((c) => c.hash),
      later.vectors,
    );
    expect(index.origin(later.chunks[3]!.hash)).toBe('run');

    // Neither file is there any more: both answers come from memory.
    await rm(dir, { recursive: true });
    await rm(laterDir, { recursive: true });
    expect(await index.vector(reusedHash)).toEqual(first.vectors[7]);
    for (const [row, chunk] of later.chunks.entries()) {
      expect(await index.vector(chunk.hash)).toEqual(later.vectors[row]);
    }
  });

  it('keeps the rows committed last up to 8 MB of vectors, the oldest file going first', async () => {
    const { dir } = await written('parquet', batchOf('seed', 1, 1024, 9));
    const index = await VectorIndex.build(dir, []);
    // 4 MB, 4 MB, then 1 MB of 1,024-dim vectors: the first file no longer fits.
    const files = [batchOf('a', 1024, 1024, 1), batchOf('b', 1024, 1024, 2), batchOf('c', 256, 1024, 3)];
    for (const [i, batch] of files.entries()) {
      index.addFile(
        `missing-${i}.parquet`,
        batch.chunks.map((c) => c.hash),
        batch.vectors,
      );
    }
    // The files are not on disk: what is answered came from memory.
    for (const batch of files.slice(1)) {
      expect(await index.vector(batch.chunks[5]!.hash)).toEqual(batch.vectors[5]);
    }
    await expect(index.vector(files[0]!.chunks[5]!.hash)).rejects.toThrow(/missing-0\.parquet/);
  });

  it('keeps the files used last, shares a read between batches asking at once, and keeps no failed read', async () => {
    const dir = join(root, `d${n++}`);
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: {} });
    const batches = Array.from({ length: CACHED_FILES + 1 }, (_, k) => batchOf(`f${k}`, 40, 8, k + 1));
    const files: string[] = [];
    for (const batch of batches)
      files.push((await writer.writeGroup([{ batchId: batch.batchId, batch }])).file);
    const index = await VectorIndex.build(dir, files);
    // Rows 0..9 of file k, several at once: the file is read whole.
    const rowsOf = (k: number, from = 0) => batches[k]!.chunks.slice(from, from + 10).map((c) => c.hash);
    const vectorsOf = (k: number, from = 0) => batches[k]!.vectors.slice(from, from + 10);

    // Two batches asking for the same file at once both get their rows.
    const [a, b] = await Promise.all([index.vectors(rowsOf(0)), index.vectors(rowsOf(0, 10))]);
    expect(a).toEqual(vectorsOf(0));
    expect(b).toEqual(vectorsOf(0, 10));
    for (let k = 1; k < CACHED_FILES; k++) await index.vectors(rowsOf(k));
    // File 0 used again, then one file more read: the least recently used (file 1) makes room.
    expect(await index.vectors(rowsOf(0, 20))).toEqual(vectorsOf(0, 20));
    expect(await index.vectors(rowsOf(CACHED_FILES))).toEqual(vectorsOf(CACHED_FILES));
    const away = join(root, `away-${n++}`);
    await rename(dir, away);
    expect(await index.vectors(rowsOf(0, 30))).toEqual(vectorsOf(0, 30)); // from memory
    await expect(index.vectors(rowsOf(1, 10))).rejects.toThrow();
    // The failed read was not kept: with the file back, the same rows are read.
    await rename(away, dir);
    expect(await index.vectors(rowsOf(1, 10))).toEqual(vectorsOf(1, 10));
  });
});
