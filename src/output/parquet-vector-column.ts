/**
 * The float32 vector column of a part, written here instead of by parquet-wasm, then added to the
 * file parquet-wasm wrote of the other columns.
 *
 * Why: a fixed_size_list<float32> is a Parquet LIST, and the Rust writer computes a repetition and a
 * definition level for every element, one at a time, then run-length encodes them. At 1,536 dims
 * that was most of a part's encode (docs/benchmarks.md, "a sixth session"). Here every list has the
 * same length and no nulls, so the levels are the same few bytes per row, and the values are the
 * vectors' own little-endian bytes (PLAIN). Snappy does not shrink float32 vectors, so the column
 * is stored uncompressed whatever the other columns' codec; zstd and lz4 do a little, and a part
 * with either goes through parquet-wasm whole (parquet.ts).
 *
 * The column's chunk goes after the other columns' data (chunks are found by their offsets, not
 * their order), so nothing parquet-wasm wrote moves: its footer gets the column's schema elements,
 * its chunk metadata and column order, and the Arrow schema of the whole table.
 */
import {
  field,
  readStruct,
  setField,
  struct,
  type ThriftList,
  type ThriftStruct,
  type ThriftValue,
  WireType,
  writeStruct,
} from './thrift-compact.js';

/** Parquet's enum values used here (parquet.thrift). */
const FLOAT = 4;
const REQUIRED = 0;
const REPEATED = 2;
const CONVERTED_LIST = 3;
const PLAIN = 0;
const RLE = 3;
const UNCOMPRESSED = 0;
const DATA_PAGE = 0;

/** FileMetaData, SchemaElement, RowGroup, ColumnChunk and KeyValue field ids (parquet.thrift). */
const FILE = { schema: 2, rowGroups: 4, keyValue: 5, columnOrders: 7 } as const;
const SCHEMA = { numChildren: 5 } as const;
const ROW_GROUP = { columns: 1, totalByteSize: 2, numRows: 3, totalCompressedSize: 6 } as const;

/** Values per data page: about a megabyte, as parquet-rs and parquet-mr page by default. */
const PAGE_BYTES = 1 << 20;

const utf8 = (text: string): Uint8Array => Buffer.from(text, 'utf8');

const MAGIC = utf8('PAR1');

export interface VectorColumn {
  /** The column's name: its list group, `name.list.item` its leaf. */
  readonly name: string;
  /** Its place among the table's top-level fields. */
  readonly fieldIndex: number;
  /** Row-major, `rows * dims` values. */
  readonly values: Float32Array;
  readonly dims: number;
  readonly rows: number;
}

/**
 * `file` (a one-row-group Parquet file of every column but `column`) with `column` added, and its
 * `ARROW:schema` metadata replaced by `arrowSchema` (base64 of the IPC schema message). The file
 * comes back as pieces to write one after another: the vectors are not copied into one buffer,
 * the pieces view them where they are.
 */
export function withVectorColumn(file: Uint8Array, column: VectorColumn, arrowSchema: string): Uint8Array[] {
  const footerLength = new DataView(file.buffer, file.byteOffset + file.length - 8, 4).getUint32(0, true);
  const footerStart = file.length - 8 - footerLength;
  const { struct: footer } = readStruct(file, footerStart);
  const rowGroups = listOf(footer, FILE.rowGroups);
  if (rowGroups.length !== 1) throw new Error(`expected one row group, found ${rowGroups.length}`);
  const rowGroup = rowGroups[0] as ThriftStruct;
  const rows = Number(field(rowGroup, ROW_GROUP.numRows)?.value);
  if (rows !== column.rows) throw new Error(`the file has ${rows} rows, the vector column ${column.rows}`);

  const pages = vectorPages(column);
  const chunkStart = footerStart;
  const chunkBytes = pages.reduce((sum, page) => sum + page.header.length + page.bodyLength, 0);

  const schema = listOf(footer, FILE.schema) as ThriftStruct[];
  const { element, leaf } = placeOf(schema, column.fieldIndex);
  schema.splice(element, 0, ...vectorSchemaElements(column.name));
  const root = schema[0]!;
  setField(root, SCHEMA.numChildren, WireType.I32, Number(field(root, SCHEMA.numChildren)!.value) + 1);

  (listOf(rowGroup, ROW_GROUP.columns) as ThriftStruct[]).splice(
    leaf,
    0,
    columnChunk(column, chunkStart, chunkBytes, pages.length),
  );
  addTo(rowGroup, ROW_GROUP.totalByteSize, chunkBytes);
  addTo(rowGroup, ROW_GROUP.totalCompressedSize, chunkBytes);
  const orders = field(footer, FILE.columnOrders);
  if (orders) (orders.value as ThriftList).items.splice(leaf, 0, struct([1, WireType.Struct, struct()]));
  replaceKeyValue(footer, 'ARROW:schema', arrowSchema);

  const newFooter = writeStruct(footer);
  const tail = new Uint8Array(newFooter.length + 8);
  tail.set(newFooter, 0);
  new DataView(tail.buffer).setUint32(newFooter.length, newFooter.length, true);
  tail.set(MAGIC, newFooter.length + 4);
  return [file.subarray(0, footerStart), ...pages.flatMap((page) => pagePieces(page, column)), tail];
}

interface Page {
  readonly header: Uint8Array;
  readonly bodyLength: number;
  readonly firstRow: number;
  readonly rows: number;
  readonly repetition: Uint8Array;
  readonly definition: Uint8Array;
}

/**
 * The data pages (v1) of the column, each a header and a body: repetition levels (0 then dims − 1
 * ones per row), definition levels (all 1: every element present), PLAIN values.
 */
function vectorPages({ dims, rows }: VectorColumn): Page[] {
  const rowsPerPage = Math.max(1, Math.floor(PAGE_BYTES / (dims * 4)));
  const repetition = repetitionOfRow(dims);
  const pages: Page[] = [];
  for (let firstRow = 0; firstRow < rows; firstRow += rowsPerPage) {
    const count = Math.min(rowsPerPage, rows - firstRow);
    const definition = rleRun(count * dims, 1);
    const bodyLength = 4 + repetition.length * count + 4 + definition.length + count * dims * 4;
    const header = writeStruct(
      struct(
        [1, WireType.I32, DATA_PAGE],
        [2, WireType.I32, bodyLength],
        [3, WireType.I32, bodyLength],
        [
          5,
          WireType.Struct,
          struct(
            [1, WireType.I32, count * dims],
            [2, WireType.I32, PLAIN],
            [3, WireType.I32, RLE],
            [4, WireType.I32, RLE],
          ),
        ],
      ),
    );
    pages.push({ header, bodyLength, firstRow, rows: count, repetition, definition });
  }
  return pages;
}

/** A page as two pieces: its header and levels, then its values (a view of the vectors). */
function pagePieces(page: Page, { values, dims }: VectorColumn): Uint8Array[] {
  const levels = 4 + page.repetition.length * page.rows + 4 + page.definition.length;
  const head = new Uint8Array(page.header.length + levels);
  const view = new DataView(head.buffer);
  head.set(page.header, 0);
  let offset = page.header.length;
  view.setUint32(offset, page.repetition.length * page.rows, true);
  offset += 4;
  for (let r = 0; r < page.rows; r++, offset += page.repetition.length) head.set(page.repetition, offset);
  view.setUint32(offset, page.definition.length, true);
  head.set(page.definition, offset + 4);
  const bytes = new Uint8Array(
    values.buffer,
    values.byteOffset + page.firstRow * dims * 4,
    page.rows * dims * 4,
  );
  return [head, bytes];
}

/** One row's repetition levels at bit width 1: a run of one 0, then a run of dims − 1 ones. */
function repetitionOfRow(dims: number): Uint8Array {
  const first = rleRun(1, 0);
  if (dims === 1) return first;
  const rest = rleRun(dims - 1, 1);
  const row = new Uint8Array(first.length + rest.length);
  row.set(first, 0);
  row.set(rest, first.length);
  return row;
}

/** An RLE run of the hybrid encoding at bit width 1: ULEB128 of count << 1, then the value's byte. */
function rleRun(count: number, value: number): Uint8Array {
  const bytes: number[] = [];
  let header = count * 2;
  while (header >= 0x80) {
    bytes.push((header % 0x80) | 0x80);
    header = Math.floor(header / 0x80);
  }
  bytes.push(header, value);
  return Uint8Array.from(bytes);
}

/** What parquet-rs writes for a non-null fixed_size_list of non-null float32: a 3-level LIST. */
function vectorSchemaElements(name: string): ThriftStruct[] {
  return [
    struct(
      [3, WireType.I32, REQUIRED],
      [4, WireType.Binary, utf8(name)],
      [5, WireType.I32, 1],
      [6, WireType.I32, CONVERTED_LIST],
      [10, WireType.Struct, struct([3, WireType.Struct, struct()])],
    ),
    struct([3, WireType.I32, REPEATED], [4, WireType.Binary, utf8('list')], [5, WireType.I32, 1]),
    struct([1, WireType.I32, FLOAT], [3, WireType.I32, REQUIRED], [4, WireType.Binary, utf8('item')]),
  ];
}

function columnChunk(column: VectorColumn, start: number, bytes: number, pages: number): ThriftStruct {
  const i32List = (...items: number[]): ThriftList => ({ elementType: WireType.I32, items });
  const meta = struct(
    [1, WireType.I32, FLOAT],
    [2, WireType.List, i32List(PLAIN, RLE)],
    [
      3,
      WireType.List,
      { elementType: WireType.Binary, items: [utf8(column.name), utf8('list'), utf8('item')] },
    ],
    [4, WireType.I32, UNCOMPRESSED],
    [5, WireType.I64, BigInt(column.rows * column.dims)],
    [6, WireType.I64, BigInt(bytes)],
    [7, WireType.I64, BigInt(bytes)],
    [9, WireType.I64, BigInt(start)],
    [
      13,
      WireType.List,
      {
        elementType: WireType.Struct,
        items: [struct([1, WireType.I32, DATA_PAGE], [2, WireType.I32, PLAIN], [3, WireType.I32, pages])],
      },
    ],
  );
  return struct([2, WireType.I64, BigInt(start)], [3, WireType.Struct, meta]);
}

/**
 * Where the top-level field `fieldIndex` goes: its index in the flattened schema list (after the
 * root and every element of the fields before it) and among the leaf columns.
 */
function placeOf(schema: ThriftStruct[], fieldIndex: number): { element: number; leaf: number } {
  let element = 1;
  let leaf = 0;
  for (let f = 0; f < fieldIndex; f++) {
    // A field's subtree: count its elements and leaves (elements without children).
    let pending = 1;
    while (pending > 0) {
      const node = schema[element];
      if (!node) throw new Error(`the file's schema has fewer than ${fieldIndex} fields`);
      const children = Number(field(node, SCHEMA.numChildren)?.value ?? 0);
      if (children === 0) leaf += 1;
      pending += children - 1;
      element += 1;
    }
  }
  return { element, leaf };
}

function listOf(value: ThriftStruct, id: number): ThriftValue[] {
  const list = field(value, id);
  if (!list || list.type !== WireType.List) throw new Error(`footer field ${id} is not a list`);
  return (list.value as ThriftList).items;
}

function addTo(value: ThriftStruct, id: number, more: number): void {
  const existing = field(value, id);
  if (existing) existing.value = BigInt(existing.value as bigint | number) + BigInt(more);
}

function replaceKeyValue(footer: ThriftStruct, key: string, value: string): void {
  const encoded = utf8(value);
  const keyBytes = utf8(key);
  const entries = listOf(footer, FILE.keyValue) as ThriftStruct[];
  const same = (bytes: ThriftValue | undefined) =>
    bytes instanceof Uint8Array && Buffer.compare(bytes, keyBytes) === 0;
  const entry = entries.find((e) => same(field(e, 1)?.value));
  if (entry) setField(entry, 2, WireType.Binary, encoded);
  else entries.push(struct([1, WireType.Binary, keyBytes], [2, WireType.Binary, encoded]));
}
