/**
 * Smaller vectors as a user makes them: `--dims N` keeps a re-normalised prefix, `--vector-type`
 * adds quantized columns beside the float32 one. DuckDB reads every column back; `verify --deep`
 * recomputes them and catches a tampered one; a shorter prefix is made from stored vectors without
 * paying, a longer one is paid for; search and eval cut the query the same way.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type Data,
  type FixedSizeList,
  Int8,
  makeData,
  RecordBatch,
  Struct,
  Table,
  tableFromIPC,
  tableToIPC,
} from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { beforeAll, describe, expect, it } from 'vitest';
import { binaryBytes, float16Value, int8Scale } from '../../src/embedding/vector-form.js';
import { ExitCode } from '../../src/errors.js';
import { parquetFileMetadata, writerProperties } from '../../src/output/parquet.js';
import { runCli } from '../helpers/cli.js';
import { seeded } from '../helpers/corpus.js';
import { query, sqlString } from '../helpers/duckdb.js';
import { tempFolder } from '../helpers/temp.js';

const root = await tempFolder('embedpipe-vector-form-');
const corpus = join(root, 'docs.jsonl');
const MODEL = 'emu/embed-small';

beforeAll(async () => {
  const rand = seeded(9);
  const lines = Array.from({ length: 120 }, (_, d) =>
    JSON.stringify({
      id: `doc-${d}`,
      text: `document ${d}: ${rand().toString(36)} ${'lorem ipsum '.repeat(d % 7)}`,
    }),
  );
  await writeFile(corpus, `${lines.join('\n')}\n`);
});

const run = (out: string, ...more: string[]) =>
  runCli(['run', '--emulator', '--input', corpus, '--model', MODEL, '--out', out, '--json', ...more]);

async function runJson(out: string, ...more: string[]) {
  const result = await run(out, ...more);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
}

/** A DuckDB list value as the JS array it reads into. */
const list = (value: unknown) => value as number[];

const files = (out: string, version: string) => sqlString(`${out}.versions/${version}/*.parquet`);

describe('--dims and --vector-type', () => {
  it('writes a re-normalised prefix and quantized columns that DuckDB reads and that match it', async () => {
    const out = join(root, 'small');
    const summary = await runJson(out, '--dims', '48', '--vector-type', 'float16,int8,binary');
    expect(summary.dims).toBe(48);
    const types = await query(
      `SELECT typeof(embedding) e, typeof(embedding_float16) h, typeof(embedding_int8) i,
              typeof(embedding_int8_scale) s, typeof(embedding_binary) b
         FROM read_parquet(${files(out, 'v000001')}) LIMIT 1`,
    );
    expect(types[0]).toEqual({ e: 'FLOAT[]', h: 'FLOAT[]', i: 'TINYINT[]', s: 'FLOAT', b: 'BLOB' });
    const rows = await query(
      `SELECT embedding, embedding_float16, embedding_int8, embedding_int8_scale, embedding_binary
         FROM read_parquet(${files(out, 'v000001')})`,
    );
    expect(rows).toHaveLength(120);
    for (const row of rows) {
      const vector = list(row['embedding']);
      expect(vector).toHaveLength(48);
      expect(Math.hypot(...vector)).toBeCloseTo(1, 5);
      const half = list(row['embedding_float16']);
      const int8 = list(row['embedding_int8']);
      const scale = row['embedding_int8_scale'] as number;
      const bits = row['embedding_binary'] as Uint8Array;
      expect(scale).toBeCloseTo(int8Scale(vector), 6);
      expect(bits).toHaveLength(binaryBytes(48));
      vector.forEach((x, j) => {
        expect(Math.abs(half[j]! - x)).toBeLessThanOrEqual(2 ** -11);
        expect(Math.abs(int8[j]! * scale - x)).toBeLessThanOrEqual(scale / 2 + 1e-7);
        expect(((bits[j >> 3]! >> (7 - (j & 7))) & 1) === 1).toBe(x >= 0);
      });
    }
    const verified = await runCli(['verify', out, '--deep']);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  });

  it('cuts a shorter prefix from stored vectors without paying; a longer one is paid for', async () => {
    const out = join(root, 'migrate');
    const full = await runJson(out, '--vector-type', 'int8', '--keep-versions', '10');
    expect(full.dims).toBeGreaterThan(32);
    const cut = await runJson(out, '--dims', '32', '--keep-versions', '10');
    expect(cut).toMatchObject({ dims: 32, reused: 120, costUsd: '0.0000000000' });
    const shorter = await runJson(out, '--dims', '16', '--keep-versions', '10');
    expect(shorter).toMatchObject({ dims: 16, reused: 120, costUsd: '0.0000000000' });
    // Back to 32 from a 16-dim prefix is not possible: the newest version that holds 32 is used
    // (the same plan as v000002: its batches are taken whole).
    const back = await runJson(out, '--dims', '32', '--keep-versions', '10');
    expect(back).toMatchObject({ dims: 32, rows: 120, costUsd: '0.0000000000' });
    // The prefix of a prefix is the prefix: the 16 from 32 equal the 16 cut from the model's.
    const [a, b] = await Promise.all(
      ['v000003', 'v000001'].map((v) =>
        query(`SELECT id, embedding FROM read_parquet(${files(out, v)}) ORDER BY id LIMIT 5`),
      ),
    );
    for (const [i, row] of a!.entries()) {
      const whole = list(b![i]!['embedding']).slice(0, 16);
      const norm = Math.hypot(...whole);
      const stored = list(row['embedding']);
      for (const [j, x] of stored.entries()) expect(x).toBeCloseTo(whole[j]! / norm, 6);
    }
    // The model's whole vectors again: v000001 holds them (not the current one, a prefix).
    const whole = await runJson(out, '--keep-versions', '0');
    expect(whole).toMatchObject({ dims: full.dims, reused: 120, costUsd: '0.0000000000' });
    // A prefix never gives more than itself: a dataset of 16 dims pays for 32.
    const other = join(root, 'grow');
    await runJson(other, '--dims', '16');
    const priced = await runJson(other, '--dims', '32', '--dry-run');
    expect(priced.toSend).toMatchObject({ chunks: 120, held: 0 });
    const grown = await runJson(other, '--dims', '32');
    expect(grown).toMatchObject({ dims: 32, reused: 0 });
    expect(Number(grown.costUsd)).toBeGreaterThan(0);
  });

  it('refuses --dims beyond the model (exit 2) and a type it does not know', async () => {
    const out = join(root, 'too-many');
    const result = await run(out, '--dims', '4096');
    expect(result.code).toBe(ExitCode.usage);
    expect(result.stderr).toMatch(/--dims 4096 is more than the \d+ dimensions/);
    const unknown = await run(out, '--vector-type', 'int4');
    expect(unknown.code).toBe(ExitCode.usage);
    expect(unknown.stderr).toMatch(/"int4" is not a vector type: use float16, int8 or binary/);
  });

  it('verify --deep names a quantized column that is not what its embedding rounds to', async () => {
    const out = join(root, 'tampered');
    await runJson(out, '--dims', '24', '--vector-type', 'int8');
    const manifest = JSON.parse(await readFile(`${out}.versions/v000001/_manifest.json`, 'utf8'));
    const file = join(`${out}.versions/v000001`, manifest.files[0]);
    const metadata = await parquetFileMetadata(file);
    const table = tableFromIPC(pw.readParquet(await readFile(file)).intoIPCStream());
    const column = table.schema.fields.findIndex((f) => f.name === 'embedding_int8');
    const batch = table.batches[0]!;
    const data = batch.data.children[column] as Data<FixedSizeList<Int8>>;
    const values = (data.children[0]!.values as Int8Array).slice();
    values[3] = values[3] === 0 ? 1 : -values[3]!;
    const child = makeData({ type: new Int8(), length: values.length, data: values });
    const children = batch.data.children.slice();
    children[column] = makeData({ type: data.type, length: data.length, nullCount: 0, child });
    const changed = new RecordBatch(
      table.schema,
      makeData({ type: new Struct(table.schema.fields), length: batch.numRows, nullCount: 0, children }),
    );
    const ipc = tableToIPC(new Table([changed]), 'stream');
    await writeFile(file, pw.writeParquet(pw.Table.fromIPCStream(ipc), writerProperties(metadata, 'snappy')));
    // The fast check reads no vector: it names the file as changed since its switch (its size is
    // not the recorded one; its rows' keys are), not the column.
    const fast = await runCli(['verify', out]);
    expect(fast.code, fast.stdout + fast.stderr).toBe(ExitCode.batchesFailed);
    expect(fast.stdout).toMatch(/size is not the one the switch recorded/);
    expect(fast.stdout).not.toMatch(/rows are not the ones|\[quantized\]/);
    const deep = await runCli(['verify', out, '--deep']);
    expect(deep.code).toBe(ExitCode.batchesFailed);
    expect(deep.stdout + deep.stderr).toMatch(/\[quantized\].*not what their embedding rounds to/);
  });

  it('search and eval cut the query to the dataset dims; eval measures the stored types', async () => {
    const out = join(root, 'small');
    const hit = await runCli(['search', out, 'document 7:', '--emulator', '--json', '-k', '3']);
    expect(hit.code, hit.stderr).toBe(0);
    expect(JSON.parse(hit.stdout).hits).toHaveLength(3);
    const measured = await runCli(['eval', out, '--emulator', '--json', '--sample', '40']);
    expect(measured.code, measured.stderr).toBe(0);
    const report = JSON.parse(measured.stdout);
    const variants = report.versions.map((v: { variant?: string }) => v.variant ?? 'float32');
    expect(variants).toEqual(['float32', 'float16', 'int8', 'binary']);
    const sizes = report.versions.map((v: { bytesPerVector: number }) => v.bytesPerVector);
    expect(sizes).toEqual([48 * 4, 48 * 2, 48 + 4, 6]);
    expect(float16Value(0x3c00)).toBe(1);
    // Synced as it is (the float32 column, 48 dims), and searched there with the query cut alike.
    const store = `lancedb://${join(root, 'lance')}?table=docs`;
    const synced = await runCli(['sync', out, '--to', store]);
    expect(synced.code, synced.stderr).toBe(0);
    expect(synced.stdout).toMatch(/48 dims/);
    const verified = await runCli(['sync', out, '--to', store, '--verify']);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    const inStore = await runCli(['search', store, 'document 7:', '--emulator', '--json', '-k', '3']);
    expect(inStore.code, inStore.stderr).toBe(0);
    expect(JSON.parse(inStore.stdout).hits).toHaveLength(3);
  });
});
