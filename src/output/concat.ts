/**
 * Concatenation of Arrow record batches into one, so a compacted Arrow IPC file holds a few large
 * record batches instead of one per part (readers pay per batch: chunked columns, per-batch
 * dispatch). Generic over the column types the dataset uses, by type, not by column name:
 * fixed-width numbers and binaries, UTF-8 strings and fixed-size lists of those. Columns are never null.
 */
import { type Data, DataType, makeData, RecordBatch, type Schema, Struct } from 'apache-arrow';

type TypedArray =
  | Int8Array
  | Int16Array
  | Int32Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | Float32Array
  | Float64Array
  | BigInt64Array
  | BigUint64Array;

import { OutputError } from '../errors.js';

/** One batch holding `batches`' rows in order; a single batch is returned as is (no copy). */
export function concatBatches(schema: Schema, batches: readonly RecordBatch[]): RecordBatch {
  if (batches.length === 1) return batches[0]!;
  const length = batches.reduce((sum, b) => sum + b.numRows, 0);
  const children = schema.fields.map((field, i) =>
    concatData(
      field.type,
      batches.map((b) => b.data.children[i]!),
      field.name,
    ),
  );
  return new RecordBatch(
    schema,
    makeData({ type: new Struct(schema.fields), length, nullCount: 0, children }),
  );
}

/** Bytes of column data a batch holds (what its rows cost a reader), for sizing record batches. */
export function batchBytes(batch: RecordBatch): number {
  return batch.data.children.reduce((sum, data) => sum + dataBytes(data), 0);
}

function dataBytes(data: Data): number {
  if (DataType.isUtf8(data.type)) {
    const offsets = data.valueOffsets as Int32Array;
    return offsets.byteLength + (offsets[data.length]! - offsets[0]!);
  }
  if (DataType.isFixedSizeList(data.type)) return dataBytes(data.children[0]!);
  return data.length * data.stride * (data.values as TypedArray).BYTES_PER_ELEMENT;
}

function concatData(type: DataType, parts: readonly Data[], column: string): Data {
  if (parts.some((p) => p.nullCount > 0)) throw new OutputError(`column ${column}: nulls cannot be merged`);
  const length = parts.reduce((sum, p) => sum + p.length, 0);
  if (DataType.isFixedSizeList(type)) {
    const child = concatData(
      type.children[0]!.type,
      parts.map((p) => p.children[0]!),
      column,
    );
    return makeData({ type, length, nullCount: 0, child });
  }
  if (DataType.isUtf8(type)) {
    // A sliced string column keeps the whole value buffer: its offsets say which bytes are its own.
    const offsets = new Int32Array(length + 1);
    let bytes = 0;
    for (const p of parts) {
      const own = p.valueOffsets as Int32Array;
      bytes += own[p.length]! - own[0]!;
    }
    const values = new Uint8Array(bytes);
    let row = 0;
    let at = 0;
    for (const p of parts) {
      const own = p.valueOffsets as Int32Array;
      const base = own[0]!;
      for (let i = 1; i <= p.length; i++) offsets[row + i] = at + own[i]! - base;
      values.set((p.values as Uint8Array).subarray(base, own[p.length]!), at);
      at += own[p.length]! - base;
      row += p.length;
    }
    return makeData({ type, length, nullCount: 0, valueOffsets: offsets, data: values });
  }
  if (DataType.isInt(type) || DataType.isFloat(type) || DataType.isFixedSizeBinary(type)) {
    // A sliced fixed-width column's values start at its first row (apache-arrow slices them).
    const first = parts[0]!;
    const values = new (first.values.constructor as new (n: number) => TypedArray)(length * first.stride);
    let at = 0;
    for (const p of parts) {
      const own = (p.values as TypedArray).subarray(0, p.length * p.stride);
      // Same element type as `values` (one column type): the union only confuses TypeScript.
      (values as Float64Array).set(own as Float64Array, at);
      at += own.length;
    }
    // biome-ignore lint/suspicious/noExplicitAny: makeData's overloads are keyed by the static type
    return makeData({ type: type as any, length, nullCount: 0, data: values as any });
  }
  throw new OutputError(`column ${column}: type ${type} cannot be merged`);
}
