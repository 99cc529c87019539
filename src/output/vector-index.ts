/**
 * The vectors a dataset folder already holds, by `content_hash` (model + exact chunk text): a run
 * whose plan changed (another version's chunking, other request limits, a changed corpus) reuses
 * them instead of paying for the same text again. Only the hash column is read up front; a file's
 * vectors are read when one of its rows is reused, and the last few files are kept.
 */
import { join } from 'node:path';
import type { FixedSizeList, Float32 } from 'apache-arrow';
import { readColumns } from './columns.js';
import type { OutputFormat } from './part-file.js';
import { HASH_COLUMN } from './table.js';

/** Files whose vectors are kept in memory at once. */
const CACHED_FILES = 2;

interface Location {
  readonly file: number;
  readonly row: number;
}

export class VectorIndex {
  readonly #dir: string;
  readonly #files: string[];
  readonly #format: OutputFormat;
  /** Files indexed by build(); later ones were added by addFile (rows this run wrote). */
  readonly #built: number;
  readonly #rows = new Map<string, Location>();
  readonly #cache = new Map<number, { vectors: Float32Array; dims: number }>();

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
      for (let row = 0; row < table.numRows; row++) {
        const hash = String(hashes.get(row));
        if (!index.#rows.has(hash)) index.#rows.set(hash, { file, row });
      }
    }
    return index;
  }

  /**
   * Indexes rows written since the index was built: `hashes[i]` is row i of `file` (a data file of
   * the same folder). A hash already indexed keeps its first location.
   */
  addFile(file: string, hashes: readonly string[]): void {
    const index = this.#files.push(file) - 1;
    hashes.forEach((hash, row) => {
      if (!this.#rows.has(hash)) this.#rows.set(hash, { file: index, row });
    });
  }

  /** Whether the hash's vector was in the files the index was built from, or added since. */
  origin(hash: string): 'dataset' | 'run' | undefined {
    const location = this.#rows.get(hash);
    if (!location) return undefined;
    return location.file < this.#built ? 'dataset' : 'run';
  }

  get size(): number {
    return this.#rows.size;
  }

  has(hash: string): boolean {
    return this.#rows.has(hash);
  }

  /** A copy of the vector stored for `hash`, or undefined. */
  async vector(hash: string): Promise<Float32Array | undefined> {
    const location = this.#rows.get(hash);
    if (!location) return undefined;
    let cached = this.#cache.get(location.file);
    if (!cached) {
      const table = await this.#read(this.#files[location.file]!, 'embedding');
      const column = table.getChild('embedding');
      if (!column) return undefined;
      const dims = (column.type as FixedSizeList<Float32>).listSize;
      const vectors = new Float32Array(table.numRows * dims);
      let offset = 0;
      for (const data of column.data) {
        const values = data.children[0]!.values as Float32Array;
        const start = data.offset * dims;
        vectors.set(values.subarray(start, start + data.length * dims), offset);
        offset += data.length * dims;
      }
      cached = { vectors, dims };
      this.#cache.set(location.file, cached);
      if (this.#cache.size > CACHED_FILES) this.#cache.delete(this.#cache.keys().next().value!);
    }
    const { vectors, dims } = cached;
    return vectors.slice(location.row * dims, (location.row + 1) * dims);
  }

  #read(name: string, column: string) {
    return readColumns(join(this.#dir, name), this.#format, [column]);
  }
}
