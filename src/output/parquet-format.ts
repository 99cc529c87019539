/**
 * The pieces of the Parquet format a part's writer needs (parquet.thrift): enum values, a data page
 * header, a column chunk's metadata, and the snappy codec. The column writers
 * (parquet-flat-column.ts, parquet-vector-column.ts) produce `ColumnChunkBytes`; the part writer
 * (parquet-part-writer.ts) lays them out in schema order and writes the footer.
 */
import { createRequire } from 'node:module';
import { struct, type ThriftList, type ThriftStruct, WireType, writeStruct } from './thrift-compact.js';

/** Physical types. */
export const INT32 = 1;
export const FLOAT = 4;
export const BYTE_ARRAY = 6;
/** Field repetition types. */
export const REQUIRED = 0;
export const OPTIONAL = 1;
export const REPEATED = 2;
/** Converted types. */
export const CONVERTED_UTF8 = 0;
export const CONVERTED_LIST = 3;
/** Encodings. */
export const PLAIN = 0;
export const RLE = 3;
/** Compression codecs. */
export const UNCOMPRESSED = 0;
export const SNAPPY = 1;
const DATA_PAGE = 0;

/** A name or key as Parquet's footer stores it. */
export const utf8 = (text: string): Uint8Array => Buffer.from(text, 'utf8');

/** Bytes of values per data page: about a megabyte, as parquet-rs and parquet-mr page by default. */
export const PAGE_BYTES = 1 << 20;

/** Min/max of a column chunk, as their PLAIN bytes. */
export interface ChunkStatistics {
  readonly min: Uint8Array;
  readonly max: Uint8Array;
  /** Also write the deprecated min/max fields (parquet-rs does for numbers, whose order is signed). */
  readonly legacy: boolean;
}

/** One column chunk, encoded: what the footer says of it, and its bytes as pieces to write in order. */
export interface ColumnChunkBytes {
  readonly path: readonly string[];
  readonly type: number;
  readonly codec: number;
  /** Values written, nulls and list elements included (the pages' num_values summed). */
  readonly values: number;
  readonly pages: number;
  /** Page headers included. */
  readonly compressedBytes: number;
  readonly uncompressedBytes: number;
  readonly statistics?: ChunkStatistics | undefined;
  readonly pieces: readonly Uint8Array[];
}

/** A v1 data page's header: PLAIN values, RLE levels. */
export function dataPageHeader(
  values: number,
  uncompressedBytes: number,
  compressedBytes: number,
): Uint8Array {
  return writeStruct(
    struct(
      [1, WireType.I32, DATA_PAGE],
      [2, WireType.I32, uncompressedBytes],
      [3, WireType.I32, compressedBytes],
      [
        5,
        WireType.Struct,
        struct(
          [1, WireType.I32, values],
          [2, WireType.I32, PLAIN],
          [3, WireType.I32, RLE],
          [4, WireType.I32, RLE],
        ),
      ],
    ),
  );
}

/** The ColumnChunk of `chunk` starting at byte `start` of the file, as parquet-rs writes one. */
export function columnChunk(chunk: ColumnChunkBytes, start: number): ThriftStruct {
  const i32List = (...items: number[]): ThriftList => ({ elementType: WireType.I32, items });
  const stats = chunk.statistics;
  const meta = struct(
    [1, WireType.I32, chunk.type],
    [2, WireType.List, i32List(PLAIN, RLE)],
    [3, WireType.List, { elementType: WireType.Binary, items: chunk.path.map(utf8) }],
    [4, WireType.I32, chunk.codec],
    [5, WireType.I64, BigInt(chunk.values)],
    [6, WireType.I64, BigInt(chunk.uncompressedBytes)],
    [7, WireType.I64, BigInt(chunk.compressedBytes)],
    [9, WireType.I64, BigInt(start)],
    [
      12,
      WireType.Struct,
      stats &&
        struct(
          [1, WireType.Binary, stats.legacy ? stats.max : undefined],
          [2, WireType.Binary, stats.legacy ? stats.min : undefined],
          [3, WireType.I64, 0n],
          [5, WireType.Binary, stats.max],
          [6, WireType.Binary, stats.min],
          [7, WireType.True, true],
          [8, WireType.True, true],
        ),
    ],
    [
      13,
      WireType.List,
      {
        elementType: WireType.Struct,
        items: [
          struct([1, WireType.I32, DATA_PAGE], [2, WireType.I32, PLAIN], [3, WireType.I32, chunk.pages]),
        ],
      },
    ],
  );
  return struct([2, WireType.I64, 0n], [3, WireType.Struct, meta]);
}

/** An RLE run of the hybrid encoding at bit width 1: ULEB128 of count << 1, then the value's byte. */
export function rleRun(count: number, value: number): Uint8Array {
  const bytes: number[] = [];
  let header = count * 2;
  while (header >= 0x80) {
    bytes.push((header % 0x80) | 0x80);
    header = Math.floor(header / 0x80);
  }
  bytes.push(header, value);
  return Uint8Array.from(bytes);
}

export type PageCompressor = (body: Uint8Array) => Uint8Array;

let snappy: PageCompressor | null | undefined;

/**
 * Snappy's raw block format (what Parquet's SNAPPY pages hold), from the native `snappy` binding;
 * undefined where its prebuilt binary is missing for this platform (the caller then writes the part
 * through parquet-wasm, which has its own).
 */
export function snappyCompressor(): PageCompressor | undefined {
  if (snappy === undefined) {
    try {
      const { compressSync } = createRequire(import.meta.url)('snappy') as typeof import('snappy');
      snappy = (body) => compressSync(body);
    } catch {
      snappy = null;
    }
  }
  return snappy ?? undefined;
}
