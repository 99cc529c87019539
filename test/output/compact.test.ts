/**
 * Compaction of part files into large data files, read back by independent readers: DuckDB for
 * Parquet (rows in order, every float, row groups, metadata), apache-arrow for Arrow IPC.
 */
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedBatch } from '../../src/domain.js';
import { OutputError } from '../../src/errors.js';
import { compactParts } from '../../src/output/compact.js';
import { COMPACTED_BATCHES_KEY } from '../../src/output/compacted-file.js';
import { DatasetWriter, type OutputFormat } from '../../src/output/dataset.js';
import { fileBatches, readAhead } from '../../src/output/file-batches.js';
import { readRowKeys } from '../../src/output/row-keys.js';
import { query, sqlString } from '../helpers/duckdb.js';
import { firstBitDifference, makeBatch } from './fixtures.js';

const RUN = {
  'embedpipe.model': 'test/model-1',
  'embedpipe.plan': 'plan-1',
  'embedpipe.tool': 'embedpipe@test',
};
const DATA_FILE = /^data-\d{5}-[0-9a-f]{12}\.(parquet|arrow)$/;

let root: string;
let n = 0;
const freshDir = () => join(root, `d${n++}`);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'embedpipe-compact-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

interface Dataset {
  dir: string;
  format: OutputFormat;
  batches: EmbeddedBatch[];
  /** Part file names, in dataset order. */
  parts: string[];
  /** Each batch's metadata as its part carried it. */
  metadata: Map<string, Record<string, string>>;
}

/** `count` parts of 0–40 rows (one empty), each with its own accounting entry, as the pipeline writes them. */
async function writeParts(
  format: OutputFormat,
  count: number,
  dims: number,
  dir = freshDir(),
  metadata: Record<string, string> = RUN,
): Promise<Dataset> {
  const writer = new DatasetWriter({ dir, format, metadata, dims });
  const batches: EmbeddedBatch[] = [];
  const parts: string[] = [];
  for (let i = 0; i < count; i++) {
    const batchId = `b${String(i).padStart(3, '0')}`;
    const rows = i === 7 ? 0 : 1 + ((i * 13) % 40);
    const batch = makeBatch({ batchId, rows, dims, seed: 1000 + i, provider: i % 3 === 0 ? 'p-a' : 'p-b' });
    const record = JSON.stringify({ rows, cost: i / 1000, failures: i % 5 === 0 ? [{ message: 'x' }] : [] });
    parts.push((await writer.writePart(batchId, batch, { 'embedpipe.batch': record })).file);
    batches.push(batch);
  }
  const partMetadata = new Map<string, Record<string, string>>();
  for (const batch of batches) partMetadata.set(batch.batchId, await writer.readPartMetadata(batch.batchId));
  return { dir, format, batches, parts, metadata: partMetadata };
}

interface ExpectedRow {
  batchId: string;
  batch: EmbeddedBatch;
  i: number;
}

/** A row filter by document id, as compaction takes it: by file and row position. */
async function keepById(
  dir: string,
  format: OutputFormat,
  files: readonly string[],
  keep: (file: string, id: string) => boolean,
): Promise<(file: string, row: number) => boolean> {
  const ids = new Map(
    await Promise.all(files.map(async (file) => [file, (await readRowKeys(dir, file, format)).ids] as const)),
  );
  return (file, row) => keep(file, ids.get(file)!.at(row));
}

function rowsInOrder(batches: EmbeddedBatch[], keep: (id: string) => boolean = () => true): ExpectedRow[] {
  return batches.flatMap((batch) =>
    batch.chunks.flatMap((chunk, i) =>
      keep(chunk.documentId) ? [{ batchId: batch.batchId, batch, i }] : [],
    ),
  );
}

/** Every row of the folder's Parquet files, in file-name order then row order (the dataset's order). */
async function duckRows(dir: string): Promise<Record<string, unknown>[]> {
  return query(
    `SELECT id, chunk_index, text, embedding, tokens, content_hash, filename
       FROM read_parquet(${sqlString(join(dir, '*.parquet'))}, filename = true, file_row_number = true)
      ORDER BY filename, file_row_number`,
  );
}

function expectRow(row: Record<string, unknown>, want: ExpectedRow): void {
  const chunk = want.batch.chunks[want.i]!;
  const where = `${want.batchId}/${want.i}`;
  expect(row['id'], where).toBe(chunk.documentId);
  expect(row['chunk_index'], where).toBe(chunk.index);
  expect(row['text'], where).toBe(chunk.text);
  expect(row['tokens'], where).toBe(chunk.tokens);
  expect(row['content_hash'], where).toBe(chunk.hash);
  const vector = row['embedding'] as ArrayLike<number>;
  expect(firstBitDifference(vector, want.batch.vectors[want.i]!), `${where}: first differing float`).toBe(-1);
}

async function kvMetadata(path: string): Promise<Record<string, string>> {
  const rows = await query(
    `SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata(${sqlString(path)})`,
  );
  return Object.fromEntries(rows.map((r) => [r['key'] as string, r['value'] as string]));
}

describe('compactParts (Parquet)', () => {
  it('merges 50 parts into a few files: same rows in the same order, every float, row groups as planned', async () => {
    const data = await writeParts('parquet', 50, 96);
    const rowGroupBytes = 48 * 1024;
    const result = await compactParts({
      dir: data.dir,
      format: 'parquet',
      parts: data.parts,
      targetFileBytes: 200 * 1024,
      rowGroupBytes,
    });

    // Files: named, numbered in dataset order, parts gone, no temp file left.
    expect(result.files.length).toBeGreaterThanOrEqual(3);
    expect(result.files.map((f) => f.file)).toEqual([...result.files.map((f) => f.file)].sort());
    result.files.forEach((f, i) => {
      expect(f.file).toMatch(DATA_FILE);
      expect(f.file.startsWith(`data-${String(i).padStart(5, '0')}-`)).toBe(true);
    });
    expect(result.removed).toEqual(data.parts);
    expect((await readdir(data.dir)).sort()).toEqual(result.files.map((f) => f.file));
    expect(result.files.flatMap((f) => f.batches)).toEqual(data.batches.map((b) => b.batchId));
    expect(result.droppedRows).toBe(0);

    // DuckDB reads exactly the parts' rows, in order.
    const expected = rowsInOrder(data.batches);
    const rows = await duckRows(data.dir);
    expect(rows.length).toBe(expected.length);
    for (const [k, row] of rows.entries()) expectRow(row, expected[k]!);
    for (const f of result.files) {
      const inFile = rows.filter((r) => String(r['filename']).endsWith(f.file)).length;
      expect(inFile, f.file).toBe(f.rows);
    }

    // Row groups: several per file, closed near the byte target, uncompressed (the last one takes the rest).
    for (const f of result.files) {
      const groups = await query(
        `SELECT row_group_id, any_value(row_group_num_rows) AS rows, any_value(row_group_bytes) AS bytes
           FROM parquet_metadata(${sqlString(join(data.dir, f.file))}) GROUP BY row_group_id ORDER BY row_group_id`,
      );
      expect(groups.length, f.file).toBeGreaterThanOrEqual(2);
      expect(groups.reduce((s, g) => s + Number(g['rows']), 0)).toBe(f.rows);
      for (const g of groups.slice(0, -1)) {
        expect(Number(g['bytes'])).toBeGreaterThan(rowGroupBytes * 0.8);
        expect(Number(g['bytes'])).toBeLessThan(rowGroupBytes * 1.25);
      }
    }
  });

  it('carries the quantized columns (--vector-type) through, value for value', async () => {
    const plan = JSON.stringify({ vectors: { types: ['float16', 'int8', 'binary'] } });
    const data = await writeParts('parquet', 12, 20, freshDir(), { ...RUN, 'embedpipe.plan': plan });
    const columns = `embedding_float16::VARCHAR AS h, embedding_int8::VARCHAR AS q, embedding_int8_scale AS s,
                     hex(embedding_binary) AS b`;
    const before = await query(
      `SELECT ${columns} FROM read_parquet(${sqlString(join(data.dir, '*.parquet'))}, filename = true, file_row_number = true)
        ORDER BY filename, file_row_number`,
    );
    await compactParts({ dir: data.dir, format: 'parquet', parts: data.parts, targetFileBytes: 16 * 1024 });
    const after = await query(
      `SELECT ${columns} FROM read_parquet(${sqlString(join(data.dir, '*.parquet'))}, filename = true, file_row_number = true)
        ORDER BY filename, file_row_number`,
    );
    expect(after.length).toBeGreaterThan(100);
    expect(after).toEqual(before);
  });

  it('caps row groups by rows too, and keeps wasm memory flat over repeated compactions', async () => {
    const { wasmMemory } = await import('parquet-wasm');
    const sizes: number[] = [];
    for (let round = 0; round < 4; round++) {
      const data = await writeParts('parquet', 20, 256);
      const result = await compactParts({
        dir: data.dir,
        format: 'parquet',
        parts: data.parts,
        rowGroupRows: 50,
      });
      const groups = await query(
        `SELECT DISTINCT row_group_id, row_group_num_rows AS rows
           FROM parquet_metadata(${sqlString(join(data.dir, result.files[0]!.file))}) ORDER BY row_group_id`,
      );
      const rows = result.files[0]!.rows;
      expect(groups.map((g) => Number(g['rows']))).toEqual([
        ...Array.from({ length: Math.floor(rows / 50) }, () => 50),
        ...(rows % 50 ? [rows % 50] : []),
      ]);
      sizes.push(wasmMemory().buffer.byteLength);
    }
    // A leak would keep a round's tables (~440 rows of 256 dims, ~440 KB of vectors) each round. A page or two
    // of allocator slack is not one: with fewer statistics written (Parquet min/max on three columns,
    // not five) the first round's peak is smaller and a later one needed 128 KB more (two pages), when the
    // wasm objects freed by the GC's finalizers are freed later (files run beside this one).
    expect(sizes[3]! - sizes[1]!).toBeLessThanOrEqual(4 * 65_536);
    expect(sizes[3]! - sizes[2]!).toBeLessThanOrEqual(4 * 65_536);
  });

  it("carries every batch's own metadata, and resume sees the batches inside the data files", async () => {
    const data = await writeParts('parquet', 12, 8);
    const result = await compactParts({
      dir: data.dir,
      format: 'parquet',
      parts: data.parts,
      targetFileBytes: 10 * 1024,
    });
    expect(result.files.length).toBeGreaterThanOrEqual(2);

    for (const f of result.files) {
      const kv = await kvMetadata(join(data.dir, f.file));
      const batches = JSON.parse(kv[COMPACTED_BATCHES_KEY]!) as Record<string, Record<string, string>>;
      expect(Object.keys(batches)).toEqual(f.batches);
      const { [COMPACTED_BATCHES_KEY]: _, 'ARROW:schema': __, ...run } = kv;
      expect(run).toEqual(RUN);
      for (const id of f.batches) {
        // Run metadata plus the batch's own entries give back exactly what its part carried.
        expect({ ...run, ...batches[id] }, id).toEqual(data.metadata.get(id));
        expect(batches[id]!['embedpipe.batch_id']).toBe(id);
        expect(batches[id]!['embedpipe.batch']).toBeDefined();
      }
    }

    const writer = new DatasetWriter({ dir: data.dir, format: 'parquet', metadata: RUN });
    const ids = data.batches.map((b) => b.batchId);
    expect(await writer.existingParts()).toEqual(new Set(ids));
    for (const id of ids) expect(await writer.readPartMetadata(id)).toEqual(data.metadata.get(id));
    const files = await writer.batchFiles();
    for (const f of result.files) for (const id of f.batches) expect(files.get(id)).toBe(f.file);
    await expect(writer.readPartMetadata('nope')).rejects.toThrow(OutputError);
    // An Arrow writer on the same folder sees none of them.
    expect(
      await new DatasetWriter({ dir: data.dir, format: 'arrow', metadata: RUN }).existingParts(),
    ).toEqual(new Set());
  });

  it('keepRow drops exactly the rows it rejects; a batch with every row dropped stays listed', async () => {
    const data = await writeParts('parquet', 20, 16);
    const asked: string[] = [];
    const keep = (file: string, id: string) => {
      asked.push(file);
      return !(id.startsWith('tab\t') || id.startsWith('é/ü ✓') || id.endsWith('·b004'));
    };
    const result = await compactParts({
      dir: data.dir,
      format: 'parquet',
      parts: data.parts,
      keepRow: await keepById(data.dir, 'parquet', data.parts, keep),
      targetFileBytes: 20 * 1024,
    });
    expect(new Set(asked)).toEqual(new Set(data.parts.filter((p) => p !== 'part-b007.parquet')));
    const expected = rowsInOrder(data.batches, (id) => keep('', id));
    const total = data.batches.reduce((s, b) => s + b.chunks.length, 0);
    expect(result.droppedRows).toBe(total - expected.length);
    expect(result.droppedRows).toBeGreaterThan(20);

    const rows = await duckRows(data.dir);
    expect(rows.length).toBe(expected.length);
    for (const [k, row] of rows.entries()) expectRow(row, expected[k]!);
    expect(result.files.flatMap((f) => f.batches)).toContain('b004');
    const writer = new DatasetWriter({ dir: data.dir, format: 'parquet', metadata: RUN });
    expect((await writer.existingParts()).has('b004')).toBe(true);
    expect(await writer.readPartMetadata('b004')).toEqual(data.metadata.get('b004'));
  });

  it('copies the parts keepsEveryRow vouches for as they are, beside filtered ones: the same rows, columns and layout as decoding every part', async () => {
    const data = await writeParts('parquet', 12, 24);
    const decoded = freshDir();
    await cp(data.dir, decoded, { recursive: true });
    const keep = (_file: string, id: string) => !id.endsWith('·b004');
    const compact = async (dir: string, keepsEveryRow: (file: string) => boolean) =>
      compactParts({
        dir,
        format: 'parquet',
        parts: data.parts,
        keepRow: await keepById(dir, 'parquet', data.parts, keep),
        keepsEveryRow,
      });
    const asked: string[] = [];
    const copied = await compact(data.dir, (file) => {
      asked.push(file);
      return file !== 'part-b004.parquet';
    });
    const reference = await compact(decoded, () => false);
    expect(new Set(asked)).toEqual(new Set(data.parts));
    expect(copied.droppedRows).toBe(reference.droppedRows);
    expect(copied.droppedRows).toBeGreaterThan(0);

    const expected = rowsInOrder(data.batches, (id) => keep('', id));
    const rows = await duckRows(data.dir);
    expect(rows.length).toBe(expected.length);
    for (const [k, row] of rows.entries()) expectRow(row, expected[k]!);
    const [file] = copied.files.map((f) => join(data.dir, f.file));
    const [referenceFile] = reference.files.map((f) => join(decoded, f.file));
    expect(await kvMetadata(file!)).toEqual(await kvMetadata(referenceFile!));
    const schema = (path: string) =>
      query(`SELECT name, type, repetition_type FROM parquet_schema(${sqlString(path)})`);
    expect(await schema(file!)).toEqual(await schema(referenceFile!));
    // Row groups, column chunks, encodings, sizes and statistics: the same. (Only the order of the
    // key-value pairs in the footer may differ: wasm keeps them in a hash map.)
    const layout = async (path: string) =>
      JSON.stringify(
        await query(`SELECT * EXCLUDE (file_name) FROM parquet_metadata(${sqlString(path)})`),
        (_key, value) => (typeof value === 'bigint' ? String(value) : value),
      );
    expect(await layout(file!)).toBe(await layout(referenceFile!));
  });

  it('a file whose rows are all dropped is still written, with its batches', async () => {
    const data = await writeParts('parquet', 3, 4);
    const result = await compactParts({
      dir: data.dir,
      format: 'parquet',
      parts: data.parts,
      keepRow: () => false,
    });
    expect(result.files).toEqual([
      {
        file: expect.stringMatching(DATA_FILE),
        rows: 0,
        bytes: expect.any(Number),
        batches: ['b000', 'b001', 'b002'],
      },
    ]);
    const [row] = await query(
      `SELECT count(*)::INTEGER AS n FROM read_parquet(${sqlString(join(data.dir, '*.parquet'))})`,
    );
    expect(row!['n']).toBe(0);
    const writer = new DatasetWriter({ dir: data.dir, format: 'parquet', metadata: RUN });
    expect(await writer.existingParts()).toEqual(new Set(['b000', 'b001', 'b002']));
  });

  it('merges data files again with new parts, in the order given', async () => {
    const dir = freshDir();
    const first = await writeParts('parquet', 6, 8, dir);
    const once = await compactParts({ dir, format: 'parquet', parts: first.parts.slice(0, 4) });
    expect(once.files.map((f) => f.file)).toEqual([expect.stringMatching(/^data-00000-/)]);

    const parts = [once.files[0]!.file, ...first.parts.slice(4)];
    const twice = await compactParts({
      dir,
      format: 'parquet',
      parts,
      keepRow: await keepById(dir, 'parquet', parts, (_f, id) => !id.endsWith('·b001')),
    });
    expect(twice.files.map((f) => f.file)).toEqual([expect.stringMatching(/^data-00001-/)]);
    expect(twice.files[0]!.batches).toEqual(first.batches.map((b) => b.batchId));
    expect(await readdir(dir)).toEqual([twice.files[0]!.file]);
    const expected = rowsInOrder(first.batches, (id) => !id.endsWith('·b001'));
    const rows = await duckRows(dir);
    expect(rows.length).toBe(expected.length);
    for (const [k, row] of rows.entries()) expectRow(row, expected[k]!);
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: RUN });
    for (const b of first.batches)
      expect(await writer.readPartMetadata(b.batchId)).toEqual(first.metadata.get(b.batchId));
  });

  it('an interrupted compaction (data file written, parts not removed) is resolved by compacting again', async () => {
    const data = await writeParts('parquet', 8, 8);
    const saved = join(freshDir());
    await cp(data.dir, saved, { recursive: true });
    const first = await compactParts({
      dir: data.dir,
      format: 'parquet',
      parts: data.parts,
      targetFileBytes: 4096,
    });
    // Put the parts back: as if the process died after the renames, before the removals.
    for (const part of data.parts) await cp(join(saved, part), join(data.dir, part));

    const writer = new DatasetWriter({ dir: data.dir, format: 'parquet', metadata: RUN });
    expect(await writer.existingParts()).toEqual(new Set(data.batches.map((b) => b.batchId)));
    const files = await writer.batchFiles();
    for (const b of data.batches) expect(files.get(b.batchId)).toBe(`part-${b.batchId}.parquet`);

    const again = await compactParts({
      dir: data.dir,
      format: 'parquet',
      parts: data.parts,
      targetFileBytes: 4096,
    });
    expect(again.removed).toEqual([...data.parts, ...first.files.map((f) => f.file)]);
    expect((await readdir(data.dir)).sort()).toEqual(again.files.map((f) => f.file).sort());
    const rows = await duckRows(data.dir);
    expect(rows.length).toBe(rowsInOrder(data.batches).length);
  });

  it('refuses a part whose batch is also in a data file that holds other batches', async () => {
    const data = await writeParts('parquet', 4, 8);
    const copy = await readFile(join(data.dir, data.parts[0]!));
    await compactParts({ dir: data.dir, format: 'parquet', parts: data.parts });
    await writeFile(join(data.dir, data.parts[0]!), copy);
    const error = await compactParts({ dir: data.dir, format: 'parquet', parts: [data.parts[0]!] }).catch(
      (e) => e,
    );
    expect(error).toBeInstanceOf(OutputError);
    expect(error.message).toMatch(/batch b000 of part-b000\.parquet is also in .*data-00000-/);
  });

  it('a corrupt part fails the compaction with an OutputError naming it, and the dataset is left as it was', async () => {
    const data = await writeParts('parquet', 10, 8);
    const bad = join(data.dir, data.parts[6]!);
    await writeFile(bad, 'not parquet at all');
    const before = await snapshot(data.dir);
    const error = await compactParts({ dir: data.dir, format: 'parquet', parts: data.parts }).catch((e) => e);
    expect(error).toBeInstanceOf(OutputError);
    expect(error.message).toContain(bad);
    expect(await snapshot(data.dir)).toEqual(before);
  });

  it('a part that fails mid-way (after data files were written) leaves the dataset as it was', async () => {
    const data = await writeParts('parquet', 10, 8);
    // Other vector dims: its footer reads, its rows do not fit the data file.
    const writer = new DatasetWriter({ dir: data.dir, format: 'parquet', metadata: RUN });
    await writer.writePart('b008', makeBatch({ batchId: 'b008', rows: 5, dims: 12, seed: 1 }));
    const before = await snapshot(data.dir);
    const error = await compactParts({
      dir: data.dir,
      format: 'parquet',
      parts: data.parts,
      targetFileBytes: 4096,
    }).catch((e) => e);
    expect(error).toBeInstanceOf(OutputError);
    expect(error.message).toContain(join(data.dir, 'part-b008.parquet'));
    expect(error.message).toMatch(/FixedSizeList\[12\]/);
    expect(await snapshot(data.dir)).toEqual(before);
  });

  it('refuses names that are not files of the dataset, and does nothing for an empty list', async () => {
    const data = await writeParts('parquet', 2, 4);
    for (const name of [
      '_manifest.json',
      'part-b000.arrow',
      '../part-b000.parquet',
      'part-x/../b000.parquet',
    ]) {
      await expect(compactParts({ dir: data.dir, format: 'parquet', parts: [name] }), name).rejects.toThrow(
        OutputError,
      );
    }
    await expect(
      compactParts({ dir: data.dir, format: 'parquet', parts: ['part-zz.parquet'] }),
    ).rejects.toThrow(/part-zz\.parquet/);
    expect(await compactParts({ dir: data.dir, format: 'parquet', parts: [] })).toEqual({
      files: [],
      removed: [],
      droppedRows: 0,
    });
    expect((await readdir(data.dir)).sort()).toEqual(data.parts);
  });
});

describe('compactParts (Arrow IPC)', () => {
  it('merges parts into files of large record batches, read back with apache-arrow', async () => {
    const data = await writeParts('arrow', 30, 64);
    const recordBatchBytes = 24 * 1024;
    const keep = (_file: string, id: string) => !id.startsWith('line\n');
    const result = await compactParts({
      dir: data.dir,
      format: 'arrow',
      parts: data.parts,
      keepRow: await keepById(data.dir, 'arrow', data.parts, keep),
      targetFileBytes: 150 * 1024,
      rowGroupBytes: recordBatchBytes,
    });
    expect(result.files.length).toBeGreaterThanOrEqual(2);
    expect((await readdir(data.dir)).sort()).toEqual(result.files.map((f) => f.file));
    expect(result.files.flatMap((f) => f.batches)).toEqual(data.batches.map((b) => b.batchId));

    const expected = rowsInOrder(data.batches, (id) => keep('', id));
    let k = 0;
    for (const f of result.files) {
      expect(f.file).toMatch(DATA_FILE);
      const table = tableFromIPC(await readFile(join(data.dir, f.file)));
      expect(table.numRows).toBe(f.rows);
      // Record batches near the byte target (the last one takes the rest), not one per part.
      expect(table.batches.length).toBeGreaterThanOrEqual(2);
      expect(table.batches.length).toBeLessThan(f.batches.length);
      const batches = JSON.parse(table.schema.metadata.get(COMPACTED_BATCHES_KEY)!) as Record<string, object>;
      expect(Object.keys(batches)).toEqual(f.batches);
      for (let i = 0; i < table.numRows; i++, k++) {
        const want = expected[k]!;
        const chunk = want.batch.chunks[want.i]!;
        expect(table.getChild('id')!.get(i)).toBe(chunk.documentId);
        expect(table.getChild('text')!.get(i)).toBe(chunk.text);
        expect(table.getChild('chunk_index')!.get(i)).toBe(chunk.index);
        expect(table.getChild('tokens')!.get(i)).toBe(chunk.tokens);
        expect(table.getChild('content_hash')!.get(i)).toBe(chunk.hash);
        const vector = table.getChild('embedding')!.get(i)!.toArray() as Float32Array;
        expect(firstBitDifference(vector, want.batch.vectors[want.i]!), `${want.batchId}/${want.i}`).toBe(-1);
      }
    }
    expect(k).toBe(expected.length);

    const writer = new DatasetWriter({ dir: data.dir, format: 'arrow', metadata: RUN });
    expect(await writer.existingParts()).toEqual(new Set(data.batches.map((b) => b.batchId)));
    for (const b of data.batches)
      expect(await writer.readPartMetadata(b.batchId)).toEqual(data.metadata.get(b.batchId));
  });
});

describe('fileBatches', () => {
  it('reads a large data file row group by row group, the same rows as reading it whole', async () => {
    const data = await writeParts('parquet', 12, 32);
    const result = await compactParts({
      dir: data.dir,
      format: 'parquet',
      parts: data.parts,
      rowGroupBytes: 8192,
    });
    const path = join(data.dir, result.files[0]!.file);
    const whole = await readAhead(path, 'parquet', 1024);
    expect(whole).toBeInstanceOf(Uint8Array);
    expect(await readAhead(path, 'parquet', 64 * 2 ** 20)).toBeUndefined(); // too large to read whole
    const read = async (contents?: Uint8Array) => {
      const ids: string[] = [];
      const vectors: number[] = [];
      let batches = 0;
      for await (const batch of fileBatches(path, 'parquet', contents)) {
        batches += 1;
        ids.push(...(batch.getChild('id')!.toArray() as string[]));
        for (let i = 0; i < batch.numRows; i++)
          vectors.push(...batch.getChild('embedding')!.get(i)!.toArray());
      }
      return { ids, vectors, batches };
    };
    const byGroup = await read();
    const byWhole = await read(whole);
    expect(byGroup.batches).toBeGreaterThan(3);
    expect(byGroup.ids).toEqual(rowsInOrder(data.batches).map((r) => r.batch.chunks[r.i]!.documentId));
    expect(byGroup).toEqual({ ...byWhole, batches: byGroup.batches });
  });
});

describe('DatasetWriter.removeStaleParts with data files', () => {
  it('removes a data file only when none of its batches is kept', async () => {
    const dir = freshDir();
    const data = await writeParts('parquet', 6, 4, dir);
    const a = await compactParts({ dir, format: 'parquet', parts: data.parts.slice(0, 2) });
    const b = await compactParts({ dir, format: 'parquet', parts: data.parts.slice(2, 4) });
    await new DatasetWriter({ dir: join(dir), format: 'arrow', metadata: RUN }).writePart(
      'x',
      makeBatch({ batchId: 'x', rows: 1, dims: 4, seed: 1 }),
    );
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: RUN });
    // b000 is kept: its file stays, with b001 in it; b002/b003 are stale, so is their file.
    const removed = await writer.removeStaleParts(new Set(['b000', 'b004', 'b005']));
    expect(removed).toEqual([b.files[0]!.file, 'part-x.arrow'].sort());
    expect((await readdir(dir)).sort()).toEqual([a.files[0]!.file, 'part-b004.parquet', 'part-b005.parquet']);
    expect(await writer.existingParts()).toEqual(new Set(['b000', 'b001', 'b004', 'b005']));
  });
});

/** Every file in the folder and its bytes (temp files included: none may be left). */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const name of (await readdir(dir)).sort()) {
    files[name] = (await readFile(join(dir, name))).toString('base64');
  }
  return files;
}
