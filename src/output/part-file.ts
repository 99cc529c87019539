/**
 * One part file: encode the rows (Parquet or Arrow IPC), write them to a temp file, check the row
 * count written, and rename the file into place.
 *
 * It runs on the main thread. A worker thread for it was measured three times: throughput +1%
 * (2026-11-21), then within noise over three interleaved runs (2026-11-23, C=8, B=128, 50 ms, on 2
 * cores that also run the emulator) while peak RSS on a 300 MB corpus rose from 447 to 707 MB
 * (glibc arenas of the second thread), and again with PLAIN vectors and 2 MB groups: 56 / 52 / 56%
 * of the ceiling against 59 / 53 / 59% in-thread, +100 MB peak RSS. The cores, not the thread, are
 * the limit there.
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
  /** Rows in an encoded part: from its bytes, or from the (temp) file that holds them. */
  countRows(bytes: Uint8Array, path: string): Promise<number> | number;
  /** The key-value metadata of a part file on disk (Parquet: footer only). */
  readMetadata(path: string): Promise<Record<string, string>>;
}

export const CODECS: Readonly<Record<OutputFormat, PartCodec>> = {
  parquet: {
    extension: '.parquet',
    encode: (rows, metadata, compression) => encodeParquet(rows, metadata, { compression }),
    // From the file: its footer is read, and the bytes are not copied again.
    countRows: (_bytes, path) => parquetRowCount(path),
    readMetadata: parquetFileMetadata,
  },
  arrow: {
    extension: '.arrow',
    encode: (rows, metadata) => encodeArrowIpcFile(rows, metadata),
    // From the bytes: the record batches are viewed, not copied.
    countRows: (bytes) => arrowRowCount(bytes),
    readMetadata: arrowFileMetadata,
  },
};

/** The rows encoded in `format`. */
export function encodePart(
  format: OutputFormat,
  rows: PartRows,
  metadata: Record<string, string>,
  compression: ParquetCompression,
): Uint8Array {
  return CODECS[format].encode(rows, metadata, compression);
}

/**
 * Writes an encoded part to `path` atomically. The file is renamed in only when it holds the
 * `rows` expected; otherwise OutputError names it by `what`.
 */
export async function writeEncodedPart(
  format: OutputFormat,
  path: string,
  bytes: Uint8Array,
  rows: number,
  what: string,
): Promise<void> {
  // No folder fsync per part: the manifest's write syncs the folder once (see AtomicWriteOptions).
  await writeFileAtomic(path, bytes, {
    syncDirectory: false,
    verify: async (temp) => {
      const written = await CODECS[format].countRows(bytes, temp);
      if (written !== rows) throw new OutputError(`${what}: encoded ${written} rows, expected ${rows}`);
    },
  });
}

/** Writes one part file; returns its size in bytes. */
export async function writePartFile(
  spec: PartFileSpec,
  rows: PartRows,
  metadata: Record<string, string>,
): Promise<number> {
  const bytes = encodePart(spec.format, rows, metadata, spec.compression);
  await writeEncodedPart(spec.format, spec.path, bytes, rows.ids.length, spec.path);
  return bytes.byteLength;
}
