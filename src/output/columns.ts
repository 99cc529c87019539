/** Reading a few columns of a data file, and their values at once. */
import { openAsBlob } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { type Data, type Table, Type, tableFromIPC, type Vector } from 'apache-arrow';
import { OutputError } from '../errors.js';
import { messageOf } from './fs-errors.js';
import { parquetWasm } from './parquet-wasm.js';
import type { OutputFormat } from './part-file.js';
import { EMBEDDING_COLUMN } from './table.js';

/**
 * The columns of a file. Parquet without the vector column: only those columns' bytes are read and
 * decoded (ParquetFile), much faster for the hash column alone, since parquet-wasm's one-shot
 * reader decodes every column whatever `columns` says. With the vectors, most of the file is
 * wanted anyway, and the one-shot reader is the faster. Figures: docs/benchmarks.md, "Design figures".
 */
export async function readColumns(
  path: string,
  format: OutputFormat,
  columns: readonly string[],
): Promise<Table> {
  return guarded(path, columns, async () =>
    format === 'parquet' && !columns.includes(EMBEDDING_COLUMN)
      ? await parquetColumnsOnly(path, columns)
      : columnsOf(await readFile(path), format, columns),
  );
}

async function parquetColumnsOnly(path: string, columns: readonly string[]): Promise<Table> {
  const file = await parquetWasm().ParquetFile.fromFile(await openAsBlob(path));
  try {
    return tableFromIPC((await file.read({ columns: [...columns] })).intoIPCStream());
  } finally {
    file.free();
  }
}

/**
 * Single rows of a file, the file read once: Parquet decodes only the pages holding each row, an
 * Arrow file is mapped once and sliced.
 */
export async function readRowsOf(
  path: string,
  format: OutputFormat,
  columns: readonly string[],
  rows: readonly number[],
): Promise<Table[]> {
  return guarded(path, columns, async () => {
    const bytes = await readFile(path);
    if (format === 'parquet')
      return rows.map((offset) => parquetColumns(bytes, columns, { offset, limit: 1 }));
    const table = columnsOf(bytes, format, columns);
    return rows.map((row) => table.slice(row, row + 1));
  });
}

function columnsOf(bytes: Buffer, format: OutputFormat, columns: readonly string[]): Table {
  return format === 'parquet' ? parquetColumns(bytes, columns) : tableFromIPC(bytes).select([...columns]);
}

/** The one-shot reader decodes every column whatever it is asked: the table is narrowed after. */
function parquetColumns(
  bytes: Buffer,
  columns: readonly string[],
  rows?: { readonly offset: number; readonly limit: number },
): Table {
  return tableFromIPC(parquetWasm().readParquet(bytes, rows).intoIPCStream()).select([...columns]);
}

/** Any failure as an OutputError naming the file and the columns. */
async function guarded<T>(path: string, columns: readonly string[], read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    throw new OutputError(`cannot read ${columns.join(', ')} from ${path}: ${messageOf(error)}`, {
      cause: error,
    });
  }
}

/**
 * A record batch of a Utf8 column without nulls as its two buffers: row i is the UTF-8 of
 * `bytes[offsets[i], offsets[i + 1])`. Undefined for anything else (nulls, large or view strings):
 * read those rows with `.get`.
 */
export function plainUtf8(data: Data): { bytes: Buffer; offsets: Int32Array } | undefined {
  const offsets: unknown = data.valueOffsets;
  if (data.typeId !== Type.Utf8 || data.nullCount > 0 || !(offsets instanceof Int32Array)) return undefined;
  const values = data.values as Uint8Array;
  return { bytes: Buffer.from(values.buffer, values.byteOffset, values.byteLength), offsets };
}

/**
 * Every value of a string column, as `String(column.get(row))` gives it, decoded a record batch at
 * a time from its buffers (`.get(row)` finds the row's batch and goes through TextDecoder per call).
 */
export function utf8Values(column: Vector): string[] {
  const values = new Array<string>(column.length);
  let row = 0;
  for (const data of column.data) {
    const plain = plainUtf8(data);
    if (plain === undefined) {
      for (let i = 0; i < data.length; i++, row++) values[row] = String(column.get(row));
      continue;
    }
    const { bytes, offsets } = plain;
    for (let i = 0; i < data.length; i++) values[row++] = bytes.toString('utf8', offsets[i], offsets[i + 1]);
  }
  return values;
}

/**
 * The vectors of a non-null fixed_size_list<float32>[dims] column into `into` from row `at` on, a
 * copy per record batch (not per row). False when the column is not that (another type or size,
 * nulls), and nothing is trusted of what was copied.
 */
export function copyVectors(column: Vector, dims: number, into: Float32Array, at: number): boolean {
  let row = at;
  for (const data of column.data) {
    const child = data.children[0];
    const size = (data.type as { listSize?: number }).listSize;
    if (size !== dims || data.nullCount > 0 || !(child?.values instanceof Float32Array)) return false;
    const start = data.offset * dims + child.offset;
    into.set(child.values.subarray(start, start + data.length * dims), row * dims);
    row += data.length;
  }
  return true;
}
