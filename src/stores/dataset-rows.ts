/**
 * The rows of a dataset's current version as a store sees them: every row's key and content hash
 * (read without the vectors), and whole rows of chosen keys, file by file. The dataset is the
 * buffer a store is loaded from: nothing is ever embedded again to load a store.
 */
import { join } from 'node:path';
import type { Table } from 'apache-arrow';
import { UsageError } from '../errors.js';
import { readColumns } from '../output/columns.js';
import type { Manifest } from '../output/manifest-types.js';
import type { OutputFormat } from '../output/part-file.js';
import { EMBEDDING_COLUMN, HASH_COLUMN, ID_COLUMN, INDEX_COLUMN } from '../output/table.js';
import { VersionedDataset } from '../output/versions.js';
import { type RowKey, rowKey, type StoreRow } from './store.js';

export interface DatasetVersionRows {
  readonly root: string;
  readonly version: string;
  readonly dir: string;
  readonly model: string;
  readonly dims: number;
  readonly format: OutputFormat;
  readonly files: readonly string[];
}

/** Where a row is: its file and row number, and its content hash. */
export interface RowPlace {
  readonly key: RowKey;
  readonly contentHash: string;
  readonly file: string;
  readonly row: number;
}

/** The current version of the dataset at `dir` (its `--out`), or a UsageError saying why there is none. */
export async function currentVersion(dir: string): Promise<DatasetVersionRows> {
  const dataset = new VersionedDataset(dir);
  const versions = await dataset.list();
  const current = versions.find((v) => v.current);
  if (!current?.manifest) {
    throw new UsageError(
      `${dir} has no finished dataset version to sync (versions: ${versions.map((v) => v.name).join(', ') || 'none'}); run embedpipe run first`,
    );
  }
  const manifest = current.manifest as Manifest;
  if (!manifest.dims) throw new UsageError(`${dir}: version ${current.name} holds no vectors (dims 0)`);
  return {
    root: dataset.root,
    version: current.name,
    dir: current.dir,
    model: manifest.model,
    dims: manifest.dims,
    format: manifest.format,
    files: manifest.files,
  };
}

/** Every row's place, keyed by `rowKey`; read from the key and hash columns only. */
export async function rowPlaces(version: DatasetVersionRows): Promise<Map<string, RowPlace>> {
  const places = new Map<string, RowPlace>();
  for (const file of version.files) {
    const table = await readColumns(join(version.dir, file), version.format, [
      ID_COLUMN,
      INDEX_COLUMN,
      HASH_COLUMN,
    ]);
    const ids = table.getChild(ID_COLUMN)!;
    const indexes = table.getChild(INDEX_COLUMN)!;
    const hashes = table.getChild(HASH_COLUMN)!;
    for (let row = 0; row < table.numRows; row++) {
      const key = { id: String(ids.get(row)), chunkIndex: Number(indexes.get(row)) };
      places.set(rowKey(key), { key, contentHash: String(hashes.get(row)), file, row });
    }
  }
  return places;
}

/**
 * Whole rows (text and vector too) of the version's files. The last file read is kept: a sync's
 * groups follow the files' order, so consecutive groups mostly read the same file.
 */
export class VersionRowReader {
  #file: string | undefined;
  #table: Table | undefined;

  constructor(private readonly version: DatasetVersionRows) {}

  async rows(file: string, rows: readonly number[]): Promise<StoreRow[]> {
    if (this.#file !== file || !this.#table) {
      this.#table = await readColumns(join(this.version.dir, file), this.version.format, [
        ID_COLUMN,
        INDEX_COLUMN,
        'text',
        HASH_COLUMN,
        EMBEDDING_COLUMN,
      ]);
      this.#file = file;
    }
    const table = this.#table;
    return rows.map((row) => storeRowAt(table, row, this.version.dims, file));
  }
}

function storeRowAt(table: Table, row: number, dims: number, file: string): StoreRow {
  const vector = table.getChild(EMBEDDING_COLUMN)!.get(row) as { toArray(): ArrayLike<number> } | null;
  const values = vector?.toArray();
  if (!values || values.length !== dims) {
    throw new UsageError(
      `${file} row ${row} has no vector of ${dims} dims: check the dataset with embedpipe verify`,
    );
  }
  return {
    id: String(table.getChild(ID_COLUMN)!.get(row)),
    chunkIndex: Number(table.getChild(INDEX_COLUMN)!.get(row)),
    text: String(table.getChild('text')!.get(row) ?? ''),
    contentHash: String(table.getChild(HASH_COLUMN)!.get(row)),
    embedding: Float32Array.from(values),
  };
}
