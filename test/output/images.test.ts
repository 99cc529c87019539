/**
 * The image columns: present (nullable) in every file of a dataset whose plan has images, absent
 * from a text dataset; read back by DuckDB, also after a compaction.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Chunk, EmbeddedBatch, ImageRef } from '../../src/domain.js';
import { OutputError } from '../../src/errors.js';
import { compactParts } from '../../src/output/compact.js';
import { DatasetWriter, planHasImages } from '../../src/output/dataset.js';
import { tempFolder } from '../corpus/helpers.js';
import { embeddedBatch } from '../helpers/chunks.js';
import { query, sqlString, TEXT_DATASET_COLUMNS } from '../helpers/duckdb.js';

const root = await tempFolder();
const IMAGE_PLAN = JSON.stringify({
  measure: 'utf8-bytes',
  budgetTokens: 100,
  images: { bytesPerRequest: 10 },
});
const TEXT_PLAN = JSON.stringify({ measure: 'utf8-bytes', budgetTokens: 100 });

const file: ImageRef = {
  kind: 'file',
  source: 'photos/cat.png',
  path: '/nowhere/photos/cat.png',
  mime: 'image/png',
  bytes: 10,
  sha256: 'a'.repeat(64),
  urlBytes: 38,
};
const url: ImageRef = { kind: 'url', source: 'https://x/a.jpg', url: 'https://x/a.jpg', urlBytes: 15 };

function batch(batchId: string, images: (ImageRef | undefined)[]): EmbeddedBatch {
  const chunks: Chunk[] = images.map((image, i) => ({
    documentId: `${batchId}-${i}`,
    index: 0,
    text: image ? '' : `text ${i}`,
    start: 0,
    end: 0,
    bytes: 0,
    tokens: 1,
    hash: `${batchId}-h${i}`,
    ...(image ? { image } : {}),
  }));
  return embeddedBatch(
    batchId,
    'm',
    chunks,
    chunks.map((_, i) => Float32Array.from([i, 1, 2])),
  );
}

const columnsOf = async (glob: string) =>
  (await query(`DESCRIBE SELECT * FROM read_parquet(${sqlString(glob)})`)).map((r) => [
    r['column_name'],
    r['column_type'],
  ]);

describe('image columns', () => {
  it('are decided by the plan', () => {
    expect(planHasImages(IMAGE_PLAN)).toBe(true);
    expect(planHasImages(TEXT_PLAN)).toBe(false);
    expect(planHasImages('plan-1')).toBe(false);
    expect(planHasImages(undefined)).toBe(false);
  });

  it('hold the source and sha256 of each image (null without one), in parts and compacted files', async () => {
    const dir = join(root, 'images');
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: { 'embedpipe.plan': IMAGE_PLAN } });
    await writer.writePart('b1', batch('b1', [file, undefined, url]));
    await writer.writePart('b2', batch('b2', [undefined, undefined]));
    await writer.writeGroup([{ batchId: 'b3', batch: batch('b3', [url, file]) }]);
    const glob = `${dir}/*.parquet`;
    const expected = [
      ['b1-0', 'photos/cat.png', 'a'.repeat(64)],
      ['b1-1', null, null],
      ['b1-2', 'https://x/a.jpg', null],
      ['b2-0', null, null],
      ['b2-1', null, null],
      ['b3-0', 'https://x/a.jpg', null],
      ['b3-1', 'photos/cat.png', 'a'.repeat(64)],
    ];
    const read = async () =>
      (
        await query(`SELECT id, image_source, image_sha256 FROM read_parquet(${sqlString(glob)}) ORDER BY id`)
      ).map((r) => [r['id'], r['image_source'], r['image_sha256']]);
    expect(await read()).toEqual(expected);
    expect((await columnsOf(glob)).slice(-2)).toEqual([
      ['image_source', 'VARCHAR'],
      ['image_sha256', 'VARCHAR'],
    ]);
    const names = (await readdir(dir)).filter((n) => n.endsWith('.parquet')).sort();
    await compactParts({ dir, format: 'parquet', parts: names });
    expect(await read()).toEqual(expected);
  });

  it('are absent from a text dataset, which refuses a row with an image', async () => {
    const dir = join(root, 'text');
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: { 'embedpipe.plan': TEXT_PLAN } });
    await writer.writePart('t1', batch('t1', [undefined]));
    expect((await columnsOf(`${dir}/*.parquet`)).map(([name]) => name)).toEqual(TEXT_DATASET_COLUMNS);
    await expect(writer.writePart('t2', batch('t2', [file]))).rejects.toThrow(OutputError);
  });

  it('are written in Arrow IPC too', async () => {
    const dir = join(root, 'arrow');
    const writer = new DatasetWriter({ dir, format: 'arrow', metadata: { 'embedpipe.plan': IMAGE_PLAN } });
    const written = await writer.writePart('a1', batch('a1', [file, undefined]));
    const { tableFromIPC } = await import('apache-arrow');
    const { readFile } = await import('node:fs/promises');
    const table = tableFromIPC(await readFile(join(dir, written.file)));
    expect(table.getChild('image_source')?.toArray()).toEqual(['photos/cat.png', null]);
    expect(table.getChild('image_sha256')?.toArray()).toEqual(['a'.repeat(64), null]);
  });
});
