/**
 * Parquet encoding of one part: by embedpipe (parquet-part-writer.ts) with snappy or none, by
 * parquet-wasm (the Rust parquet crate compiled to wasm) whole with zstd or lz4 or the quantized
 * vector columns. Both write the same columns, types, encodings and statistics.
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
import { type FileHandle, open } from 'node:fs/promises';
import { endianness } from 'node:os';
import { type Table, tableToIPC } from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import type * as pw from 'parquet-wasm';
import type { ChunkCodec } from './parquet-flat-column.js';
import { SNAPPY, snappyCompressor, UNCOMPRESSED } from './parquet-format.js';
import { writeParquetPart } from './parquet-part-writer.js';
import { parquetWasm } from './parquet-wasm.js';
import type { PartRows } from './rows.js';
import { ID_COLUMN, INDEX_COLUMN, partTable, vectorTypesOf } from './table.js';

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

/** parquet-wasm's codec for each compression. */
function wasmCodec(compression: ParquetCompression): pw.Compression {
  const { Compression } = parquetWasm();
  const codecs: Record<ParquetCompression, pw.Compression> = {
    snappy: Compression.SNAPPY,
    zstd: Compression.ZSTD,
    lz4: Compression.LZ4_RAW,
    none: Compression.UNCOMPRESSED,
  };
  return codecs[compression];
}

/** The page codecs of the parts embedpipe writes itself; undefined: written through parquet-wasm. */
function chunkCodec(compression: ParquetCompression): ChunkCodec | undefined {
  if (compression === 'none') return { id: UNCOMPRESSED };
  if (compression !== 'snappy') return undefined;
  const compress = snappyCompressor();
  return compress && { id: SNAPPY, compress };
}

/** Parquet wants little-endian values: the vectors' own bytes are written as they are. */
const LITTLE_ENDIAN = endianness() === 'LE';

/**
 * One Parquet file holding `rows` in one row group whatever their number (parquet-rs would close one
 * at 1,048,576 rows); `metadata` becomes the file's key-value metadata. The file as pieces to write
 * in order (the vectors are not copied into one buffer).
 */
export function encodeParquetPieces(
  rows: PartRows,
  metadata: Record<string, string>,
  options: ParquetOptions = {},
): Uint8Array[] {
  const compression = options.compression ?? DEFAULT_PARQUET_COMPRESSION;
  const codec = chunkCodec(compression);
  if (codec && rows.ids.length > 0 && LITTLE_ENDIAN && vectorTypesOf(metadata).length === 0)
    return writeParquetPart(rows, metadata, codec);
  const oneRowGroup = { rows: Math.max(1, rows.ids.length), bytes: 2 ** 31 };
  return [writeWithParquetWasm(partTable(rows, metadata), metadata, compression, oneRowGroup)];
}

/** The same file in one buffer. */
export function encodeParquet(
  rows: PartRows,
  metadata: Record<string, string>,
  options: ParquetOptions = {},
): Uint8Array {
  return Buffer.concat(encodeParquetPieces(rows, metadata, options));
}

function writeWithParquetWasm(
  table: Table,
  metadata: Record<string, string>,
  compression: ParquetCompression,
  rowGroups: RowGroupLimits,
): Uint8Array {
  const ipc = tableToIPC(table, 'stream');
  // writeParquet consumes (frees) both wasm objects, even when it throws; free them only if we
  // never get that far.
  const props = writerProperties(metadata, compression, rowGroups);
  let wasmTable: pw.Table;
  try {
    wasmTable = parquetWasm().Table.fromIPCStream(ipc);
  } catch (error) {
    props.free();
    throw error;
  }
  return parquetWasm().writeParquet(wasmTable, props);
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
export async function parquetRowCount(path: string): Promise<number> {
  return (await parquetFooter(path)).rows;
}

/**
 * What a Parquet file's footer says: key-value metadata and row counts. The footer alone is read,
 * and parsed by hyparquet: a reader independent of the writer (a written file is read back through
 * it), and ~8× cheaper than parquet-wasm's asynchronous file reader, which every group commit paid
 * (docs/benchmarks.md, "Design figures").
 */
export async function parquetFooter(path: string): Promise<ParquetFooter> {
  const footer = parquetMetadata(await footerBytes(path), { geoparquet: false });
  const metadata: Record<string, string> = {};
  for (const { key, value } of footer.key_value_metadata ?? []) metadata[key] = value ?? '';
  return {
    metadata,
    rows: Number(footer.num_rows),
    rowGroups: footer.row_groups.map((group) => Number(group.num_rows)),
  };
}

/** Bytes read from a file's end at first: a part's or a group's footer (its batch records too) fits. */
const TAIL_BYTES = 64 * 1024;

/** A Parquet file's footer, its length and the closing magic (one read when the footer fits TAIL_BYTES). */
async function footerBytes(path: string): Promise<Uint8Array> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    // "PAR1", at least one byte of footer, its length, "PAR1".
    if (size < 13) throw new Error(`not a Parquet file (${size} bytes)`);
    let length = Math.min(size, TAIL_BYTES);
    let tail = await readAt(handle, length, size - length);
    const footerLength = tail.readUInt32LE(length - 8);
    if (footerLength > size - 12)
      throw new Error(`not a Parquet file (a footer of ${footerLength} bytes in ${size})`);
    if (footerLength + 8 > length) {
      length = footerLength + 8;
      tail = await readAt(handle, length, size - length);
    }
    return tail.subarray(length - footerLength - 8);
  } finally {
    await handle.close();
  }
}

async function readAt(handle: FileHandle, length: number, position: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length);
  const { bytesRead } = await handle.read(buffer, 0, length, position);
  if (bytesRead !== length) throw new Error(`read ${bytesRead} of ${length} bytes at ${position}`);
  return buffer;
}

/** The columns with min/max statistics (see the module's comment). */
const PRUNING_COLUMNS = [ID_COLUMN, INDEX_COLUMN, 'tokens'] as const;

/** Row group limits for files of many batches (a part is one row group whatever its size). */
export interface RowGroupLimits {
  /** Column bytes per row group, uncompressed: the writer closes a row group when it reaches this. */
  readonly bytes: number;
  readonly rows: number;
}

/** The writer settings above; `rowGroups`: where row groups close. The caller owns (or hands on) the result. */
export function writerProperties(
  metadata: Record<string, string>,
  compression: ParquetCompression,
  rowGroups?: RowGroupLimits,
): pw.WriterProperties {
  const { WriterPropertiesBuilder, Encoding, EnabledStatistics } = parquetWasm();
  let builder = new WriterPropertiesBuilder()
    .setCompression(wasmCodec(compression))
    .setDictionaryEnabled(false)
    .setEncoding(Encoding.PLAIN)
    .setStatisticsEnabled(EnabledStatistics.None)
    .setKeyValueMetadata(new Map(Object.entries(metadata)));
  for (const column of PRUNING_COLUMNS)
    builder = builder.setColumnStatisticsEnabled(column, EnabledStatistics.Chunk);
  if (rowGroups) builder = builder.setMaxRowGroupBytes(rowGroups.bytes).setMaxRowGroupSize(rowGroups.rows);
  return builder.build();
}
