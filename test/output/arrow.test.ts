/** Arrow IPC parts read back with apache-arrow: the FixedSizeList<Float32> type intact, floats exact. */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DataType,
  type FixedSizeList,
  type Float32,
  Precision,
  Type,
  tableFromIPC,
  tableToIPC,
} from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arrowFileMetadata, encodeArrowIpcFile } from '../../src/output/arrow.js';
import { DatasetWriter } from '../../src/output/dataset.js';
import { fileBatches } from '../../src/output/file-batches.js';
import { flatVectors, partRowsFromBatch } from '../../src/output/rows.js';
import { firstBitDifference, makeBatch } from './fixtures.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'embedpipe-arrow-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('Arrow IPC parts', () => {
  it.each([3, 1536])('round-trips every column and float exactly with dims %i', async (dims) => {
    const dir = join(root, `dims-${dims}`);
    const writer = new DatasetWriter({ dir, format: 'arrow', metadata: { 'embedpipe.model': 'm' }, dims });
    const batch = makeBatch({ batchId: `a${dims}`, rows: 130, dims, seed: dims });
    const part = await writer.writePart(batch.batchId, batch);
    expect(part).toEqual({ file: `part-a${dims}.arrow`, rows: 130, bytes: expect.any(Number) });

    const table = tableFromIPC(await readFile(join(dir, part.file)));
    expect(table.numRows).toBe(130);
    expect(table.schema.fields.map((f) => [f.name, String(f.type), f.nullable])).toEqual([
      ['id', 'Utf8', false],
      ['chunk_index', 'Int32', false],
      ['text', 'Utf8', false],
      ['embedding', `FixedSizeList[${dims}]<Float32>`, false],
      ['tokens', 'Int32', false],
      ['content_hash', 'Utf8', false],
    ]);
    // Read-back types are the generic classes (Float, Int): check ids and parameters, not classes.
    const embeddingType = table.schema.fields[3]!.type as FixedSizeList<Float32>;
    expect(DataType.isFixedSizeList(embeddingType)).toBe(true);
    expect(embeddingType.listSize).toBe(dims);
    const item = embeddingType.children[0]!;
    expect([item.name, item.nullable, item.type.typeId, (item.type as Float32).precision]).toEqual([
      'item',
      false,
      Type.Float,
      Precision.SINGLE,
    ]);
    expect(table.schema.metadata.get('embedpipe.model')).toBe('m');
    expect(table.schema.metadata.get('embedpipe.batch_id')).toBe(`a${dims}`);

    const column = (name: string) => table.getChild(name)!;
    // The vector column's values, flat, as one Float32Array.
    const flat = column('embedding').data[0]!.children[0]!.values as Float32Array;
    expect(flat).toBeInstanceOf(Float32Array);
    batch.chunks.forEach((chunk, i) => {
      expect(column('id').get(i)).toBe(chunk.documentId);
      expect(column('chunk_index').get(i)).toBe(chunk.index);
      expect(column('text').get(i)).toBe(chunk.text);
      expect(column('tokens').get(i)).toBe(chunk.tokens);
      expect(column('content_hash').get(i)).toBe(chunk.hash);
      expect(firstBitDifference(flat.subarray(i * dims, (i + 1) * dims), batch.vectors[i]!), `row ${i}`).toBe(
        -1,
      );
    });
  });

  it('encodes straight from PartRows (no dataset needed)', () => {
    const rows = partRowsFromBatch(makeBatch({ batchId: 'x', rows: 3, dims: 4, seed: 2 }));
    const table = tableFromIPC(encodeArrowIpcFile(rows, {}));
    expect(table.numRows).toBe(3);
    expect(table.getChild('embedding')!.get(2)!.toArray()).toEqual(flatVectors(rows).subarray(8, 12));
  });

  it('names an Arrow stream (not a file) where a data file is read, as an output error', async () => {
    const path = join(root, 'stream.arrow');
    await writeFile(
      path,
      tableToIPC(
        tableFromIPC(
          encodeArrowIpcFile(partRowsFromBatch(makeBatch({ batchId: 's', rows: 3, dims: 4, seed: 1 })), {}),
        ),
        'stream',
      ),
    );
    await expect(arrowFileMetadata(path)).rejects.toThrow(`${path} is not an Arrow IPC file`);
    await expect(arrowFileMetadata(path)).rejects.toMatchObject({ exitCode: 7 });
    const read = async () => {
      for await (const _ of fileBatches(path, 'arrow')) {
        // nothing: the first read refuses
      }
    };
    await expect(read()).rejects.toThrow(`${path} is not an Arrow IPC file`);
  });
});
