/**
 * A part's Parquet file written by embedpipe (snappy or none): read back by three independent
 * readers (DuckDB, hyparquet, parquet-wasm) value for value and float for float, with the columns in
 * schema order and the schema, types, statistics and metadata parquet-wasm gives the same rows
 * written whole.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Schema, tableFromIPC, tableToIPC } from 'apache-arrow';
import { asyncBufferFromFile, parquetMetadata, parquetReadObjects } from 'hyparquet';
import * as pw from 'parquet-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeParquet, encodeParquetPieces, writerProperties } from '../../src/output/parquet.js';
import { flatVectors, type PartRows, partRowsFromBatch } from '../../src/output/rows.js';
import { partTable } from '../../src/output/table.js';
import { readStruct, writeStruct } from '../../src/output/thrift-compact.js';
import { query, sqlString } from '../helpers/duckdb.js';
import { firstBitDifference, makeBatch } from './fixtures.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'embedpipe-vector-column-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** What parquet-wasm writes of the same rows on its own: the reference. */
function wholeByParquetWasm(rows: PartRows, metadata: Record<string, string>): Uint8Array {
  const table = pw.Table.fromIPCStream(tableToIPC(partTable(rows, metadata), 'stream'));
  return pw.writeParquet(table, writerProperties(metadata, 'snappy'));
}

function rowsOf(spec: { rows: number; dims: number; seed: number }): PartRows {
  return partRowsFromBatch(makeBatch({ batchId: `b${spec.seed}`, ...spec }));
}

/**
 * Rows whose texts are in many scripts (CJK, emoji sequences, RTL with marks, combining marks, code,
 * a lone surrogate, CRLF) and whose ids order differently by UTF-16 code unit than by UTF-8 byte
 * (the statistics must be by byte); 3 MB of text, so the text column spans several pages.
 */
function hostileRows(): PartRows {
  const base = rowsOf({ rows: 120, dims: 8, seed: 21 });
  const pieces = [
    '漢字かなカナ한국어',
    '👩‍👩‍👧‍👦🇺🇦',
    'שָׁלוֹם مرحبا',
    'e\u0301 a\u0308',
    'const x = a?.b ?? 1;\r\n',
    '\ud800 lone',
    'x'.repeat(500),
  ];
  const ids = ['\uffff', 'z', '😀', 'é', 'a', 'A', '\u00ff', '\ue000'];
  return {
    ...base,
    ids: base.ids.map((_, i) => `${ids[i % ids.length]}-${i}`),
    texts: base.texts.map((_, i) => pieces.join(' ').repeat(1 + ((i * 37) % 60))),
  };
}

function footerOf(bytes: Uint8Array) {
  return parquetMetadata(
    bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
  );
}

function arrowSchemaOf(bytes: Uint8Array): Schema {
  const value = footerOf(bytes).key_value_metadata!.find((kv) => kv.key === 'ARROW:schema')!.value!;
  // The schema message, then the stream's end marker: an IPC stream of no batches.
  const message = Buffer.from(value, 'base64');
  return tableFromIPC(Buffer.concat([message, Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0])])).schema;
}

async function write(name: string, bytes: Uint8Array): Promise<string> {
  const path = join(root, name);
  await writeFile(path, bytes);
  return path;
}

/** Every float of `path`'s embedding column, as DuckDB reads it, against the rows written. */
async function expectVectorsByDuckDb(path: string, rows: PartRows): Promise<void> {
  const read = await query(
    `SELECT id, chunk_index, text, embedding, tokens, content_hash FROM read_parquet(${sqlString(path)})`,
  );
  expect(read.length).toBe(rows.ids.length);
  read.forEach((row, i) => {
    expect([row['id'], row['chunk_index'], row['text'], row['tokens'], row['content_hash']]).toEqual([
      rows.ids[i],
      rows.chunkIndex[i],
      rows.texts[i],
      rows.tokens[i],
      rows.hashes[i],
    ]);
    const expected = flatVectors(rows).subarray(i * rows.dims, (i + 1) * rows.dims);
    expect(firstBitDifference(Float32Array.from(row['embedding'] as number[]), expected), `row ${i}`).toBe(
      -1,
    );
  });
}

describe('a part written by embedpipe', () => {
  it("writes vectors from the answers' buffers as they are, a page spanning several, read back float for float", async () => {
    // 1,400 rows of 384 dims in answers of 128 rows (the last short), one row reused from
    // elsewhere: the ~1 MB pages start and end inside answers.
    const base = rowsOf({ rows: 1400, dims: 384, seed: 5 });
    const flat = flatVectors(base);
    const runs: Float32Array[] = [];
    for (let row = 0; row < 1400; row += 128) {
      const answer = flat.slice(row * 384, Math.min(1400, row + 128) * 384);
      if (row === 640)
        runs.push(
          answer.subarray(0, 384),
          Float32Array.from(answer.subarray(384, 768)),
          answer.subarray(768),
        );
      else runs.push(answer);
    }
    const rows: PartRows = { ...base, vectorRuns: runs };
    const path = await write('answer-runs.parquet', encodeParquet(rows, {}));
    await expectVectorsByDuckDb(path, base);
    const table = tableFromIPC(pw.readParquet(await readFile(path)).intoIPCStream());
    const child = table
      .getChild('embedding')!
      .data.flatMap((d) => [...(d.children[0]!.values as Float32Array)]);
    expect(firstBitDifference(Float32Array.from(child), flat)).toBe(-1);
  });

  it('refuses vector runs that hold more or fewer values than the rows', () => {
    const rows = rowsOf({ rows: 3, dims: 4, seed: 6 });
    const [first, second] = rows.vectorRuns;
    expect(() => encodeParquet({ ...rows, vectorRuns: [first!, second!] }, {})).toThrow(
      /embedding: 8 vector values for 3 rows of 4 dims/,
    );
    expect(() => encodeParquet({ ...rows, vectorRuns: [...rows.vectorRuns, first!] }, {})).toThrow(
      /16 vector values for 3 rows/,
    );
  });

  it.each([
    { rows: 1, dims: 1 },
    { rows: 5, dims: 3 },
    // 2.1 MB of vectors: three pages of about a megabyte.
    { rows: 1400, dims: 384 },
    { rows: 200, dims: 1536 },
  ])(
    'is read back float for float by DuckDB, hyparquet and parquet-wasm ($rows rows × $dims)',
    async (spec) => {
      const rows = rowsOf({ ...spec, seed: spec.rows + spec.dims });
      const bytes = encodeParquet(rows, { 'embedpipe.model': 'test/model-1' });
      const path = await write(`read-${spec.rows}x${spec.dims}.parquet`, bytes);
      await expectVectorsByDuckDb(path, rows);

      const objects = await parquetReadObjects({
        file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
        columns: ['id', 'embedding'],
      });
      objects.forEach((row, i) => {
        expect(row['id']).toBe(rows.ids[i]);
        const expected = flatVectors(rows).subarray(i * spec.dims, (i + 1) * spec.dims);
        expect(firstBitDifference(Float32Array.from(row['embedding'] as number[]), expected)).toBe(-1);
      });

      const table = tableFromIPC(pw.readParquet(bytes).intoIPCStream());
      expect(String(table.getChild('embedding')!.type)).toBe(`FixedSizeList[${spec.dims}]<Float32>`);
      const child = table
        .getChild('embedding')!
        .data.flatMap((d) => [...(d.children[0]!.values as Float32Array)]);
      expect(firstBitDifference(Float32Array.from(child), flatVectors(rows))).toBe(-1);
    },
  );

  it.each([
    { label: 'text', plan: {}, images: false },
    { label: 'images', plan: {}, images: true },
    {
      label: 'images and every vector type',
      plan: { vectors: { types: ['float16', 'int8', 'binary'] } },
      images: true,
    },
  ])(
    'has the schema, Arrow types and metadata of the file parquet-wasm writes whole ($label)',
    async ({ label, plan, images }) => {
      const base = rowsOf({ rows: 40, dims: 16, seed: 7 });
      const rows: PartRows = images
        ? {
            ...base,
            images: {
              sources: base.ids.map((_, i) => (i % 3 === 0 ? null : `img-${i}.png`)),
              hashes: base.ids.map((_, i) => (i % 3 === 0 ? null : `${i}`.padStart(64, '0'))),
            },
          }
        : base;
      const metadata = { 'embedpipe.model': 'test/model-1', 'embedpipe.plan': JSON.stringify(plan) };
      const ours = await write(`schema-ours-${label}.parquet`, encodeParquet(rows, metadata));
      const reference = await write(`schema-ref-${label}.parquet`, wholeByParquetWasm(rows, metadata));

      const schemaOf = (path: string) =>
        query(
          `SELECT name, type, type_length, repetition_type, num_children, converted_type, logical_type
         FROM parquet_schema(${sqlString(path)})`,
        );
      expect(await schemaOf(ours)).toEqual(await schemaOf(reference));

      // Every column's values, as DuckDB reads them, equal.
      const all = (path: string) => query(`SELECT * FROM read_parquet(${sqlString(path)})`);
      expect(JSON.stringify(await all(ours))).toBe(JSON.stringify(await all(reference)));

      const kv = (path: string) =>
        query(
          `SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata(${sqlString(path)})
         WHERE decode(key) <> 'ARROW:schema' ORDER BY key`,
        );
      expect(await kv(ours)).toEqual(await kv(reference));
      const [ourSchema, referenceSchema] = [
        arrowSchemaOf(await readFile(ours)),
        arrowSchemaOf(await readFile(reference)),
      ];
      expect(ourSchema.fields.map((f) => `${f.name}: ${f.type} ${f.nullable}`)).toEqual(
        referenceSchema.fields.map((f) => `${f.name}: ${f.type} ${f.nullable}`),
      );
      expect(Object.fromEntries(ourSchema.metadata)).toEqual(Object.fromEntries(referenceSchema.metadata));
    },
  );

  it.each([
    { label: 'English', rows: () => rowsOf({ rows: 64, dims: 32, seed: 3 }) },
    { label: 'hostile texts and ids, texts over several pages', rows: hostileRows },
  ])(
    'writes every column as parquet-wasm does, snappy and statistics included ($label)',
    async ({ label, rows: make }) => {
      const rows = make();
      const ours = await write(`columns-ours-${label}.parquet`, encodeParquet(rows, {}));
      const reference = await write(`columns-ref-${label}.parquet`, wholeByParquetWasm(rows, {}));
      const columns = (path: string) =>
        query(
          `SELECT path_in_schema, type, num_values, compression, encodings, stats_min_value, stats_max_value,
           stats_null_count
         FROM parquet_metadata(${sqlString(path)}) ORDER BY column_id`,
        );
      const [mine, theirs] = [await columns(ours), await columns(reference)];
      expect(mine.map((c) => c['path_in_schema'])).toEqual(theirs.map((c) => c['path_in_schema']));
      mine.forEach((column, i) => {
        const path = String(column['path_in_schema']);
        if (path.startsWith('embedding') || path === 'content_hash') {
          // Snappy does not shrink float32 vectors or hex digests: they are stored as they are.
          expect(column['compression']).toBe('UNCOMPRESSED');
          expect({ ...column, compression: 'SNAPPY' }).toEqual(theirs[i]);
        } else expect(column).toEqual(theirs[i]);
      });
      const all = (path: string) => query(`SELECT * FROM read_parquet(${sqlString(path)})`);
      expect(JSON.stringify(await all(ours))).toBe(JSON.stringify(await all(reference)));
    },
  );

  it("has the footer fields parquet-rs writes, each leaf's type-defined order included (pyarrow trusts string min/max only with it)", () => {
    const rows = rowsOf({ rows: 20, dims: 4, seed: 17 });
    const footer = (bytes: Uint8Array) => {
      const length = new DataView(bytes.buffer, bytes.byteOffset + bytes.length - 8, 4).getUint32(0, true);
      return readStruct(bytes.subarray(bytes.length - 8 - length, bytes.length - 8)).struct;
    };
    const [ours, reference] = [footer(encodeParquet(rows, {})), footer(wholeByParquetWasm(rows, {}))];
    expect(ours.fields.map((f) => f.id)).toEqual(reference.fields.map((f) => f.id));
    const orders = (struct: typeof ours) => JSON.stringify(struct.fields.find((f) => f.id === 7)?.value);
    expect(orders(ours)).toBe(orders(reference));
  });

  it('lays the column chunks out in schema order, one after another, as readers that read ranges expect', async () => {
    const rows = rowsOf({ rows: 300, dims: 24, seed: 9 });
    const bytes = Buffer.concat(encodeParquetPieces(rows, {}));
    const chunks = footerOf(bytes).row_groups[0]!.columns.map((c) => c.meta_data!);
    let end = 4; // after the leading "PAR1"
    for (const chunk of chunks) {
      expect(Number(chunk.data_page_offset), chunk.path_in_schema.join('.')).toBe(end);
      end += Number(chunk.total_compressed_size);
    }
    const footerLength = bytes.readUInt32LE(bytes.length - 8);
    expect(end).toBe(bytes.length - 8 - footerLength);
  });

  it("is read whole through hyparquet's file reader, which fetches column ranges in file order", async () => {
    const rows = hostileRows();
    const path = await write('hyparquet-file.parquet', encodeParquet(rows, {}));
    const objects = await parquetReadObjects({ file: await asyncBufferFromFile(path) });
    expect(objects.length).toBe(rows.ids.length);
    objects.forEach((row, i) => {
      expect(
        [row['id'], row['chunk_index'], row['text'], row['tokens'], row['content_hash']],
        `row ${i}`,
      ).toEqual([
        rows.ids[i],
        rows.chunkIndex[i], // A lone surrogate is written as U+FFFD, as any UTF-8 writer writes it.
        rows.texts[i]!.toWellFormed(),
        rows.tokens[i],
        rows.hashes[i],
      ]);
      const expected = flatVectors(rows).subarray(i * rows.dims, (i + 1) * rows.dims);
      expect(firstBitDifference(Float32Array.from(row['embedding'] as number[]), expected), `row ${i}`).toBe(
        -1,
      );
    });
  });

  it('writes image columns with nulls over several 8-row groups of levels, read back by every reader', async () => {
    const base = rowsOf({ rows: 37, dims: 4, seed: 13 });
    const sources = base.ids.map((_, i) => (i % 5 === 0 || i === 36 ? null : `img-${i}-é.png`));
    const rows: PartRows = {
      ...base,
      images: { sources, hashes: sources.map((s) => (s ? `sha-${s}` : null)) },
    };
    const path = await write('images-nulls.parquet', encodeParquet(rows, {}));
    const read = await query(`SELECT image_source, image_sha256 FROM read_parquet(${sqlString(path)})`);
    expect(read.map((r) => r['image_source'])).toEqual(sources);
    expect(read.map((r) => r['image_sha256'])).toEqual(rows.images!.hashes);
    const objects = await parquetReadObjects({
      file: await asyncBufferFromFile(path),
      columns: ['image_source'],
    });
    expect(objects.map((o) => o['image_source'] ?? null)).toEqual(sources);
    const table = tableFromIPC(pw.readParquet(await readFile(path)).intoIPCStream());
    expect(table.getChild('image_source')!.toArray()).toEqual(sources);
  });

  it("keeps a part past parquet-rs's default row group size (1,048,576 rows) in one row group", async () => {
    const n = 1_100_000;
    const rows: PartRows = {
      ids: Array.from({ length: n }, (_, i) => `d${i}`),
      chunkIndex: new Int32Array(n),
      texts: Array.from({ length: n }, () => 'x'),
      tokens: new Int32Array(n).fill(1),
      hashes: Array.from({ length: n }, () => 'h'),
      vectorRuns: [Float32Array.from({ length: n }, (_, i) => i)],
      dims: 1,
    };
    // Written by embedpipe and parquet-wasm (snappy), and by parquet-wasm whole (lz4).
    for (const compression of ['snappy', 'lz4'] as const) {
      const path = await write(`large-${compression}.parquet`, encodeParquet(rows, {}, { compression }));
      const [groups] = await query(
        `SELECT count(DISTINCT row_group_id)::INTEGER AS n FROM parquet_metadata(${sqlString(path)})`,
      );
      const [read] = await query(
        `SELECT count(*)::INTEGER AS n, max(embedding[1])::DOUBLE AS last FROM read_parquet(${sqlString(path)})`,
      );
      expect([groups!['n'], read], compression).toEqual([1, { n, last: n - 1 }]);
    }
  }, 60_000);

  it('reads and writes a footer back to the same bytes (the thrift tree loses nothing)', () => {
    const bytes = wholeByParquetWasm(rowsOf({ rows: 10, dims: 8, seed: 11 }), { k: 'ü🙂' });
    const length = new DataView(bytes.buffer, bytes.byteOffset + bytes.length - 8, 4).getUint32(0, true);
    const footer = bytes.subarray(bytes.length - 8 - length, bytes.length - 8);
    const { struct, end } = readStruct(footer);
    expect(end).toBe(footer.length);
    expect(Buffer.from(writeStruct(struct)).equals(Buffer.from(footer))).toBe(true);
  });

  it('is refused by the readers when its levels are wrong (the checks above can fail)', async () => {
    const rows = rowsOf({ rows: 4, dims: 8, seed: 5 });
    const bytes = encodeParquet(rows, {});
    const footer = footerOf(bytes);
    const chunk = footer.row_groups[0]!.columns.find((c) => c.meta_data!.path_in_schema[0] === 'embedding')!;
    // The first page's definition levels say 32 elements; make them say 31.
    const page = Number(chunk.meta_data!.data_page_offset);
    const body = Buffer.from(bytes.buffer, bytes.byteOffset + page, 200);
    // Per row: a run of one 0, a run of seven 1s.
    const repetition = body.indexOf(Buffer.from([0x02, 0x00, 0x0e, 0x01]));
    expect(body.readUInt32LE(repetition - 4)).toBe(4 * 4);
    const definitionRun = repetition + 16 + 4;
    expect([...body.subarray(definitionRun, definitionRun + 2)]).toEqual([32 * 2, 0x01]);
    const broken = Uint8Array.from(bytes);
    broken[page + definitionRun] = 31 * 2;
    const path = await write('broken.parquet', broken);
    await expect(query(`SELECT embedding FROM read_parquet(${sqlString(path)})`)).rejects.toThrow();
    expect(() => pw.readParquet(broken)).toThrow();
  });
});
