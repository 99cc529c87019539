/** DatasetWriter: part naming, resume, idempotent rewrite, stale-part cleanup, failures. */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutputError } from '../../src/errors.js';
import { compactParts } from '../../src/output/compact.js';
import { DatasetWriter } from '../../src/output/dataset.js';
import { parquetFooter } from '../../src/output/parquet.js';
import { encodePart, writeEncodedPart } from '../../src/output/part-file.js';
import { partRowsFromBatch } from '../../src/output/rows.js';
import { makeBatch } from './fixtures.js';

let root: string;
let n = 0;
/** A fresh folder (not created) for each test. */
const freshDir = () => join(root, `d${n++}`);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'embedpipe-dataset-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('DatasetWriter', () => {
  it('names parts by batch id and refuses ids that are not safe file names', () => {
    const parquet = new DatasetWriter({ dir: freshDir(), format: 'parquet', metadata: {} });
    const arrow = new DatasetWriter({ dir: freshDir(), format: 'arrow', metadata: {} });
    expect(parquet.partFileName('b-0123abcd')).toBe('part-b-0123abcd.parquet');
    expect(arrow.partFileName('b_1.2')).toBe('part-b_1.2.arrow');
    for (const bad of ['', '../x', 'a/b', 'a\\b', '.hidden', 'a:b', 'x'.repeat(201)]) {
      expect(() => parquet.partFileName(bad), bad).toThrow(OutputError);
    }
  });

  it('creates the folder, writes atomically (no temp file left) and reports the part', async () => {
    const dir = join(freshDir(), 'nested', 'out');
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: {} });
    expect(await writer.hasPart('b1')).toBe(false);
    expect(await writer.existingParts()).toEqual(new Set());
    const part = await writer.writePart('b1', makeBatch({ batchId: 'b1', rows: 10, dims: 3, seed: 1 }));
    const bytes = await readFile(join(dir, 'part-b1.parquet'));
    expect(part).toEqual({ file: 'part-b1.parquet', rows: 10, bytes: bytes.byteLength });
    expect(await readdir(dir)).toEqual(['part-b1.parquet']);
    expect(await writer.hasPart('b1')).toBe(true);
    expect(await writer.existingParts()).toEqual(new Set(['b1']));
  });

  it('replaces the same file when a batch is written again (idempotent), also concurrently', async () => {
    const dir = freshDir();
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: {} });
    await writer.writePart('b1', makeBatch({ batchId: 'b1', rows: 10, dims: 3, seed: 1 }));
    await writer.writePart('b1', makeBatch({ batchId: 'b1', rows: 4, dims: 3, seed: 2 }));
    expect(await readdir(dir)).toEqual(['part-b1.parquet']);
    expect((await parquetFooter(join(dir, 'part-b1.parquet'))).rows).toBe(4);

    // At-least-once delivery: two workers finishing the same batch at once.
    const batch = makeBatch({ batchId: 'b2', rows: 64, dims: 256, seed: 3 });
    await Promise.all([
      writer.writePart('b2', batch),
      writer.writePart('b2', batch),
      writer.writePart('b2', batch),
    ]);
    expect((await readdir(dir)).sort()).toEqual(['part-b1.parquet', 'part-b2.parquet']);
    expect((await parquetFooter(join(dir, 'part-b2.parquet'))).rows).toBe(64);
  });

  it('withdraws a late part of a batch a compaction already took in, and only such a part', async () => {
    const dir = freshDir();
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: {} });
    const late = makeBatch({ batchId: 'b1', rows: 5, dims: 3, seed: 1 });
    await writer.writePart('b1', late);
    await writer.writePart('b2', makeBatch({ batchId: 'b2', rows: 3, dims: 3, seed: 2 }));
    const { files } = await compactParts({ dir, format: 'parquet', parts: ['part-b1.parquet'] });
    const dataFile = files[0]!.file;
    // A worker that stalled past its job's lock renames its part of b1 back into place.
    await writer.writePart('b1', late);
    expect(await writer.withdrawCompactedPart('b1')).toBe(true);
    expect(await writer.withdrawCompactedPart('b2')).toBe(false);
    expect((await readdir(dir)).sort()).toEqual([dataFile, 'part-b2.parquet'].sort());
    expect(await writer.batchFiles()).toEqual(
      new Map([
        ['b1', dataFile],
        ['b2', 'part-b2.parquet'],
      ]),
    );
  });

  it('lists only complete parts of its own format', async () => {
    const dir = freshDir();
    await mkdir(dir);
    for (const name of [
      'part-a.parquet',
      'part-b.parquet',
      'part-c.arrow',
      '.part-d.parquet.tmp-123-abcdef',
      '_manifest.json',
      '_rejects.jsonl',
      'notes.txt',
      'part-.parquet',
    ]) {
      await writeFile(join(dir, name), 'x');
    }
    const parquet = new DatasetWriter({ dir, format: 'parquet', metadata: {} });
    const arrow = new DatasetWriter({ dir, format: 'arrow', metadata: {} });
    expect(await parquet.existingParts()).toEqual(new Set(['a', 'b']));
    expect(await arrow.existingParts()).toEqual(new Set(['c']));
    expect(await parquet.hasPart('d')).toBe(false);
    expect(await arrow.hasPart('c')).toBe(true);
  });

  it('removes parts outside the current plan (either format) and nothing else', async () => {
    const dir = freshDir();
    await mkdir(dir);
    const others = ['.part-x.parquet.tmp-1-ab', '_manifest.json', '_rejects.jsonl', 'notes.txt'];
    for (const name of ['part-a.parquet', 'part-b.parquet', 'part-old.parquet', 'part-a.arrow', ...others]) {
      await writeFile(join(dir, name), 'x');
    }
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: {} });
    expect(await writer.removeStaleParts(new Set(['a', 'b', 'missing']))).toEqual([
      'part-a.arrow',
      'part-old.parquet',
    ]);
    expect((await readdir(dir)).sort()).toEqual([...others, 'part-a.parquet', 'part-b.parquet'].sort());
    expect(await writer.removeStaleParts(new Set(['a', 'b']))).toEqual([]);
    expect(
      await new DatasetWriter({ dir: freshDir(), format: 'arrow', metadata: {} }).removeStaleParts(new Set()),
    ).toEqual([]);
  });

  it('refuses a batch with other dims than the run and writes nothing', async () => {
    const dir = freshDir();
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: {}, dims: 4 });
    await expect(
      writer.writePart('b', makeBatch({ batchId: 'b', rows: 2, dims: 3, seed: 1 })),
    ).rejects.toThrow(/has 3 dims, expected 4/);
    expect(await writer.existingParts()).toEqual(new Set());
  });

  it('a failed write throws OutputError naming the path and leaves no partial or temp file', async () => {
    const dir = freshDir();
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: {} });
    // The part's path is taken by a folder: the temp file is written, the rename fails.
    await mkdir(join(dir, 'part-b.parquet'), { recursive: true });
    const error = await writer
      .writePart('b', makeBatch({ batchId: 'b', rows: 2, dims: 3, seed: 1 }))
      .catch((e) => e);
    expect(error).toBeInstanceOf(OutputError);
    expect(error.message).toContain(join(dir, 'part-b.parquet'));
    expect(error.message).toMatch(/EISDIR|EEXIST|ENOTEMPTY|EPERM/);
    expect(await readdir(dir)).toEqual(['part-b.parquet']);
    expect(await readdir(join(dir, 'part-b.parquet'))).toEqual([]);
  });

  it('an output folder that cannot be created throws OutputError naming it', async () => {
    const file = join(freshDir());
    await writeFile(file, 'not a folder');
    const writer = new DatasetWriter({ dir: join(file, 'out'), format: 'arrow', metadata: {} });
    const error = await writer
      .writePart('b', makeBatch({ batchId: 'b', rows: 1, dims: 3, seed: 1 }))
      .catch((e) => e);
    expect(error).toBeInstanceOf(OutputError);
    expect(error.message).toContain(join(file, 'out'));
    expect(error.message).toMatch(/ENOTDIR|EEXIST/);
  });
});

describe('writeEncodedPart', () => {
  it('renames a part in only when its file holds the rows expected (Parquet and Arrow)', async () => {
    const rows = partRowsFromBatch(makeBatch({ batchId: 'c', rows: 5, dims: 4, seed: 2 }));
    for (const format of ['parquet', 'arrow'] as const) {
      const dir = freshDir();
      await mkdir(dir, { recursive: true });
      const path = join(dir, `part-c.${format}`);
      const bytes = encodePart(format, rows, {}, 'snappy');
      const error = await writeEncodedPart(format, path, () => ({ bytes, rows: 6 }), 'part c').catch(
        (e) => e,
      );
      expect(error).toBeInstanceOf(OutputError);
      expect(error.message).toBe('part c: encoded 5 rows, expected 6');
      expect(await readdir(dir)).toEqual([]);
      expect(await writeEncodedPart(format, path, () => ({ bytes, rows: 5 }), 'part c')).toEqual({
        rows: 5,
        bytes: bytes.reduce((sum, piece) => sum + piece.byteLength, 0),
      });
      expect(await readdir(dir)).toEqual([`part-c.${format}`]);
      // An encoder that throws: no file, no temp file left behind, an OutputError naming the file.
      const failed = await writeEncodedPart(
        format,
        join(dir, `part-d.${format}`),
        () => {
          throw new Error('wasm said no');
        },
        'part d',
      ).catch((e) => e);
      expect(failed).toBeInstanceOf(OutputError);
      expect(failed.message).toContain(`part-d.${format}: wasm said no`);
      expect(await readdir(dir)).toEqual([`part-c.${format}`]);
    }
  });
});
