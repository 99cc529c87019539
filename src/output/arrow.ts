/**
 * Arrow IPC file encoding of one part (the `--format arrow` output). Uncompressed: readers can map
 * the file and use the vectors in place.
 */
import { open } from 'node:fs/promises';
import { RecordBatchReader, tableFromIPC, tableToIPC } from 'apache-arrow';
import { OutputError } from '../errors.js';
import type { PartRows } from './rows.js';
import { partTable } from './table.js';

/** One Arrow IPC file (one record batch); `metadata` becomes the schema's custom metadata. */
export function encodeArrowIpcFile(rows: PartRows, metadata: Record<string, string>): Uint8Array {
  return tableToIPC(partTable(rows, metadata), 'file');
}

/** Rows in an Arrow IPC file (buffers are viewed, not copied). */
export function arrowRowCount(bytes: Uint8Array): number {
  return tableFromIPC(bytes).numRows;
}

/** An Arrow IPC file's schema metadata, read from its footer (a compacted file is not read whole). */
export async function arrowFileMetadata(path: string): Promise<Record<string, string>> {
  const handle = await open(path, 'r');
  try {
    const reader = await RecordBatchReader.from(handle);
    await reader.open();
    if (!reader.isFile())
      throw new OutputError(`${path} is not an Arrow IPC file (an Arrow stream, or damaged)`);
    return Object.fromEntries(reader.schema.metadata);
  } finally {
    await handle.close();
  }
}
