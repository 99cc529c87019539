/**
 * The dataset's one schema (design.md, "Output") as an Apache Arrow table. Both encoders go through
 * here, so a Parquet part and an Arrow part hold the same columns with the same types.
 */
import {
  type Data,
  Field,
  FixedSizeList,
  Float32,
  Int32,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  Utf8,
} from 'apache-arrow';
import type { PartRows } from './rows.js';

/** The column of the document id: what a compaction's row filter is asked about. */
export const ID_COLUMN = 'id';
/** The column of a chunk's position in its document, 0..k-1. */
export const INDEX_COLUMN = 'chunk_index';
/** The column of the content hash: what a compaction keeps the rows of still-planned batches by. */
export const HASH_COLUMN = 'content_hash';
/** The vector column. */
export const EMBEDDING_COLUMN = 'embedding';

/** Column names, in file order. */
export const COLUMNS = ['id', 'chunk_index', 'text', 'embedding', 'tokens', 'content_hash'] as const;
/** The columns a dataset whose corpus has images adds after COLUMNS: nullable utf8. */
export const IMAGE_COLUMNS = ['image_source', 'image_sha256'] as const;

export function embeddingType(dims: number): FixedSizeList<Float32> {
  return new FixedSizeList(dims, new Field('item', new Float32(), false));
}

export function partSchema(dims: number, metadata: Record<string, string>, images = false): Schema {
  return new Schema(
    [
      new Field('id', new Utf8(), false),
      new Field('chunk_index', new Int32(), false),
      new Field('text', new Utf8(), false),
      new Field('embedding', embeddingType(dims), false),
      new Field('tokens', new Int32(), false),
      new Field('content_hash', new Utf8(), false),
      ...(images ? IMAGE_COLUMNS.map((name) => new Field(name, new Utf8(), true)) : []),
    ],
    new Map(Object.entries(metadata)),
  );
}

/** An Arrow table over `rows`; the vector column wraps `rows.embeddings` without copying. */
export function partTable(rows: PartRows, metadata: Record<string, string>): Table {
  const schema = partSchema(rows.dims, metadata, rows.images !== undefined);
  const length = rows.ids.length;
  const embedding = makeData({
    type: embeddingType(rows.dims),
    length,
    nullCount: 0,
    child: makeData({ type: new Float32(), length: rows.embeddings.length, data: rows.embeddings }),
  });
  const children: Data[] = [
    utf8Data(rows.ids),
    makeData({ type: new Int32(), length, data: rows.chunkIndex }),
    utf8Data(rows.texts),
    embedding,
    makeData({ type: new Int32(), length, data: rows.tokens }),
    utf8Data(rows.hashes),
  ];
  if (rows.images) children.push(utf8Data(rows.images.sources), utf8Data(rows.images.hashes));
  const struct = makeData({ type: new Struct(schema.fields), length, nullCount: 0, children });
  return new Table([new RecordBatch(schema, struct)]);
}

/**
 * Utf8 column data: one byte buffer plus offsets, filled with encodeInto (no per-string buffers).
 * A null value is an empty slot with its validity bit clear.
 */
function utf8Data(values: readonly (string | null)[]): Data<Utf8> {
  const offsets = new Int32Array(values.length + 1);
  let total = 0;
  let nulls = 0;
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value === null) nulls += 1;
    else total += Buffer.byteLength(value!, 'utf8');
    offsets[i + 1] = total;
  }
  const bytes = new Uint8Array(total);
  const encoder = new TextEncoder();
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value !== null) encoder.encodeInto(value!, bytes.subarray(offsets[i]!, offsets[i + 1]!));
  }
  let nullBitmap: Uint8Array | undefined;
  if (nulls > 0) {
    nullBitmap = new Uint8Array(Math.ceil(values.length / 8));
    for (let i = 0; i < values.length; i++) if (values[i] !== null) nullBitmap[i >> 3]! |= 1 << (i & 7);
  }
  return makeData({
    type: new Utf8(),
    length: values.length,
    nullCount: nulls,
    ...(nullBitmap ? { nullBitmap } : {}),
    valueOffsets: offsets,
    data: bytes,
  });
}
