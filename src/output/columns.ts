/** Reading a few columns of a data file (Parquet: only those columns are decoded). */
import { readFile } from 'node:fs/promises';
import { type Table, tableFromIPC } from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { OutputError } from '../errors.js';
import { messageOf } from './fs-errors.js';
import type { OutputFormat } from './part-file.js';

export async function readColumns(
  path: string,
  format: OutputFormat,
  columns: readonly string[],
): Promise<Table> {
  try {
    const bytes = await readFile(path);
    if (format === 'parquet') {
      return tableFromIPC(pw.readParquet(bytes, { columns: [...columns] }).intoIPCStream());
    }
    return tableFromIPC(bytes).select([...columns]);
  } catch (error) {
    throw new OutputError(`cannot read ${columns.join(', ')} from ${path}: ${messageOf(error)}`, {
      cause: error,
    });
  }
}
