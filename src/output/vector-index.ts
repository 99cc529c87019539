/**
 * The vectors a dataset folder already holds, by `content_hash` (model + exact chunk text): a run
 * whose plan changed (another version's chunking, other request limits, a changed corpus) reuses
 * them instead of paying for the same text again, and a run's own duplicates are sent once. Only
 * the hash column is read up front; vectors are read when reused (a row alone, or a file whose rows
 * are wanted together), and the last few files, the last rows committed and the vectors reused are
 * kept.
 *
 * The index holds millions of rows, so it is keyed by the hash's first 52 bits as a number and
 * locates a row as one number too, in a NumberTable (16 bytes a slot; a Map of 64-character strings
 * or of numbers took several times more: docs/benchmarks.md, "Design figures"). A 52-bit prefix may collide:
 * a row's full hash is checked, and another text's row answers undefined (not reusable: the text is
 * sent).
 */
import { join } from 'node:path';
import type { FixedSizeList, Float32, Vector } from 'apache-arrow';
import type { StoredVectors } from '../embedding/reuse.js';
import { plainUtf8, readColumns, readRowsOf } from './columns.js';
import { hashKey as keyOf } from './hash-key.js';
import type { OutputFormat } from './part-file.js';
import { readRowKeys } from './row-keys.js';
import { SpillingNumberTable } from './spilling-number-table.js';
import { EMBEDDING_COLUMN, HASH_COLUMN } from './table.js';
import { VectorCache } from './vector-cache.js';

/**
 * Files whose vectors are kept in memory at once (~2 MB of vectors each with the group commit's
 * files). The batches in flight of a re-chunked dataset span two or three files.
 */
export const CACHED_FILES = 4;

/**
 * Bytes of vectors kept, twice: the rows this run committed last, by file (a duplicate close behind
 * its first copy), and vectors once reused, by hash (duplicates are mostly boilerplate: headers, notices,
 * repeated lines, back hundreds of times across a run). Without them each came back as a file read:
 * on a hostile multilingual corpus, most of the run (docs/benchmarks.md, "Design figures").
 */
const CACHE_BYTES = 8 * 2 ** 20;

/**
 * Rows of one file asked for at once from which the whole file is read (and kept among
 * CACHED_FILES): a re-chunked dataset reusing its rows in order. Fewer are read alone, each several
 * times cheaper than the file (docs/benchmarks.md, "Design figures"): duplicates here and there.
 */
const ROWS_FOR_WHOLE_FILE = 4;

/** Rows per file a location can address: file × ROWS + row stays below 2^53. */
const ROWS = 2 ** 26;

/** One record batch of a cached file, as views of the columns read (no copies). */
interface CachedBatch {
  /** The file row of its first row. */
  readonly first: number;
  readonly rows: number;
  /** Its rows' vectors, row-major. */
  readonly vectors: Float32Array;
  /** Its rows' hashes as UTF-8 bytes and offsets; undefined when not plain (read with `.get`). */
  readonly hashes: ReturnType<typeof plainUtf8>;
}

/** A file's vectors, kept while it is among the last files read. */
interface CachedFile {
  readonly batches: readonly CachedBatch[];
  readonly dims: number;
  readonly hashes: Vector;
}

export class VectorIndex implements StoredVectors {
  readonly #dir: string;
  readonly #files: string[];
  readonly #format: OutputFormat;
  /** Files indexed by build(); later ones were added by addFile (rows this run wrote). */
  readonly #built: number;
  /** Hash prefix → file × ROWS + row (the older entries on disk beside the dataset). */
  readonly #rows: SpillingNumberTable;
  /** File → its vectors, read or being read; in order of use, the last used last. */
  readonly #cache = new Map<number, Promise<CachedFile | undefined>>();
  /**
   * The files this run committed last, their hashes and vectors by row, up to CACHE_BYTES of
   * vectors: kept by file, not by row, so a commit costs one entry (a Map entry per row was ~2% of a
   * run's CPU: docs/benchmarks.md, "Design figures").
   */
  readonly #recent = new Map<
    number,
    { readonly hashes: readonly string[]; readonly vectors: readonly Float32Array[]; readonly bytes: number }
  >();
  #recentBytes = 0;
  readonly #reused = new VectorCache(CACHE_BYTES);

  private constructor(dir: string, files: readonly string[], format: OutputFormat) {
    this.#dir = dir;
    this.#rows = new SpillingNumberTable(dir);
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
      // Not kept: a nightly's switch sums most files from their records, and holding every row's
      // keys until then was most of a large re-run's memory (docs/benchmarks.md).
      const { keys } = await readRowKeys(dir, name, format);
      for (let row = 0; row < keys.length; row++) index.#addKey(keys[row]!, file, row);
    }
    return index;
  }

  /**
   * Indexes rows written since the index was built: `hashes[i]` is row i of `file` (a data file of
   * the same folder; `keys[i]` its key when the caller has it). A hash already indexed keeps its
   * first location.
   */
  addFile(
    file: string,
    hashes: readonly string[],
    vectors?: readonly Float32Array[],
    keys?: Float64Array,
  ): void {
    const index = this.#files.push(file) - 1;
    for (let row = 0; row < hashes.length; row++)
      this.#addKey(keys?.[row] ?? keyOf(hashes[row]!), index, row);
    if (vectors && vectors.length === hashes.length) this.#keepRecent(index, hashes, vectors);
  }

  #keepRecent(file: number, hashes: readonly string[], vectors: readonly Float32Array[]): void {
    const bytes = bytesOf(vectors);
    this.#recent.set(file, { hashes, vectors, bytes });
    this.#recentBytes += bytes;
    for (const [oldest, kept] of this.#recent) {
      if (this.#recentBytes <= CACHE_BYTES || oldest === file) break;
      this.#recent.delete(oldest);
      this.#recentBytes -= kept.bytes;
    }
  }

  #addKey(key: number, file: number, row: number): void {
    this.#rows.add(key, file * ROWS + row);
  }

  /** Frees the index's file; the index must not be asked afterwards. */
  close(): void {
    this.#rows.close();
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

  /** The vector stored for `hash`, or undefined. Callers never write to it (it may be shared). */
  async vector(hash: string): Promise<Float32Array | undefined> {
    return (await this.vectors([hash]))[0];
  }

  /** The vectors stored for `hashes` (undefined where none), the rows of each file read together. */
  async vectors(hashes: readonly string[]): Promise<(Float32Array | undefined)[]> {
    const found = new Array<Float32Array | undefined>(hashes.length);
    const byFile = new Map<number, { position: number; row: number }[]>();
    for (const [position, hash] of hashes.entries()) {
      // A hit in `reused` is made most recent by the get; one in `recent` moves over to `reused`.
      const reused = this.#reused.get(hash);
      if (reused) {
        found[position] = reused;
        continue;
      }
      const location = this.#rows.get(keyOf(hash));
      if (location === undefined) continue;
      const file = Math.floor(location / ROWS);
      const recent = this.#recent.get(file);
      // The hash's first 52 bits located the row: its full hash says whether it is this text's.
      if (recent?.hashes[location % ROWS] === hash) {
        const kept = recent.vectors[location % ROWS]!;
        this.#reused.set(hash, kept);
        found[position] = kept;
        continue;
      }
      const rows = byFile.get(file) ?? [];
      if (rows.length === 0) byFile.set(file, rows);
      rows.push({ position, row: location % ROWS });
    }
    for (const [file, rows] of byFile) {
      const cached =
        this.#cache.has(file) || rows.length >= ROWS_FOR_WHOLE_FILE ? await this.#cached(file) : undefined;
      const vectors = cached
        ? rows.map(({ row, position }) => vectorOf(cached, row, hashes[position]!))
        : await this.#readRows(
            file,
            rows.map(({ row, position }) => ({ row, hash: hashes[position]! })),
          );
      rows.forEach(({ position }, i) => {
        const vector = vectors[i];
        if (vector) this.#reused.set(hashes[position]!, vector);
        found[position] = vector;
      });
    }
    return found;
  }

  /**
   * The file's vectors, read whole and kept among the last CACHED_FILES used. Batches asking for the
   * same file at once share one read: each read its own copy before, and evicted the others' (a
   * re-run of a corpus shifted by five documents read its 37 files 331 times).
   */
  #cached(file: number): Promise<CachedFile | undefined> {
    const cached = this.#cache.get(file) ?? this.#loading(file);
    // Set again: the map's order is the order of use, the least recently used first.
    this.#cache.delete(file);
    this.#cache.set(file, cached);
    if (this.#cache.size > CACHED_FILES) this.#cache.delete(this.#cache.keys().next().value!);
    return cached;
  }

  /** The file's read; a failed one leaves the cache, so the next batch asking reads the file again. */
  #loading(file: number): Promise<CachedFile | undefined> {
    const loading = this.#load(file);
    loading.catch(() => {
      if (this.#cache.get(file) === loading) this.#cache.delete(file);
    });
    return loading;
  }

  /** Rows of `file`, each read alone (the file's bytes once); undefined where a row holds another hash. */
  async #readRows(
    file: number,
    rows: readonly { row: number; hash: string }[],
  ): Promise<(Float32Array | undefined)[]> {
    const tables = await readRowsOf(
      join(this.#dir, this.#files[file]!),
      this.#format,
      [EMBEDDING_COLUMN, HASH_COLUMN],
      rows.map(({ row }) => row),
    );
    return tables.map((table, i) => {
      if (table.numRows !== 1 || String(table.getChild(HASH_COLUMN)?.get(0)) !== rows[i]!.hash)
        return undefined;
      // One row: `get` resolves the slice's offsets, whatever the reader left in them.
      const vector = table.getChild(EMBEDDING_COLUMN)?.get(0) as Vector<Float32> | null | undefined;
      return vector ? new Float32Array(vector.toArray() as Float32Array) : undefined;
    });
  }

  /** The vectors and hashes of a file, as views of the columns read. */
  async #load(file: number): Promise<CachedFile | undefined> {
    const table = await readColumns(join(this.#dir, this.#files[file]!), this.#format, [
      EMBEDDING_COLUMN,
      HASH_COLUMN,
    ]);
    const column = table.getChild(EMBEDDING_COLUMN);
    const hashes = table.getChild(HASH_COLUMN);
    if (!column || !hashes) return undefined;
    const dims = (column.type as FixedSizeList<Float32>).listSize;
    // The columns of a table share its record batches: batch k of one is batch k of the other.
    const batches: CachedBatch[] = [];
    let first = 0;
    column.data.forEach((data, k) => {
      const values = data.children[0]!.values as Float32Array;
      const start = data.offset * dims;
      batches.push({
        first,
        rows: data.length,
        vectors: values.subarray(start, start + data.length * dims),
        hashes: plainUtf8(hashes.data[k]!),
      });
      first += data.length;
    });
    return { batches, dims, hashes };
  }
}

/** Row `row` of a cached file: a copy of its vector, or undefined when it holds another hash. */
function vectorOf(cached: CachedFile, row: number, hash: string): Float32Array | undefined {
  const { batches, dims, hashes } = cached;
  let at = batches.length - 1;
  while (at > 0 && batches[at]!.first > row) at--;
  const batch = batches[at];
  if (batch === undefined || row - batch.first >= batch.rows) return undefined;
  const i = row - batch.first;
  // Only this row's hash is decoded: another text with the same 52-bit prefix is not reusable.
  const stored = batch.hashes
    ? batch.hashes.bytes.toString('utf8', batch.hashes.offsets[i], batch.hashes.offsets[i + 1])
    : String(hashes.get(row));
  if (stored !== hash) return undefined;
  // A copy: the caller keeps it past this file's stay in the cache.
  return batch.vectors.slice(i * dims, (i + 1) * dims);
}

function bytesOf(vectors: readonly Float32Array[]): number {
  let bytes = 0;
  for (let i = 0; i < vectors.length; i++) bytes += vectors[i]!.byteLength;
  return bytes;
}
