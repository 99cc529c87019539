/**
 * A part's flat columns as Parquet column chunks: utf8 strings (required, or optional with nulls)
 * and int32s, PLAIN, in v1 data pages of about a megabyte, each page compressed whole by the
 * chunk's codec. What parquet-rs writes for the same Arrow columns with the settings of parquet.ts.
 */

import { Utf8Buffer } from '../files/utf8-buffer.js';
import {
  BYTE_ARRAY,
  type ChunkStatistics,
  CONVERTED_UTF8,
  type ColumnChunkBytes,
  dataPageHeader,
  INT32,
  OPTIONAL,
  PAGE_BYTES,
  type PageCompressor,
  REQUIRED,
  utf8,
} from './parquet-format.js';
import { struct, type ThriftStruct, WireType } from './thrift-compact.js';

/** Where a column's PLAIN values are laid out (columns are encoded one at a time, synchronously). */
const PLAIN_SCRATCH = new Utf8Buffer(1 << 20);

export interface ChunkCodec {
  /** The ColumnMetaData codec value. */
  readonly id: number;
  /** Undefined: pages stored as they are. */
  readonly compress?: PageCompressor | undefined;
}

/** The schema element of a utf8 column (a STRING logical type, as parquet-rs writes it). */
export function utf8SchemaElement(name: string, nullable: boolean): ThriftStruct {
  return struct(
    [1, WireType.I32, BYTE_ARRAY],
    [3, WireType.I32, nullable ? OPTIONAL : REQUIRED],
    [4, WireType.Binary, utf8(name)],
    [6, WireType.I32, CONVERTED_UTF8],
    [10, WireType.Struct, struct([1, WireType.Struct, struct()])],
  );
}

export function int32SchemaElement(name: string): ThriftStruct {
  return struct([1, WireType.I32, INT32], [3, WireType.I32, REQUIRED], [4, WireType.Binary, utf8(name)]);
}

/**
 * A utf8 column: each value its 4-byte little-endian length and its UTF-8 bytes; a null is no value,
 * only a definition level of 0 (an optional column's pages start with the levels). `statistics`:
 * min/max by unsigned byte order (how Parquet orders UTF-8), over the non-null values.
 */
export function utf8ColumnChunk(
  name: string,
  values: readonly (string | null)[],
  codec: ChunkCodec,
  options: { nullable: boolean; statistics: boolean },
): ColumnChunkBytes {
  const lengths = new Int32Array(values.length);
  // Each value and its length in one pass (measuring every string first cost as much again), in a
  // buffer kept between columns: a fresh buffer with room for the worst case (3 bytes a UTF-16 code
  // unit) per column left the allocator holes to fill.
  const scratch = PLAIN_SCRATCH;
  scratch.clear();
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value === null || value === undefined) {
      if (!options.nullable) throw new Error(`column ${name}: a null at row ${i} of a required column`);
      lengths[i] = -1;
      continue;
    }
    lengths[i] = scratch.writeLengthPrefixed(value, true);
  }
  // Compressed pages keep nothing of it; pages stored as they are would: then a copy at its size.
  const plain = codec.compress ? scratch.bytes() : Buffer.from(scratch.bytes());
  const pages = new PageWriter(codec, options.nullable);
  let start = 0;
  let from = 0;
  for (let row = 0, at = 0; row < values.length; row++) {
    const length = lengths[row]!;
    if (length >= 0) at += 4 + length;
    if (at - from >= PAGE_BYTES || row === values.length - 1) {
      pages.add(plain.subarray(from, at), start, row + 1, lengths);
      start = row + 1;
      from = at;
    }
  }
  return pages.chunk([name], BYTE_ARRAY, options.statistics ? byteStatistics(plain, lengths) : undefined);
}

/** An int32 column: 4 little-endian bytes a value. */
export function int32ColumnChunk(
  name: string,
  values: Int32Array,
  codec: ChunkCodec,
  options: { statistics: boolean },
): ColumnChunkBytes {
  const plain = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  const pages = new PageWriter(codec, false);
  const perPage = PAGE_BYTES / 4;
  for (let start = 0; start < values.length; start += perPage) {
    const end = Math.min(values.length, start + perPage);
    pages.add(plain.subarray(start * 4, end * 4), start, end, undefined);
  }
  let statistics: ChunkStatistics | undefined;
  if (options.statistics && values.length > 0) {
    let min = values[0]!;
    let max = min;
    for (let i = 1; i < values.length; i++) {
      const value = values[i]!;
      if (value < min) min = value;
      else if (value > max) max = value;
    }
    statistics = { min: int32Bytes(min), max: int32Bytes(max), legacy: true };
  }
  return pages.chunk([name], INT32, statistics);
}

function int32Bytes(value: number): Uint8Array {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setInt32(0, value, true);
  return bytes;
}

/** Min/max of the non-null values of a PLAIN byte-array buffer (`lengths[i] < 0`: a null). */
function byteStatistics(plain: Buffer, lengths: Int32Array): ChunkStatistics | undefined {
  let min = -1;
  let minLength = 0;
  let max = -1;
  let maxLength = 0;
  let offset = 0;
  for (let i = 0; i < lengths.length; i++) {
    const length = lengths[i]!;
    if (length < 0) continue;
    const start = offset + 4;
    offset = start + length;
    if (min < 0) {
      min = max = start;
      minLength = maxLength = length;
      continue;
    }
    if (compareBytes(plain, start, length, min, minLength) < 0) {
      min = start;
      minLength = length;
    } else if (compareBytes(plain, start, length, max, maxLength) > 0) {
      max = start;
      maxLength = length;
    }
  }
  if (min < 0) return undefined;
  // Copies: `plain` may be the scratch the next column overwrites.
  return {
    min: Buffer.from(plain.subarray(min, min + minLength)),
    max: Buffer.from(plain.subarray(max, max + maxLength)),
    legacy: false,
  };
}

/**
 * Unsigned byte order of two values of `bytes` (a prefix first), by a plain loop: ids are short,
 * and Buffer#compare's argument checks cost more than the comparison itself.
 */
function compareBytes(bytes: Uint8Array, a: number, aLength: number, b: number, bLength: number): number {
  const common = Math.min(aLength, bLength);
  for (let k = 0; k < common; k++) {
    const difference = bytes[a + k]! - bytes[b + k]!;
    if (difference !== 0) return difference;
  }
  return aLength - bLength;
}

/** Collects a chunk's pages: header, optional definition levels, values, compressed as one body. */
class PageWriter {
  private readonly pieces: Uint8Array[] = [];
  private compressedBytes = 0;
  private uncompressedBytes = 0;
  private values = 0;

  constructor(
    private readonly codec: ChunkCodec,
    private readonly nullable: boolean,
  ) {}

  /** A page of rows `[start, end)` whose PLAIN values are `plain`. */
  add(plain: Uint8Array, start: number, end: number, lengths: Int32Array | undefined): void {
    let body = plain;
    if (this.nullable) {
      const levels = definitionLevels(lengths!, start, end);
      body = new Uint8Array(4 + levels.length + plain.length);
      new DataView(body.buffer).setUint32(0, levels.length, true);
      body.set(levels, 4);
      body.set(plain, 4 + levels.length);
    }
    const stored = this.codec.compress ? this.codec.compress(body) : body;
    const header = dataPageHeader(end - start, body.length, stored.length);
    this.pieces.push(header, stored);
    this.uncompressedBytes += header.length + body.length;
    this.compressedBytes += header.length + stored.length;
    this.values += end - start;
  }

  chunk(path: string[], type: number, statistics: ChunkStatistics | undefined): ColumnChunkBytes {
    return {
      path,
      type,
      codec: this.codec.id,
      values: this.values,
      pages: this.pieces.length / 2,
      compressedBytes: this.compressedBytes,
      uncompressedBytes: this.uncompressedBytes,
      statistics,
      pieces: this.pieces,
    };
  }
}

/**
 * Definition levels of rows `[start, end)` at bit width 1 (1 present, 0 null), bit-packed: one run
 * header (the number of 8-value groups, shifted, with the low bit set), then the bits, first value in
 * the lowest bit. Values past `end` in the last group are padding, which readers ignore.
 */
function definitionLevels(lengths: Int32Array, start: number, end: number): Uint8Array {
  const groups = Math.ceil((end - start) / 8);
  const header: number[] = [];
  for (let value = groups * 2 + 1; ; value = Math.floor(value / 0x80)) {
    if (value < 0x80) {
      header.push(value);
      break;
    }
    header.push((value % 0x80) | 0x80);
  }
  const levels = new Uint8Array(header.length + groups);
  levels.set(header, 0);
  for (let row = start; row < end; row++) {
    const i = row - start;
    if (lengths[row]! >= 0) levels[header.length + (i >> 3)]! |= 1 << (i & 7);
  }
  return levels;
}
