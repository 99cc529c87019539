/**
 * The float32 vector column of a part as a Parquet column chunk, written here rather than by
 * parquet-wasm.
 *
 * Why: a fixed_size_list<float32> is a Parquet LIST, and the Rust writer computes a repetition and a
 * definition level for every element, one at a time, then run-length encodes them. At 1,536 dims
 * that was most of a part's encode (docs/benchmarks.md, "a sixth session"). Here every list has the
 * same length and no nulls, so the levels are the same few bytes per row, and the values are the
 * vectors' own little-endian bytes (PLAIN). Snappy does not shrink float32 vectors, so the column
 * is stored uncompressed whatever the other columns' codec; zstd and lz4 do a little, and a part
 * with either goes through parquet-wasm whole (parquet.ts).
 */
import { concatenated } from '../concatenated.js';
import {
  CONVERTED_LIST,
  type ColumnChunkBytes,
  dataPageHeader,
  FLOAT,
  PAGE_BYTES,
  REPEATED,
  REQUIRED,
  rleRun,
  UNCOMPRESSED,
  utf8,
} from './parquet-format.js';
import { struct, type ThriftStruct, WireType } from './thrift-compact.js';

export interface VectorColumn {
  /** The column's name: its list group, `name.list.item` its leaf. */
  readonly name: string;
  /** Row-major, `rows * dims` values, as runs of whole rows one after another. */
  readonly runs: readonly Float32Array[];
  readonly dims: number;
  readonly rows: number;
}

/**
 * The column's chunk. Its pieces view the vectors where they are: the values are not copied.
 */
export function vectorColumnChunk(column: VectorColumn): ColumnChunkBytes {
  let values = 0;
  for (const run of column.runs) values += run.length;
  if (values !== column.rows * column.dims) {
    throw new Error(
      `column ${column.name}: ${values} vector values for ${column.rows} rows of ${column.dims} dims`,
    );
  }
  const pages = vectorPages(column);
  const cursor = new RowCursor(column.runs, column.dims);
  const bytes = pages.reduce((sum, page) => sum + page.header.length + page.bodyLength, 0);
  return {
    path: [column.name, 'list', 'item'],
    type: FLOAT,
    codec: UNCOMPRESSED,
    values: column.rows * column.dims,
    pages: pages.length,
    compressedBytes: bytes,
    uncompressedBytes: bytes,
    pieces: concatenated(pages, (page) => [pageHead(page), ...cursor.take(page.rows)]),
  };
}

interface Page {
  readonly header: Uint8Array;
  readonly bodyLength: number;
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
    const header = dataPageHeader(count * dims, bodyLength, bodyLength);
    pages.push({ header, bodyLength, rows: count, repetition, definition });
  }
  return pages;
}

/** A page's header and levels (its values follow: views of the vectors). */
function pageHead(page: Page): Uint8Array {
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
  return head;
}

/** Consecutive rows of the runs, as byte views: a page's rows may span runs. */
class RowCursor {
  readonly #runs: readonly Float32Array[];
  readonly #rowBytes: number;
  #run = 0;
  /** Bytes of the current run already taken. */
  #at = 0;

  constructor(runs: readonly Float32Array[], dims: number) {
    this.#runs = runs;
    this.#rowBytes = dims * 4;
  }

  take(rows: number): Uint8Array[] {
    const views: Uint8Array[] = [];
    let wanted = rows * this.#rowBytes;
    while (wanted > 0) {
      // The runs hold rows × dims values (vectorColumnChunk checks), so one is left while rows are.
      const run = this.#runs[this.#run]!;
      const n = Math.min(wanted, run.byteLength - this.#at);
      views.push(new Uint8Array(run.buffer, run.byteOffset + this.#at, n));
      wanted -= n;
      this.#at += n;
      if (this.#at === run.byteLength) {
        this.#run++;
        this.#at = 0;
      }
    }
    return views;
  }
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

/** What parquet-rs writes for a non-null fixed_size_list of non-null float32: a 3-level LIST. */
export function vectorSchemaElements(name: string): ThriftStruct[] {
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
