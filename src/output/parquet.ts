/**
 * Parquet encoding of one part, through parquet-wasm (the Rust parquet crate compiled to wasm).
 *
 * Writer settings, each measured (figures: docs/benchmarks.md, "Design figures"):
 * - dictionary encoding off: on the vector column it made parts larger and the encode much
 *   slower, and the per-column switch does not reach the nested vector column
 *   (`embedding.list.item`), so it is off globally (ids, texts and hashes are mostly unique anyway);
 * - PLAIN for every column. BYTE_STREAM_SPLIT on the vectors made files a little smaller with
 *   snappy but the encode much slower, on the thread that also sends the requests; PLAIN is also
 *   what every reader reads;
 * - statistics per chunk on the columns a filter can prune by (id, chunk_index, tokens) only:
 *   min/max over every vector element cost a noticeable share of the encode, and over texts and
 *   content hashes (long, unordered strings) some more, and prune nothing. Statistics are off
 *   globally (the only setting that reaches the nested column) and switched back on by name.
 */
import { openAsBlob } from 'node:fs';
import { tableToIPC } from 'apache-arrow';
import * as pw from 'parquet-wasm';
import type { PartRows } from './rows.js';
import { ID_COLUMN, INDEX_COLUMN, partTable } from './table.js';

export type ParquetCompression = 'snappy' | 'zstd' | 'lz4' | 'none';

export interface ParquetOptions {
  readonly compression?: ParquetCompression;
}

/**
 * Snappy: about as much CPU as no compression (it writes less) and a little smaller (the texts
 * compress, the vectors barely); zstd is a little smaller again but takes several times the CPU.
 * Every Parquet reader reads snappy. Figures: docs/benchmarks.md, "Design figures".
 */
export const DEFAULT_PARQUET_COMPRESSION: ParquetCompression = 'snappy';

const CODECS: Record<ParquetCompression, pw.Compression> = {
  snappy: pw.Compression.SNAPPY,
  zstd: pw.Compression.ZSTD,
  lz4: pw.Compression.LZ4_RAW,
  none: pw.Compression.UNCOMPRESSED,
};

/** One Parquet file (one row group) holding `rows`; `metadata` becomes the file's key-value metadata. */
export function encodeParquet(
  rows: PartRows,
  metadata: Record<string, string>,
  options: ParquetOptions = {},
): Uint8Array {
  const ipc = tableToIPC(partTable(rows, metadata), 'stream');
  // writeParquet consumes (frees) both wasm objects, even when it throws; free them only if we
  // never get that far.
  const props = writerProperties(metadata, options.compression ?? DEFAULT_PARQUET_COMPRESSION);
  let table: pw.Table;
  try {
    table = pw.Table.fromIPCStream(ipc);
  } catch (error) {
    props.free();
    throw error;
  }
  return pw.writeParquet(table, props);
}

/** A Parquet file's key-value metadata, read from its footer (the file is not read whole). */
export async function parquetFileMetadata(path: string): Promise<Record<string, string>> {
  return (await parquetFooter(path)).metadata;
}

export interface ParquetFooter {
  readonly metadata: Record<string, string>;
  readonly rows: number;
  /** Rows per row group. */
  readonly rowGroups: readonly number[];
}

/** Rows in a Parquet file, from its footer (the file is not read whole). */
export function parquetRowCount(path: string): Promise<number> {
  return readFooter(path, (_meta, fileMeta) => fileMeta.numRows());
}

/** What a Parquet file's footer says: key-value metadata and row counts (the file is not read whole). */
export function parquetFooter(path: string): Promise<ParquetFooter> {
  return readFooter(path, (meta, fileMeta) => {
    const entries = fileMeta.keyValueMetadata() as Map<string, string>;
    const rowGroups: number[] = [];
    for (let i = 0; i < meta.numRowGroups(); i++) {
      const group = meta.rowGroup(i);
      rowGroups.push(group.numRows());
      group.free();
    }
    return { metadata: Object.fromEntries(entries), rows: fileMeta.numRows(), rowGroups };
  });
}

/** Opens the file's footer, hands it to `read`, and frees every wasm object it opened. */
async function readFooter<T>(
  path: string,
  read: (meta: pw.ParquetMetaData, fileMeta: pw.FileMetaData) => T,
): Promise<T> {
  const file = await pw.ParquetFile.fromFile(await openAsBlob(path));
  try {
    const meta = file.metadata();
    const fileMeta = meta.fileMetadata();
    try {
      return read(meta, fileMeta);
    } finally {
      fileMeta.free();
      meta.free();
    }
  } finally {
    file.free();
  }
}

/** The columns with min/max statistics (see the module's comment). */
const PRUNING_COLUMNS = [ID_COLUMN, INDEX_COLUMN, 'tokens'] as const;

/** Row group limits for files of many batches (a part is one row group whatever its size). */
export interface RowGroupLimits {
  /** Column bytes per row group, uncompressed: the writer closes a row group when it reaches this. */
  readonly bytes: number;
  readonly rows: number;
}

/** The writer settings above; `rowGroups` for a compacted file. The caller owns (or hands on) the result. */
export function writerProperties(
  metadata: Record<string, string>,
  compression: ParquetCompression,
  rowGroups?: RowGroupLimits,
): pw.WriterProperties {
  let builder = new pw.WriterPropertiesBuilder()
    .setCompression(CODECS[compression])
    .setDictionaryEnabled(false)
    .setEncoding(pw.Encoding.PLAIN)
    .setStatisticsEnabled(pw.EnabledStatistics.None)
    .setKeyValueMetadata(new Map(Object.entries(metadata)));
  for (const column of PRUNING_COLUMNS)
    builder = builder.setColumnStatisticsEnabled(column, pw.EnabledStatistics.Chunk);
  if (rowGroups) builder = builder.setMaxRowGroupBytes(rowGroups.bytes).setMaxRowGroupSize(rowGroups.rows);
  return builder.build();
}
