/**
 * Rows and vectors on their way into and out of PostgreSQL. Vectors go in as one binary `vector[]`
 * parameter per statement (pgvector's own wire format, 4 bytes a value): through pglite-socket that
 * loads several times faster than `'[…]'` text literals (docs/benchmarks.md, `sync` and `search`),
 * whose parsing (strtof per value) dominates, and it
 * carries float32 values exactly without any decimal formatting. They come back as text.
 */
import type { RowKey, StoreRow } from './store.js';

/** Largest finite halfvec value; pgvector refuses larger ones. */
const HALF_MAX = 65504;
const INT4_MAX = 2 ** 31 - 1;

/**
 * A `vector[]` in PostgreSQL's binary array format (array_send): header, one dimension, then each
 * element as its length and pgvector's vector_send body (int16 dims, int16 unused, float4s).
 */
export function vectorArrayParam(vectors: readonly Float32Array[], vectorOid: number): Buffer {
  let size = 20;
  for (const v of vectors) size += 8 + 4 * v.length;
  const buffer = Buffer.allocUnsafe(size);
  const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  view.setInt32(0, 1); // dimensions
  view.setInt32(4, 0); // no NULL elements
  view.setUint32(8, vectorOid);
  view.setInt32(12, vectors.length);
  view.setInt32(16, 1); // lower bound
  let at = 20;
  for (const v of vectors) at = writeVector(view, at, v, true);
  return buffer;
}

/** One `vector` in pgvector's binary format (vector_send), for a query parameter. */
export function vectorParam(vector: Float32Array): Buffer {
  const buffer = Buffer.allocUnsafe(4 + 4 * vector.length);
  writeVector(new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength), 0, vector, false);
  return buffer;
}

function writeVector(view: DataView, start: number, vector: Float32Array, withLength: boolean): number {
  let at = start;
  if (withLength) {
    view.setInt32(at, 4 + 4 * vector.length);
    at += 4;
  }
  view.setInt16(at, vector.length);
  view.setInt16(at + 2, 0);
  at += 4;
  for (let i = 0; i < vector.length; i++, at += 4) view.setFloat32(at, vector[i]!);
  return at;
}

/** `[0.1,-2e-05,…]` (vector or halfvec text output) as a Float32Array. */
export function parseVector(text: string): Float32Array {
  const inner = text.trim().slice(1, -1);
  if (inner.trim() === '') return new Float32Array(0);
  const parts = inner.split(',');
  const vector = new Float32Array(parts.length);
  for (let i = 0; i < parts.length; i++) vector[i] = Number(parts[i]);
  return vector;
}

/** `row "doc-7" chunk 3`, for messages (a long id cut short). */
export function rowName(key: RowKey): string {
  const id = key.id.length > 80 ? `${key.id.slice(0, 77)}...` : key.id;
  return `row ${JSON.stringify(id)} chunk ${key.chunkIndex}`;
}

/**
 * What PostgreSQL would refuse in a row, in words, checked before it is sent so the message can
 * name the row (a refused array element names none): other dims, a non-finite value, a NUL in text.
 */
export function rowProblem(row: StoreRow, dims: number, halfvec: boolean): string | undefined {
  if (!Number.isInteger(row.chunkIndex) || row.chunkIndex < 0 || row.chunkIndex > INT4_MAX)
    return `chunk_index ${row.chunkIndex} is not a non-negative 32-bit integer`;
  for (const [column, value] of [
    ['id', row.id],
    ['text', row.text],
    ['content_hash', row.contentHash],
  ] as const)
    if (typeof value !== 'string' || value.includes('\u0000'))
      return `its ${column} is not a string without NUL characters (PostgreSQL text cannot hold NUL)`;
  const { embedding } = row;
  if (embedding.length !== dims) return `its embedding has ${embedding.length} dims, the table ${dims}`;
  for (let i = 0; i < embedding.length; i++) {
    const value = embedding[i]!;
    if (!Number.isFinite(value)) return `its embedding holds ${value} at ${i}`;
    if (halfvec && Math.abs(value) > HALF_MAX)
      return `its embedding holds ${value} at ${i}, beyond halfvec's range (±${HALF_MAX})`;
  }
  return undefined;
}

/** About how many bytes a row takes in a load statement (its text as UTF-8, its vector binary). */
export function rowBytes(row: StoreRow): number {
  return (
    32 +
    Buffer.byteLength(row.id) +
    Buffer.byteLength(row.text) +
    row.contentHash.length +
    4 * row.embedding.length
  );
}

/** `items` cut into runs of about `budget` bytes each (at least one item per run). */
export function* batches<T>(
  items: readonly T[],
  budget: number,
  bytesOf: (item: T) => number,
): Generator<T[]> {
  let batch: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = bytesOf(item);
    if (batch.length > 0 && bytes + size > budget) {
      yield batch;
      batch = [];
      bytes = 0;
    }
    batch.push(item);
    bytes += size;
  }
  if (batch.length > 0) yield batch;
}
