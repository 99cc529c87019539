/**
 * Arrow for the LanceDB store: the table's schema, a group's rows as one Arrow table, and the
 * columns read back.
 *
 * `@lancedb/lancedb` is CommonJS and `require`s apache-arrow's CommonJS build, while an ESM
 * `import 'apache-arrow'` loads its ESM build: two copies of every class. LanceDB serializes what
 * it is handed with its copy, and objects of the other copy come out as IPC bytes its Rust side
 * cannot read ("Unable to get root as footer"). So this store builds every schema and table with
 * the copy LanceDB itself uses.
 */
import { createRequire } from 'node:module';
import type { DataType, Field, RecordBatch, Schema, Table, Vector } from 'apache-arrow';
import type { RowKey, StoreRow } from './store.js';

type Arrow = typeof import('apache-arrow');
const arrow = createRequire(import.meta.url)('apache-arrow') as Arrow;

export const COLUMNS = ['id', 'chunk_index', 'text', 'content_hash', 'embedding'] as const;

/** The store's schema: embedpipe's row key, text and hash, and `embedding` holding `metadata`. */
export function storeSchema(dims: number, metadata: ReadonlyMap<string, string>): Schema {
  const { Field: F, Schema: S, Utf8, Int32, Float32, FixedSizeList } = arrow;
  const embedding = new FixedSizeList(dims, new F('item', new Float32(), true));
  return new S([
    new F('id', new Utf8(), false),
    new F('chunk_index', new Int32(), false),
    new F('text', new Utf8(), false),
    new F('content_hash', new Utf8(), false),
    new F('embedding', embedding, false, new Map(metadata)),
  ]);
}

/** The vector length of a schema's `embedding` column, when it is a FixedSizeList of Float32. */
export function embeddingDims(schema: Schema): number | undefined {
  const type = schema.fields.find((field) => field.name === 'embedding')?.type;
  if (!type || !arrow.DataType.isFixedSizeList(type)) return undefined;
  const child = type.children[0]?.type;
  return child && arrow.DataType.isFloat(child) && child.precision === arrow.Precision.SINGLE
    ? type.listSize
    : undefined;
}

/** What is wrong with an existing table's columns, one phrase each (empty: usable). */
export function columnProblems(schema: Schema): string[] {
  const byName = new Map<string, Field>(schema.fields.map((field) => [field.name, field]));
  const missing = COLUMNS.filter((name) => !byName.has(name));
  const problems =
    missing.length > 0 ? [`it lacks the column${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`] : [];
  const expect = (name: string, ok: (type: DataType) => boolean, what: string) => {
    const field = byName.get(name);
    if (field && !ok(field.type)) problems.push(`its column ${name} is ${field.type}, not ${what}`);
  };
  expect('id', arrow.DataType.isUtf8, 'Utf8');
  expect('chunk_index', (type) => arrow.DataType.isInt(type) && type.bitWidth === 32, 'Int32');
  expect('text', arrow.DataType.isUtf8, 'Utf8');
  expect('content_hash', arrow.DataType.isUtf8, 'Utf8');
  expect('embedding', () => embeddingDims(schema) !== undefined, 'FixedSizeList<Float32>');
  return problems;
}

/** One group's rows as one Arrow table of `schema` (a single record batch, vectors copied once). */
export function rowsTable(rows: readonly StoreRow[], schema: Schema, dims: number): Table {
  const { makeData, Struct, Int32, Float32, RecordBatch: Batch, Table: T } = arrow;
  const length = rows.length;
  const vectors = new Float32Array(length * dims);
  for (const [i, row] of rows.entries()) vectors.set(row.embedding, i * dims);
  const embeddingType = schema.fields.find((field) => field.name === 'embedding')!.type;
  const children = [
    utf8Data(rows.map((row) => row.id)),
    makeData({
      type: new Int32(),
      length,
      nullCount: 0,
      data: Int32Array.from(rows, (row) => row.chunkIndex),
    }),
    utf8Data(rows.map((row) => row.text)),
    utf8Data(rows.map((row) => row.contentHash)),
    makeData({
      type: embeddingType,
      length,
      nullCount: 0,
      child: makeData({ type: new Float32(), length: length * dims, data: vectors }),
    }),
  ];
  const data = makeData({ type: new Struct(schema.fields), length, nullCount: 0, children });
  return new T([new Batch(schema, data)]);
}

const encoder = new TextEncoder();

/** A Utf8 column built directly (offsets + bytes), without arrow's builders and their chunking. */
function utf8Data(values: readonly string[]) {
  const encoded = values.map((value) => encoder.encode(value));
  const offsets = new Int32Array(values.length + 1);
  encoded.forEach((bytes, i) => {
    offsets[i + 1] = offsets[i]! + bytes.length;
  });
  const total = offsets[values.length]!;
  // Int32 offsets overflow past 2 GiB (the group bounds keep a group far below).
  if (total < 0 || total > 0x7fffffff) throw new RangeError('a group holds over 2 GiB of text');
  const data = new Uint8Array(total);
  for (const [i, bytes] of encoded.entries()) data.set(bytes, offsets[i]!);
  return arrow.makeData({
    type: new arrow.Utf8(),
    length: values.length,
    nullCount: 0,
    valueOffsets: offsets,
    data,
  });
}

/** The row keys of a batch read with `select` (id and chunk_index among the columns). */
export function keysOf(batch: RecordBatch): RowKey[] {
  const ids = batch.getChild('id') as Vector | null;
  const chunks = batch.getChild('chunk_index') as Vector | null;
  const out: RowKey[] = [];
  for (let i = 0; i < batch.numRows; i++)
    out.push({ id: String(ids?.get(i)), chunkIndex: Number(chunks?.get(i)) });
  return out;
}

/** A string column of a batch. */
export function stringsOf(batch: RecordBatch, name: string): string[] {
  const column = batch.getChild(name) as Vector | null;
  return Array.from({ length: batch.numRows }, (_, i) => String(column?.get(i)));
}

/** Each row's embedding, copied out of the batch (a view would pin the whole batch). */
export function embeddingsOf(batch: RecordBatch): Float32Array[] {
  const column = batch.getChild('embedding') as Vector | null;
  const out: Float32Array[] = [];
  for (let i = 0; i < batch.numRows; i++) {
    const value = column?.get(i) as Vector | null | undefined;
    out.push(Float32Array.from((value?.toArray() as Float32Array | undefined) ?? []));
  }
  return out;
}
