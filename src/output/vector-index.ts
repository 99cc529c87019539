/**
 * The vectors a dataset folder already holds, by `content_hash` (model + exact chunk text): a run
 * whose plan changed (another version's chunking, other request limits, a changed corpus) reuses
 * them instead of paying for the same text again. Only the hash column is read up front; a file's
 * vectors are read when one of its rows is reused, and the last few files are kept.
 *
 * The index holds millions of rows, so it is keyed by the hash's first 52 bits as a number and
 * locates a row as one number too (a Map of numbers is several times smaller and faster than one
 * of 64-character strings). A 52-bit prefix may collide: `vector` checks the row's full hash and
 * answers undefined (not reusable, so the text is sent) when it is another text's.
 */
import { join } from 'node:path';
import type { FixedSizeList, Float32 } from 'apache-arrow';
import { readColumns } from './columns.js';
import type { OutputFormat } from './part-file.js';
import { HASH_COLUMN } from './table.js';

/** Files whose vectors are kept in memory at once. */
const CACHED_FILES = 2;

/** Rows per file a location can address: file × ROWS + row stays below 2^53. */
const ROWS = 2 ** 26;

const keyOf = (hash: string): number => Number.parseInt(hash.slice(0, 13), 16);

export class VectorIndex {
  readonly #dir: string;
  readonly #files: string[];
  readonly #format: OutputFormat;
  /** Files indexed by build(); later ones were added by addFile (rows this run wrote). */
  readonly #built: number;
  /** Hash prefix → file × ROWS + row. */
  readonly #rows = new Map<number, number>();
  readonly #cache = new Map<number, { vectors: Float32Array; dims: number; hashes: string[] }>();

  private constructor(dir: string, files: readonly string[], format: OutputFormat) {
    this.#dir = dir;
    this.#format = format;
    this.#files = [...files];
    this.#built = files.length;
  }

  /** The index over `files` (data files of the folder `dir`). */
  static async build(
    dir: string,
    files: readonly string[],
    format: OutputFormat = 'parquet',
  ): Promise<VectorIndex> {
    const index = new VectorIndex(dir, files, format);
    for (const [file, name] of files.entries()) {
      const table = await index.#read(name, HASH_COLUMN);
      const hashes = table.getChild(HASH_COLUMN);
      if (!hashes) continue;
      for (let row = 0; row < table.numRows; row++) index.#add(String(hashes.get(row)), file, row);
    }
    return index;
  }

  /**
   * Indexes rows written since the index was built: `hashes[i]` is row i of `file` (a data file of
   * the same folder). A hash already indexed keeps its first location.
   */
  addFile(file: string, hashes: readonly string[]): void {
    const index = this.#files.push(file) - 1;
    for (let row = 0; row < hashes.length; row++) this.#add(hashes[row]!, index, row);
  }

  #add(hash: string, file: number, row: number): void {
    const key = keyOf(hash);
    if (!this.#rows.has(key)) this.#rows.set(key, file * ROWS + row);
  }

  /** Whether the hash's vector was in the files the index was built from, or added since. */
  origin(hash: string): 'dataset' | 'run' | undefined {
    const location = this.#rows.get(keyOf(hash));
    if (location === undefined) return undefined;
    return Math.floor(location / ROWS) < this.#built ? 'dataset' : 'run';
  }

  get size(): number {
    return this.#rows.size;
  }

  /** Whether a row may hold `hash` (almost always exact; `vector` confirms). */
  has(hash: string): boolean {
    return this.#rows.has(keyOf(hash));
  }

  /** A copy of the vector stored for `hash`, or undefined. */
  async vector(hash: string): Promise<Float32Array | undefined> {
    const location = this.#rows.get(keyOf(hash));
    if (location === undefined) return undefined;
    const file = Math.floor(location / ROWS);
    const row = location % ROWS;
    let cached = this.#cache.get(file);
    if (!cached) {
      const table = await readColumns(join(this.#dir, this.#files[file]!), this.#format, [
        'embedding',
        HASH_COLUMN,
      ]);
      const column = table.getChild('embedding');
      const hashColumn = table.getChild(HASH_COLUMN);
      if (!column || !hashColumn) return undefined;
      const dims = (column.type as FixedSizeList<Float32>).listSize;
      const vectors = new Float32Array(table.numRows * dims);
      let offset = 0;
      for (const data of column.data) {
        const values = data.children[0]!.values as Float32Array;
        const start = data.offset * dims;
        vectors.set(values.subarray(start, start + data.length * dims), offset);
        offset += data.length * dims;
      }
      const hashes = Array.from({ length: table.numRows }, (_, i) => String(hashColumn.get(i)));
      cached = { vectors, dims, hashes };
      this.#cache.set(file, cached);
      if (this.#cache.size > CACHED_FILES) this.#cache.delete(this.#cache.keys().next().value!);
    }
    const { vectors, dims, hashes } = cached;
    if (hashes[row] !== hash) return undefined; // another text with the same 52-bit prefix
    return vectors.slice(row * dims, (row + 1) * dims);
  }

  #read(name: string, column: string) {
    return readColumns(join(this.#dir, name), this.#format, [column]);
  }
}
