/** Parquet parts read back by an independent reader (DuckDB): every column, every float, the metadata. */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedBatch } from '../../src/domain.js';
import { DatasetWriter } from '../../src/output/dataset.js';
import { encodeParquet, type ParquetCompression, parquetFooter } from '../../src/output/parquet.js';
import { partRowsFromBatch } from '../../src/output/rows.js';
import { firstBitDifference, makeBatch } from './fixtures.js';

let root: string;
let db: DuckDBInstance;
let sql: DuckDBConnection;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'embedpipe-parquet-'));
  db = await DuckDBInstance.create(':memory:');
  sql = await db.connect();
});

afterAll(async () => {
  sql.closeSync();
  db.closeSync();
  await rm(root, { recursive: true, force: true });
});

async function rowsOf(query: string): Promise<Record<string, unknown>[]> {
  return (await sql.runAndReadAll(query)).getRowObjectsJS() as Record<string, unknown>[];
}

const quote = (path: string) => `'${path.replaceAll("'", "''")}'`;

/** Reads every part in `dir` with DuckDB and checks it holds exactly the batches' rows. */
async function expectDataset(dir: string, batches: EmbeddedBatch[]): Promise<void> {
  const rows = await rowsOf(
    `SELECT id, chunk_index, text, embedding, tokens, content_hash, filename
     FROM read_parquet(${quote(join(dir, '*.parquet'))}, filename = true)`,
  );
  const expected = new Map<string, { batchId: string; i: number; batch: EmbeddedBatch }>();
  for (const batch of batches) {
    batch.chunks.forEach((chunk, i) => {
      expected.set(`${batch.batchId}\u0000${chunk.index}`, { batchId: batch.batchId, i, batch });
    });
  }
  expect(rows.length).toBe(expected.size);
  const seen = new Set<string>();
  for (const row of rows) {
    const batchId = /part-(.+)\.parquet$/.exec(String(row['filename']))![1]!;
    const key = `${batchId}\u0000${row['chunk_index']}`;
    const want = expected.get(key);
    expect(want, key).toBeDefined();
    seen.add(key);
    const chunk = want!.batch.chunks[want!.i]!;
    expect(row['id']).toBe(chunk.documentId);
    expect(row['chunk_index']).toBe(chunk.index);
    expect(row['text']).toBe(chunk.text);
    expect(row['tokens']).toBe(chunk.tokens);
    expect(row['content_hash']).toBe(chunk.hash);
    const vector = want!.batch.vectors[want!.i]!;
    const got = row['embedding'] as number[];
    expect(firstBitDifference(got, vector), `${key}: first differing float`).toBe(-1);
  }
  expect(seen.size).toBe(expected.size);
}

describe('Parquet parts read back with DuckDB', () => {
  it('round-trips every column and every float exactly (dims 3 and 1536)', async () => {
    for (const dims of [3, 1536]) {
      const dir = join(root, `dims-${dims}`);
      const writer = new DatasetWriter({
        dir,
        format: 'parquet',
        metadata: { 'embedpipe.dims': String(dims) },
        dims,
      });
      const batches = [
        makeBatch({ batchId: `a${dims}`, rows: 128, dims, seed: dims }),
        makeBatch({ batchId: `b${dims}`, rows: 37, dims, seed: dims + 1 }),
        makeBatch({ batchId: `c${dims}`, rows: 1, dims, seed: dims + 2 }),
      ];
      for (const batch of batches) {
        const part = await writer.writePart(batch.batchId, batch);
        expect(part.file).toBe(`part-${batch.batchId}.parquet`);
        expect(part.rows).toBe(batch.chunks.length);
        expect(part.bytes).toBeGreaterThan(0);
      }
      await expectDataset(dir, batches);
    }
  });

  it('has the documented column types, all non-nullable', async () => {
    const dir = join(root, 'dims-3');
    const described = await rowsOf(`DESCRIBE SELECT * FROM read_parquet(${quote(join(dir, '*.parquet'))})`);
    expect(described.map((c) => [c['column_name'], c['column_type']])).toEqual([
      ['id', 'VARCHAR'],
      ['chunk_index', 'INTEGER'],
      ['text', 'VARCHAR'],
      ['embedding', 'FLOAT[]'],
      ['tokens', 'INTEGER'],
      ['content_hash', 'VARCHAR'],
    ]);
    const schema = await rowsOf(
      `SELECT name, repetition_type FROM parquet_schema(${quote(join(dir, 'part-a3.parquet'))})`,
    );
    const repetition = Object.fromEntries(schema.map((c) => [c['name'], c['repetition_type']]));
    for (const column of ['id', 'chunk_index', 'text', 'embedding', 'tokens', 'content_hash', 'item']) {
      expect(repetition[column], column).toBe('REQUIRED');
    }
  });

  it('carries the run metadata and the batch id in the key-value metadata', async () => {
    const dir = join(root, 'metadata');
    const metadata = {
      'embedpipe.model': 'test/model-1',
      'embedpipe.dims': '3',
      'embedpipe.providers': '["alpha","beta"]',
      'embedpipe.plan': '{"maxTokens":512,"overlap":0}',
      'embedpipe.tool_version': '0.1.0',
      'embedpipe.note': 'ünïcødé ✓ 🙂',
    };
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata });
    await writer.writePart('m1', makeBatch({ batchId: 'm1', rows: 4, dims: 3, seed: 9, provider: 'alpha' }));
    const kv = await rowsOf(
      `SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata(${quote(join(dir, 'part-m1.parquet'))})`,
    );
    const map = Object.fromEntries(kv.map((r) => [r['key'], r['value']]));
    expect(map).toMatchObject({
      ...metadata,
      'embedpipe.batch_id': 'm1',
      'embedpipe.batch_provider': 'alpha',
    });
  });

  it('writes PLAIN columns without dictionaries, statistics only where a filter prunes by them, with each compression', async () => {
    const batch = makeBatch({ batchId: 'z', rows: 16, dims: 64, seed: 5 });
    const rows = partRowsFromBatch(batch);
    const sizes: Partial<Record<ParquetCompression, number>> = {};
    const codecs: Record<ParquetCompression, string> = {
      snappy: 'SNAPPY',
      zstd: 'ZSTD',
      lz4: 'LZ4_RAW',
      none: 'UNCOMPRESSED',
    };
    for (const [compression, name] of Object.entries(codecs) as [ParquetCompression, string][]) {
      const bytes = encodeParquet(rows, { k: 'v' }, { compression });
      const encoded = join(root, `encoded-${compression}.parquet`);
      await writeFile(encoded, bytes);
      expect((await parquetFooter(encoded)).rows).toBe(16);
      sizes[compression] = bytes.byteLength;
      const dir = join(root, `codec-${compression}`);
      const writer = new DatasetWriter({ dir, format: 'parquet', metadata: {}, compression });
      await writer.writePart('z', batch);
      const file = join(dir, 'part-z.parquet');
      const columns = await rowsOf(
        `SELECT path_in_schema, encodings, compression, stats_min, stats_max, stats_min_value, stats_max_value FROM parquet_metadata(${quote(file)})`,
      );
      const vector = columns.find((c) => String(c['path_in_schema']).startsWith('embedding'))!;
      // Snappy does not shrink float32 vectors: with it (or none) they are stored as they are.
      expect(vector['compression']).toBe(compression === 'snappy' ? 'UNCOMPRESSED' : name);
      // min/max over every vector element would prune nothing.
      expect([vector['stats_min'], vector['stats_max']]).toEqual([null, null]);
      for (const column of columns) {
        expect(String(column['encodings'])).toContain('PLAIN');
        expect(String(column['encodings'])).not.toMatch(/DICTIONARY|BYTE_STREAM_SPLIT/);
      }
      const column = (name: string) => columns.find((c) => c['path_in_schema'] === name)!;
      expect(column('text')['compression']).toBe(name);
      // Nor hex digests.
      expect(column('content_hash')['compression']).toBe(compression === 'snappy' ? 'UNCOMPRESSED' : name);
      expect([column('chunk_index')['stats_min'], column('chunk_index')['stats_max']]).toEqual(['0', '15']);
      expect(column('id')['stats_min_value']).toBe(batch.chunks.map((c) => c.documentId).sort()[0]);
      expect(column('tokens')['stats_max_value']).not.toBeNull();
      // Long unordered strings: min/max over them would prune nothing either.
      for (const name of ['text', 'content_hash'])
        expect([column(name)['stats_min_value'], column(name)['stats_max_value']]).toEqual([null, null]);
      await expectDataset(dir, [batch]);
    }
    expect(encodeParquet(rows, { k: 'v' }).byteLength).toBe(sizes.snappy); // the default
  });

  it('writes an empty batch as a valid zero-row part', async () => {
    const dir = join(root, 'empty');
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: {}, dims: 8 });
    const empty = makeBatch({ batchId: 'e', rows: 0, dims: 8, seed: 1 });
    expect(await writer.writePart('e', empty)).toEqual({
      file: 'part-e.parquet',
      rows: 0,
      bytes: expect.any(Number),
    });
    const [row] = await rowsOf(
      `SELECT count(*)::INTEGER AS n FROM read_parquet(${quote(join(dir, '*.parquet'))})`,
    );
    expect(row!['n']).toBe(0);
  });
});

describe('the footer read back (hyparquet, not the writer)', () => {
  it('says what DuckDB reads: rows, row groups and key-value metadata, a footer past 64 KB included', async () => {
    const dir = join(root, 'footer');
    // A batch record list long enough to push the footer past the first read of the file's end.
    const long = 'ü🙂'.repeat(40_000);
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: { 'embedpipe.note': long } });
    await writer.writePart('f1', makeBatch({ batchId: 'f1', rows: 7, dims: 3, seed: 4 }));
    const path = join(dir, 'part-f1.parquet');
    const footer = await parquetFooter(path);
    const kv = await rowsOf(
      `SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata(${quote(path)})`,
    );
    expect(footer.metadata).toEqual(Object.fromEntries(kv.map((r) => [r['key'], r['value']])));
    expect(footer.metadata['embedpipe.note']).toBe(long);
    const [row] = await rowsOf(`SELECT count(*)::INTEGER AS n FROM read_parquet(${quote(path)})`);
    expect(footer.rows).toBe(row!['n']);
    expect(footer.rowGroups).toEqual([7]);
  });

  it('refuses a truncated file, a file of another kind and an empty one, naming what is wrong', async () => {
    const dir = join(root, 'footer-bad');
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: {} });
    await writer.writePart('g', makeBatch({ batchId: 'g', rows: 3, dims: 3, seed: 2 }));
    const bytes = await readFile(join(dir, 'part-g.parquet'));
    const cases: [string, Uint8Array, RegExp][] = [
      ['cut.parquet', bytes.subarray(0, bytes.length - 5), /PAR1|Parquet|footer/i],
      ['text.parquet', Buffer.from('{"id":"not parquet"}\n'.repeat(20)), /PAR1|Parquet|footer/i],
      ['empty.parquet', new Uint8Array(0), /not a Parquet file \(0 bytes\)/],
      [
        'huge-length.parquet',
        Buffer.concat([
          bytes.subarray(0, bytes.length - 8),
          Buffer.from([0xff, 0xff, 0xff, 0x7f]),
          Buffer.from('PAR1'),
        ]),
        /not a Parquet file/,
      ],
    ];
    for (const [name, content, message] of cases) {
      await writeFile(join(dir, name), content);
      await expect(parquetFooter(join(dir, name)), name).rejects.toThrow(message);
    }
  });
});

describe('wasm memory', () => {
  it('stays flat over many parts (every wasm object is released)', async () => {
    const { wasmMemory } = await import('parquet-wasm');
    const rows = partRowsFromBatch(makeBatch({ batchId: 'w', rows: 128, dims: 1536, seed: 11 }));
    for (let i = 0; i < 5; i++) encodeParquet(rows, { k: 'v' });
    const before = wasmMemory().buffer.byteLength;
    for (let i = 0; i < 60; i++) encodeParquet(rows, { k: 'v' }); // ~47 MB of vectors
    expect(wasmMemory().buffer.byteLength).toBe(before);
  });
});
