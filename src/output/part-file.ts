/**
 * One part file: encode the rows (Parquet or Arrow IPC), check the encoded row count, and rename the
 * bytes into place atomically.
 *
 * Parquet is encoded on a worker thread (parquet-thread.ts); Arrow IPC, a few copies, in-thread.
 */
import { OutputError } from '../errors.js';
import { arrowFileMetadata, arrowRowCount, encodeArrowIpcFile } from './arrow.js';
import { writeFileAtomic } from './atomic.js';
import { type EncodedParquet, type ParquetCompression, parquetFileMetadata } from './parquet.js';
import { parquetThread } from './parquet-thread.js';
import type { PartRows } from './rows.js';

export type OutputFormat = 'parquet' | 'arrow';

export interface PartFileSpec {
  readonly path: string;
  readonly format: OutputFormat;
  readonly compression: ParquetCompression;
}

interface PartCodec {
  readonly extension: string;
  /** The encoded bytes, and the row count read back from them. */
  encode(
    rows: PartRows,
    metadata: Record<string, string>,
    compression: ParquetCompression,
  ): Promise<EncodedParquet>;
  /** The key-value metadata of a part file on disk (Parquet: footer only). */
  readMetadata(path: string): Promise<Record<string, string>>;
}

export const CODECS: Readonly<Record<OutputFormat, PartCodec>> = {
  parquet: {
    extension: '.parquet',
    encode: (rows, metadata, compression) => parquetThread.encode(rows, metadata, compression),
    readMetadata: parquetFileMetadata,
  },
  arrow: {
    extension: '.arrow',
    encode: async (rows, metadata) => {
      const bytes = encodeArrowIpcFile(rows, metadata);
      return { bytes, rows: arrowRowCount(bytes) };
    },
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
  const { bytes, rows: written } = await CODECS[format].encode(rows, metadata, compression);
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
