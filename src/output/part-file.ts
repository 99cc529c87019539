/**
 * One part file: encode the rows (Parquet or Arrow IPC), write them to a temp file, check the row
 * count written, and rename the file into place.
 *
 * It runs on the main thread. A worker thread for it was measured three times: throughput no
 * better (within noise, or worse), peak RSS much higher (glibc arenas of the second thread). The
 * cores, not the thread, are the limit there (docs/benchmarks.md, "Where the time goes at C=8,
 * B=128").
 */
import { readFile } from 'node:fs/promises';
import { OutputError } from '../errors.js';
import { arrowFileMetadata, arrowRowCount, encodeArrowIpcFile } from './arrow.js';
import { TempFile } from './atomic.js';
import { messageOf } from './fs-errors.js';
import {
  encodeParquetPieces,
  type ParquetCompression,
  parquetFileMetadata,
  parquetRowCount,
} from './parquet.js';
import type { PartRows } from './rows.js';

export type OutputFormat = 'parquet' | 'arrow';

export interface PartFileSpec {
  readonly path: string;
  readonly format: OutputFormat;
  readonly compression: ParquetCompression;
}

interface PartCodec {
  readonly extension: string;
  /** The file as pieces written one after another. */
  encode(rows: PartRows, metadata: Record<string, string>, compression: ParquetCompression): Uint8Array[];
  /** Rows in a written (temp) file: what the file really holds, read back. */
  countRows(path: string): Promise<number>;
  /** The key-value metadata of a part file on disk (Parquet: footer only). */
  readMetadata(path: string): Promise<Record<string, string>>;
}

export const CODECS: Readonly<Record<OutputFormat, PartCodec>> = {
  parquet: {
    extension: '.parquet',
    encode: (rows, metadata, compression) => encodeParquetPieces(rows, metadata, { compression }),
    // Its footer alone is read.
    countRows: parquetRowCount,
    readMetadata: parquetFileMetadata,
  },
  arrow: {
    extension: '.arrow',
    encode: (rows, metadata) => [encodeArrowIpcFile(rows, metadata)],
    // The file is read whole (its record batches are viewed, not copied).
    countRows: async (path) => arrowRowCount(await readFile(path)),
    readMetadata: arrowFileMetadata,
  },
};

/** The rows encoded in `format`, as pieces written one after another. */
export function encodePart(
  format: OutputFormat,
  rows: PartRows,
  metadata: Record<string, string>,
  compression: ParquetCompression,
): Uint8Array[] {
  return CODECS[format].encode(rows, metadata, compression);
}

/** A part's (or data file's) encoded bytes (pieces written one after another) and the rows they hold. */
export interface EncodedPart {
  readonly bytes: readonly Uint8Array[];
  readonly rows: number;
}

/**
 * Writes a part (or data file) to `path` atomically: `encode()` runs and its bytes are written in
 * one synchronous step (TempFile.writeNow), so they are garbage before the first await; then fsync,
 * a row count read back from the file, rename. The file is renamed in only when it holds the rows
 * encoded; otherwise OutputError names it by `what`. No folder fsync per part: the manifest's
 * write syncs the folder once. Returns the rows and bytes written.
 */
export async function writeEncodedPart(
  format: OutputFormat,
  path: string,
  encode: () => EncodedPart,
  what: string,
): Promise<{ rows: number; bytes: number }> {
  // Written once, its footer alone read back: around the page cache (output/direct-write.ts).
  const temp = await TempFile.create(path, { direct: true });
  try {
    const rows = writeEncoded(temp, encode);
    await temp.close();
    const written = await CODECS[format].countRows(temp.path);
    if (written !== rows) throw new OutputError(`${what}: encoded ${written} rows, expected ${rows}`);
    await temp.moveTo(path);
    return { rows, bytes: temp.bytes };
  } catch (error) {
    await temp.discard();
    if (error instanceof OutputError) throw error;
    throw new OutputError(`cannot write ${path}: ${messageOf(error)}`, { cause: error });
  }
}

/** The encoding and its write, apart: nothing of them stays on the caller's (async) frame. */
function writeEncoded(temp: TempFile, encode: () => EncodedPart): number {
  const { bytes, rows } = encode();
  temp.writeNow(bytes);
  return rows;
}

/** What a part file holds, built when it is written (see writeEncodedPart). */
export interface PartContent {
  readonly rows: PartRows;
  readonly metadata: Record<string, string>;
}

/** Writes one part (or data) file of `content()`'s rows; returns the rows and bytes written. */
export function writePartFile(
  spec: PartFileSpec,
  content: () => PartContent,
  what: string = spec.path,
): Promise<{ rows: number; bytes: number }> {
  return writeEncodedPart(
    spec.format,
    spec.path,
    () => {
      const { rows, metadata } = content();
      return { bytes: encodePart(spec.format, rows, metadata, spec.compression), rows: rows.ids.length };
    },
    what,
  );
}
