/**
 * One part file: encode the rows (Parquet or Arrow IPC), check the encoded row count, and rename the
 * bytes into place atomically.
 *
 * It runs on the main thread. A worker thread for it was measured twice: throughput +1% (2026-11-21),
 * then within noise over three interleaved runs (2026-11-23, C=8, B=128, 50 ms, on 2 cores that also
 * run the emulator), while peak RSS on a 300 MB corpus rose from 447 to 707 MB (glibc arenas of the
 * second thread; 517 MB with MALLOC_ARENA_MAX=2).
 */
import { OutputError } from '../errors.js';
import { arrowFileMetadata, arrowRowCount, encodeArrowIpcFile } from './arrow.js';
import { writeFileAtomic } from './atomic.js';
import { encodeParquet, type ParquetCompression, parquetFileMetadata, parquetRowCount } from './parquet.js';
import type { PartRows } from './rows.js';

export type OutputFormat = 'parquet' | 'arrow';

export interface PartFileSpec {
  readonly path: string;
  readonly format: OutputFormat;
  readonly compression: ParquetCompression;
}

interface PartCodec {
  readonly extension: string;
  encode(rows: PartRows, metadata: Record<string, string>, compression: ParquetCompression): Uint8Array;
  countRows(bytes: Uint8Array): Promise<number> | number;
  /** The key-value metadata of a part file on disk (Parquet: footer only). */
  readMetadata(path: string): Promise<Record<string, string>>;
}

export const CODECS: Readonly<Record<OutputFormat, PartCodec>> = {
  parquet: {
    extension: '.parquet',
    encode: (rows, metadata, compression) => encodeParquet(rows, metadata, { compression }),
    countRows: parquetRowCount,
    readMetadata: parquetFileMetadata,
  },
  arrow: {
    extension: '.arrow',
    encode: (rows, metadata) => encodeArrowIpcFile(rows, metadata),
    countRows: arrowRowCount,
    readMetadata: arrowFileMetadata,
  },
};

/**
 * The rows encoded in `format`, read back: a file that does not hold every row must never be renamed
 * in. `what` names the file in the error.
 */
export async function encodeChecked(
  format: OutputFormat,
  rows: PartRows,
  metadata: Record<string, string>,
  compression: ParquetCompression,
  what: string,
): Promise<Uint8Array> {
  const codec = CODECS[format];
  const bytes = codec.encode(rows, metadata, compression);
  // Cheap read-back of the footer.
  const written = await codec.countRows(bytes);
  if (written !== rows.ids.length) {
    throw new OutputError(`${what}: encoded ${written} rows, expected ${rows.ids.length}`);
  }
  return bytes;
}

/** Writes one part file; returns its size in bytes. */
export async function writePartFile(
  spec: PartFileSpec,
  rows: PartRows,
  metadata: Record<string, string>,
): Promise<number> {
  const bytes = await encodeChecked(spec.format, rows, metadata, spec.compression, spec.path);
  // No folder fsync per part: the manifest's write syncs the folder once (see AtomicWriteOptions).
  await writeFileAtomic(spec.path, bytes, { syncDirectory: false });
  return bytes.byteLength;
}
