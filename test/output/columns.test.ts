/** readColumns: exactly the columns asked for, with their values, from Parquet and Arrow data files. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OutputError } from '../../src/errors.js';
import { readColumns } from '../../src/output/columns.js';
import { DatasetWriter } from '../../src/output/dataset.js';
import { tempFolder } from '../helpers/temp.js';
import { makeBatch } from './fixtures.js';

const root = await tempFolder('embedpipe-columns-');

describe('readColumns', () => {
  for (const format of ['parquet', 'arrow'] as const) {
    it(`reads the columns asked for from a ${format} file, with and without the vectors`, async () => {
      const dir = join(root, format);
      const writer = new DatasetWriter({ dir, format, metadata: {} });
      const batches = [
        makeBatch({ batchId: 'a', rows: 700, dims: 8, seed: 1 }),
        makeBatch({ batchId: 'b', rows: 300, dims: 8, seed: 2 }),
      ];
      const { file } = await writer.writeGroup(batches.map((batch) => ({ batchId: batch.batchId, batch })));
      const chunks = batches.flatMap((b) => b.chunks);
      const vectors = batches.flatMap((b) => b.vectors);
      const path = join(dir, file);

      const hashes = await readColumns(path, format, ['content_hash']);
      expect(hashes.schema.fields.map((f) => f.name)).toEqual(['content_hash']);
      expect(hashes.getChild('content_hash')!.toArray()).toEqual(chunks.map((c) => c.hash));

      const keys = await readColumns(path, format, ['id', 'chunk_index', 'content_hash']);
      expect(keys.schema.fields.map((f) => f.name)).toEqual(['id', 'chunk_index', 'content_hash']);
      expect(keys.getChild('id')!.toArray()).toEqual(chunks.map((c) => c.documentId));
      expect([...keys.getChild('chunk_index')!.toArray()]).toEqual(chunks.map((c) => c.index));

      const withVectors = await readColumns(path, format, ['embedding', 'content_hash']);
      expect(withVectors.schema.fields.map((f) => f.name)).toEqual(['embedding', 'content_hash']);
      expect(withVectors.numRows).toBe(1000);
      for (const row of [0, 699, 700, 999]) {
        expect(withVectors.getChild('embedding')!.get(row)!.toArray()).toEqual(vectors[row]);
      }
    });
  }

  it('names the file and the columns when it cannot read them', async () => {
    const path = join(root, 'missing.parquet');
    const error = await readColumns(path, 'parquet', ['content_hash']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutputError);
    expect((error as Error).message).toContain(`cannot read content_hash from ${path}`);
  });
});
