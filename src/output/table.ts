/**
 * The dataset's one schema (design.md, "Output") as an Apache Arrow table. Both encoders go through
 * here, so a Parquet part and an Arrow part hold the same columns with the same types.
 */
import {
  type Data,
  type DataType,
  Field,
  FixedSizeBinary,
  FixedSizeList,
  Float16,
  Float32,
  Int8,
  Int32,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  Utf8,
} from 'apache-arrow';
import {
  binaryBytes,
  float16Bits,
  formOfPlanKey,
  int8Scale,
  packSigns,
  toInt8,
  type VectorType,
} from '../embedding/vector-form.js';
import { flatVectors, type PartRows } from './rows.js';

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

/**
 * The quantized vector columns (`--vector-type`), after the image columns, each derived from
 * `embedding` as the writer stores it: float16 the nearest half; int8 `round(x / scale)` with one
 * float32 scale per vector (its largest magnitude is 127); binary one bit per dimension, set for
 * x ≥ 0, the first dimension in the most significant bit.
 */
export const VECTOR_TYPE_COLUMNS: Readonly<Record<VectorType, readonly string[]>> = {
  float16: ['embedding_float16'],
  int8: ['embedding_int8', 'embedding_int8_scale'],
  binary: ['embedding_binary'],
};

export function embeddingType(dims: number): FixedSizeList<Float32> {
  return listOf(new Float32(), dims);
}

function vectorTypeFields(type: VectorType, dims: number): Field[] {
  switch (type) {
    case 'float16':
      return [
        new Field(
          'embedding_float16',
          new FixedSizeList(dims, new Field('item', new Float16(), false)),
          false,
        ),
      ];
    case 'int8':
      return [
        new Field('embedding_int8', listOf(new Int8(), dims), false),
        new Field('embedding_int8_scale', new Float32(), false),
      ];
    case 'binary':
      return [new Field('embedding_binary', new FixedSizeBinary(binaryBytes(dims)), false)];
  }
}

/** The vector types a file of this metadata holds: its plan's (every file of one plan has the same columns). */
export function vectorTypesOf(metadata: Record<string, string>): readonly VectorType[] {
  return formOfPlanKey(metadata['embedpipe.plan']).types;
}

export function partSchema(
  dims: number,
  metadata: Record<string, string>,
  images = false,
  vectorTypes: readonly VectorType[] = vectorTypesOf(metadata),
): Schema {
  return new Schema(
    [
      new Field('id', new Utf8(), false),
      new Field('chunk_index', new Int32(), false),
      new Field('text', new Utf8(), false),
      new Field('embedding', embeddingType(dims), false),
      new Field('tokens', new Int32(), false),
      new Field('content_hash', new Utf8(), false),
      ...(images ? IMAGE_COLUMNS.map((name) => new Field(name, new Utf8(), true)) : []),
      ...vectorTypes.flatMap((type) => vectorTypeFields(type, dims)),
    ],
    new Map(Object.entries(metadata)),
  );
}

/** An Arrow table over `rows`; the vector column wraps the rows' vectors (copied only when in several runs). */
export function partTable(rows: PartRows, metadata: Record<string, string>): Table {
  const vectorTypes = vectorTypesOf(metadata);
  const schema = partSchema(rows.dims, metadata, rows.images !== undefined, vectorTypes);
  const length = rows.ids.length;
  const vectors = flatVectors(rows);
  const embedding = makeData({
    type: embeddingType(rows.dims),
    length,
    nullCount: 0,
    child: makeData({ type: new Float32(), length: vectors.length, data: vectors }),
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
  for (const type of vectorTypes) children.push(...quantizedData(type, vectors, rows.dims, length));
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

/** The column data of one vector type, computed from the float32 vectors. */
function quantizedData(type: VectorType, vectors: Float32Array, dims: number, length: number): Data[] {
  switch (type) {
    case 'float16': {
      const bits = new Uint16Array(vectors.length);
      for (let i = 0; i < vectors.length; i++) bits[i] = float16Bits(vectors[i]!);
      return [listData(makeData({ type: new Float16(), length: bits.length, data: bits }), dims, length)];
    }
    case 'int8': {
      const values = new Int8Array(vectors.length);
      const scales = new Float32Array(length);
      for (let r = 0; r < length; r++) {
        const scale = int8Scale(vectors, r * dims, dims);
        scales[r] = scale;
        for (let j = 0; j < dims; j++) values[r * dims + j] = toInt8(vectors[r * dims + j]!, scale);
      }
      return [
        listData(makeData({ type: new Int8(), length: values.length, data: values }), dims, length),
        makeData({ type: new Float32(), length, data: scales }),
      ];
    }
    case 'binary': {
      const width = binaryBytes(dims);
      const bytes = new Uint8Array(length * width);
      for (let r = 0; r < length; r++) packSigns(vectors, r * dims, dims, bytes, r * width);
      return [makeData({ type: new FixedSizeBinary(width), length, nullCount: 0, data: bytes })];
    }
  }
}

/** `length` fixed-size lists of `dims` over `child`'s values. */
function listData(child: Data, dims: number, length: number): Data {
  return makeData({ type: listOf(child.type, dims), length, nullCount: 0, child });
}

function listOf<T extends DataType>(item: T, dims: number): FixedSizeList<T> {
  return new FixedSizeList(dims, new Field('item', item, false));
}
