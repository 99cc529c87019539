/**
 * The identity of a data file's rows, read without their texts or vectors: (id, chunk_index,
 * content_hash) per row, in file order, and the vector length its schema declares. What the row
 * selection of finalize and the dataset contract work on (Parquet: only those columns' pages are read).
 */

import { hash } from 'node:crypto';
import { openAsBlob } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Data, FixedSizeList, type Schema, type Table, tableFromIPC, type Vector } from 'apache-arrow';
import { contentHash, imageContentHash } from '../content-hash.js';
import { OutputError } from '../errors.js';
import { plainUtf8, readColumns, utf8Values } from './columns.js';
import { messageOf } from './fs-errors.js';
import { hashKey, hashKeyAt } from './hash-key.js';
import { parquetWasm } from './parquet-wasm.js';
import type { OutputFormat } from './part-file.js';
import { EMBEDDING_COLUMN, HASH_COLUMN, ID_COLUMN, IMAGE_COLUMNS, INDEX_COLUMN } from './table.js';

/**
 * The ids of a file's rows, one string and one end per run of rows with the same id (a document's
 * rows are consecutive in a file): a pointer per row was 8 bytes a row of a run's memory, kept for
 * every row the run wrote until its switch.
 */
export class RowIds {
  readonly length: number;
  /** Run r holds rows `[ends[r - 1] ?? 0, ends[r])`, all with id `values[r]`. */
  readonly #values: string[];
  readonly #ends: Int32Array;

  private constructor(values: string[], ends: Int32Array) {
    this.#values = values;
    this.#ends = ends;
    this.length = ends.length === 0 ? 0 : ends[ends.length - 1]!;
  }

  /** The ids of rows in order (equal neighbours are one run). */
  static of(ids: readonly string[]): RowIds {
    const values: string[] = [];
    const ends: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (values.length > 0 && values[values.length - 1] === id) ends[ends.length - 1]! += 1;
      else {
        values.push(id);
        ends.push((ends[ends.length - 1] ?? 0) + 1);
      }
    }
    return new RowIds(values, Int32Array.from(ends));
  }

  /** The id of `row`. */
  at(row: number): string {
    const ends = this.#ends;
    let low = 0;
    let high = ends.length - 1;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (ends[mid]! > row) high = mid;
      else low = mid + 1;
    }
    return this.#values[low]!;
  }

  /** Runs of equal ids: run r holds rows `[runEnd(r - 1), runEnd(r))` (0 for the first), all `runId(r)`. */
  get runCount(): number {
    return this.#values.length;
  }

  runId(run: number): string {
    return this.#values[run]!;
  }

  runEnd(run: number): number {
    return this.#ends[run]!;
  }
}

export interface FileRowKeys {
  /** File name, relative to the dataset folder. */
  readonly file: string;
  readonly ids: RowIds;
  readonly indices: Int32Array;
  /** content_hash per row, as its first 52 bits (hash-key.ts). */
  readonly keys: Float64Array;
  /** The vector length of the file's schema; undefined when it has no fixed-size vector column. */
  readonly dims: number | undefined;
  /** Read with `model`: rows whose content_hash is not the hash of their model and text (and image). */
  readonly unhashed?: readonly number[];
}

const KEY_COLUMNS = [ID_COLUMN, INDEX_COLUMN, HASH_COLUMN];
const TEXT_COLUMN = 'text';

export interface RowKeyOptions {
  /** Also read each row's text (and image columns) and check its content_hash against this model. */
  readonly model?: string;
}

export async function readRowKeys(
  dir: string,
  file: string,
  format: OutputFormat,
  options: RowKeyOptions = {},
): Promise<FileRowKeys> {
  const path = join(dir, file);
  const columns = options.model === undefined ? KEY_COLUMNS : [...KEY_COLUMNS, TEXT_COLUMN];
  try {
    const { table, schema } =
      format === 'parquet' ? await parquetKeys(path, columns) : arrowKeys(await readFile(path), columns);
    const ids = RowIds.of(idValues(column(table, ID_COLUMN, path)));
    const indices = Int32Array.from(column(table, INDEX_COLUMN, path).toArray() as ArrayLike<number>);
    const keys = new Float64Array(table.numRows);
    const hashes = column(table, HASH_COLUMN, path);
    let decoded: string[] | undefined;
    const hashAt = (row: number) => {
      decoded ??= utf8Values(hashes);
      return decoded[row]!;
    };
    let row = 0;
    for (const data of hashes.data as Data[]) {
      const plain = plainUtf8(data);
      for (let i = 0; i < data.length; i++, row++) {
        keys[row] = plain
          ? hashKeyAt(plain.bytes, plain.offsets[i]!, plain.offsets[i + 1]!)
          : hashKey(hashAt(row));
      }
    }
    const type = schema.fields.find((f) => f.name === EMBEDDING_COLUMN)?.type;
    const dims = type instanceof FixedSizeList ? type.listSize : undefined;
    if (options.model === undefined) return { file, ids, indices, keys, dims };
    const images = schema.fields.some((f) => f.name === IMAGE_COLUMNS[0])
      ? await imageColumns(path, format)
      : undefined;
    const unhashed = uncheckedRows(column(table, TEXT_COLUMN, path), keys, options.model, images);
    return { file, ids, indices, keys, dims, unhashed };
  } catch (error) {
    if (error instanceof OutputError) throw error;
    throw new OutputError(`cannot read the rows' ids and hashes of ${path}: ${messageOf(error)}`, {
      cause: error,
    });
  }
}

/**
 * Each row's id, a row with the same id as the row before it sharing its string (a document's rows
 * are consecutive in a file: a million rows decode to about as many strings as documents).
 */
function idValues(ids: Vector): string[] {
  const values = new Array<string>(ids.length);
  let row = 0;
  for (const data of ids.data as Data[]) {
    const plain = plainUtf8(data);
    if (plain === undefined) {
      const decoded = utf8Values(ids);
      for (let i = 0; i < data.length; i++, row++) values[row] = decoded[row]!;
      continue;
    }
    const { bytes, offsets } = plain;
    let previous = '';
    let previousStart = 0;
    let previousEnd = -1;
    for (let i = 0; i < data.length; i++, row++) {
      const start = offsets[i]!;
      const end = offsets[i + 1]!;
      const same =
        end - start === previousEnd - previousStart &&
        bytes.compare(bytes, previousStart, previousEnd, start, end) === 0;
      if (!same) {
        previous = bytes.toString('utf8', start, end);
        previousStart = start;
        previousEnd = end;
      }
      values[row] = previous;
    }
  }
  return values;
}

/**
 * Rows whose text does not hash to their content_hash. A text row is hashed from its UTF-8 bytes as
 * they are in the column (no string decoded): sha256 of model, NUL, text, as contentHash computes it.
 */
function uncheckedRows(
  texts: Vector,
  keys: Float64Array,
  model: string,
  images: ((row: number) => { sha256: string } | { url: string } | undefined) | undefined,
): number[] {
  const unhashed: number[] = [];
  const prefix = Buffer.from(`${model}\0`, 'utf8');
  let scratch = Buffer.allocUnsafe(prefix.length + 4096);
  prefix.copy(scratch);
  let decoded: string[] | undefined;
  let row = 0;
  for (const data of texts.data as Data[]) {
    const plain = plainUtf8(data);
    for (let i = 0; i < data.length; i++, row++) {
      const image = images?.(row);
      let key: number;
      if (image !== undefined || plain === undefined) {
        decoded ??= utf8Values(texts);
        const text = decoded[row]!;
        key = hashKey(image ? imageContentHash(model, text, image) : contentHash(model, text));
      } else {
        const start = plain.offsets[i]!;
        const length = plain.offsets[i + 1]! - start;
        if (prefix.length + length > scratch.length) {
          scratch = Buffer.allocUnsafe(2 * (prefix.length + length));
          prefix.copy(scratch);
        }
        plain.bytes.copy(scratch, prefix.length, start, start + length);
        key = digestKey(hash('sha256', scratch.subarray(0, prefix.length + length), 'buffer'));
      }
      if (key !== keys[row]) unhashed.push(row);
    }
  }
  return unhashed;
}

/** hashKey of a digest's hex, from its bytes: the first 52 bits. */
function digestKey(digest: Buffer): number {
  return digest.readUIntBE(0, 6) * 16 + (digest[6]! >>> 4);
}

async function parquetKeys(
  path: string,
  columns: readonly string[],
): Promise<{ table: Table; schema: Schema }> {
  const file = await parquetWasm().ParquetFile.fromFile(await openAsBlob(path));
  try {
    const schema = tableFromIPC(file.schema().intoIPCStream()).schema;
    const table = tableFromIPC((await file.read({ columns: [...columns] })).intoIPCStream());
    return { table, schema };
  } finally {
    file.free();
  }
}

function arrowKeys(bytes: Buffer, columns: readonly string[]): { table: Table; schema: Schema } {
  const table = tableFromIPC(bytes);
  return { table: table.select([...columns]), schema: table.schema };
}

/** Row → what its content_hash covers of its image (contentHash's image forms), or undefined for none. */
async function imageColumns(
  path: string,
  format: OutputFormat,
): Promise<(row: number) => { sha256: string } | { url: string } | undefined> {
  const table = await readColumns(path, format, [...IMAGE_COLUMNS]);
  const sources = table.getChild(IMAGE_COLUMNS[0]);
  const shas = table.getChild(IMAGE_COLUMNS[1]);
  return (row) => hashedImage(sources?.get(row), shas?.get(row));
}

/**
 * What a row's content_hash covers of its image, from its image columns (imageContentHash's forms):
 * the image's sha256, else an http(s) URL's text (never fetched); undefined for a text row.
 */
export function hashedImage(source: unknown, sha: unknown): { sha256: string } | { url: string } | undefined {
  if (typeof sha === 'string' && sha !== '') return { sha256: sha };
  return typeof source === 'string' && /^https?:\/\//i.test(source) ? { url: source } : undefined;
}

function column(table: Table, name: string, path: string) {
  const vector = table.getChild(name);
  if (!vector) throw new OutputError(`${path} has no ${name} column: it is not a data file of embedpipe`);
  return vector;
}
