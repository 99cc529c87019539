/**
 * The rows of a dataset file (a part or a compacted file, either format) as Arrow record batches,
 * read a row group (Parquet) or a record batch (Arrow IPC) at a time, so a large file is never held
 * whole. A file of no rows yields one empty batch: its columns are still known.
 */
import { openAsBlob } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import {
  type Field,
  makeData,
  RecordBatch,
  RecordBatchReader,
  type Schema,
  Struct,
  tableFromIPC,
} from 'apache-arrow';
import type * as pw from 'parquet-wasm';
import { OutputError } from '../errors.js';
import { parquetWasm } from './parquet-wasm.js';
import type { OutputFormat } from './part-file.js';

/** Parquet files up to this size (parts) are read whole: much faster than a Blob's reads by row group. */
const READ_WHOLE_BYTES = 32 * 2 ** 20;

/**
 * The whole file when it is read whole (a Parquet part), else undefined: started ahead, the read of
 * the next file overlaps the encoding of this one.
 */
export async function readAhead(
  path: string,
  format: OutputFormat,
  bytes: number,
): Promise<Uint8Array | undefined> {
  return format === 'parquet' && bytes <= READ_WHOLE_BYTES ? readFile(path) : undefined;
}

/** `contents`: what readAhead returned for the file. */
export function fileBatches(
  path: string,
  format: OutputFormat,
  contents?: Uint8Array,
): AsyncGenerator<RecordBatch> {
  return format === 'parquet' ? parquetBatches(path, contents) : arrowBatches(path);
}

/**
 * A Parquet file's record batches left in wasm memory, to be copied into another Parquet file as
 * they are (no trip through Arrow JS and back), with the file's columns. Undefined for a file of no
 * rows: fileBatches gives its empty batch.
 */
export function parquetWasmBatches(
  contents: Uint8Array,
): { fields: Field[]; batches: pw.RecordBatch[] } | undefined {
  const table = parquetWasm().readParquet(contents);
  try {
    if (table.numBatches === 0) return undefined;
    const fields = tableFromIPC(table.schema.intoIPCStream()).schema.fields;
    return { fields, batches: table.recordBatches() };
  } finally {
    table.free();
  }
}

async function* parquetBatches(path: string, contents?: Uint8Array): AsyncGenerator<RecordBatch> {
  if (contents) {
    const table = tableFromIPC(parquetWasm().readParquet(contents).intoIPCStream());
    if (table.batches.length === 0) yield emptyBatch(table.schema);
    yield* table.batches;
    return;
  }
  const file = await parquetWasm().ParquetFile.fromFile(await openAsBlob(path));
  try {
    const meta = file.metadata();
    const groups = meta.numRowGroups();
    meta.free();
    let batches = 0;
    for (let i = 0; i < groups; i++) {
      // intoIPCStream consumes the wasm table; the Arrow JS batches view the copied bytes.
      const table = tableFromIPC((await file.read({ rowGroups: [i] })).intoIPCStream());
      for (const batch of table.batches) {
        batches += 1;
        yield batch;
      }
    }
    if (batches === 0) yield emptyBatch(tableFromIPC(file.schema().intoIPCStream()).schema);
  } finally {
    file.free();
  }
}

async function* arrowBatches(path: string): AsyncGenerator<RecordBatch> {
  const handle = await open(path, 'r');
  try {
    const reader = await RecordBatchReader.from(handle);
    await reader.open();
    if (!reader.isFile())
      throw new OutputError(`${path} is not an Arrow IPC file (an Arrow stream, or damaged)`);
    let batches = 0;
    for await (const batch of reader) {
      batches += 1;
      yield batch;
    }
    if (batches === 0) yield emptyBatch(reader.schema);
  } finally {
    await handle.close();
  }
}

function emptyBatch(schema: Schema): RecordBatch {
  const children = schema.fields.map((f) => makeData({ type: f.type, length: 0, nullCount: 0 }));
  return new RecordBatch(
    schema,
    makeData({ type: new Struct(schema.fields), length: 0, nullCount: 0, children }),
  );
}
