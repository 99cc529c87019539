/**
 * The LanceDB (embedded) vector store: a table in a database folder on this machine, named by a
 * `lancedb:///abs/folder?table=docs` or `lancedb://./relative/folder?table=docs` URL (lance-url.ts).
 *
 * What LanceDB guarantees readers: every write (a merge-insert, a delete, a metadata update, a
 * compaction) commits one new table version atomically; a reader reads one version from start to
 * end and never sees part of a write. So a change group, written as one merge-insert, appears to
 * readers whole or not at all. The sync state (model, synced, pending) is kept in the metadata of
 * the `embedding` field (lance-state.ts says why).
 */
import { stat } from 'node:fs/promises';
import { type Connection, connect, Index, type Table } from '@lancedb/lancedb';
import { StoreError } from '../errors.js';
import { type Logger, silentLogger } from '../observability/logger.js';
import {
  columnProblems,
  embeddingDims,
  embeddingsOf,
  keysOf,
  rowsTable,
  storeSchema,
  stringsOf,
} from './lance-arrow.js';
import { checkGroup } from './lance-group.js';
import { keyPredicate } from './lance-sql.js';
import { readState, STATE_KEYS, versionJson } from './lance-state.js';
import { type LanceLocation, parseLanceUrl } from './lance-url.js';
import {
  type ChangeGroup,
  type PrepareOptions,
  type RowKey,
  rowKey,
  type SearchHit,
  type StoreState,
  type SyncedVersion,
  type VectorStore,
} from './store.js';

export interface LanceStoreOptions {
  /** Where the index decisions (built, skipped and why) are logged. */
  readonly logger?: Logger;
  /** Rows below which no index is built and search scans every row (exact). */
  readonly indexMinRows?: number;
}

/**
 * Below this many rows an exhaustive scan is exact and takes milliseconds, while an HNSW graph
 * costs seconds to build and gives approximate answers.
 */
export const LANCE_INDEX_MIN_ROWS = 10_000;
/** Keys per page of `scan`. */
const SCAN_PAGE_ROWS = 10_000;
/** Keys per query of `vectors` (one IN list each). */
const VECTOR_KEYS_PER_QUERY = 1_000;
/** Versions younger than this survive commit's cleanup: a reader may still be reading one. */
const VERSION_GRACE_MS = 60_000;
/** One HNSW graph per IVF partition: LanceDB advises one partition unless the graph outgrows memory. */
const ROWS_PER_HNSW_PARTITION = 1_000_000;

/** Opens a LanceDB store; nothing is created until `prepare`. */
export async function openLanceStore(url: string, options: LanceStoreOptions = {}): Promise<VectorStore> {
  const location = parseLanceUrl(url);
  if ((await pathKind(location)) === 'other')
    throw new StoreError(`${location.label}: ${location.path} exists and is not a folder`);
  return new LanceStore(location, options);
}

class LanceStore implements VectorStore {
  readonly label: string;
  readonly #location: LanceLocation;
  readonly #logger: Logger;
  readonly #indexMinRows: number;
  #db: Connection | undefined;
  #table: Table | undefined;
  #index: PrepareOptions['index'];

  constructor(location: LanceLocation, options: LanceStoreOptions) {
    this.#location = location;
    this.label = location.label;
    this.#logger = options.logger ?? silentLogger();
    this.#indexMinRows = options.indexMinRows ?? LANCE_INDEX_MIN_ROWS;
  }

  describe(): Promise<StoreState> {
    return this.#guard('reading the table', async () => {
      const table = await this.#open();
      if (!table) return { exists: false };
      const schema = await table.schema();
      const dims = embeddingDims(schema);
      const { synced, pending } = readState(schema);
      return {
        exists: true,
        ...(dims ? { dims } : {}),
        ...(synced ? { synced } : {}),
        ...(pending ? { pending } : {}),
      };
    });
  }

  async prepare(options: PrepareOptions): Promise<void> {
    if (!Number.isInteger(options.dims) || options.dims <= 0)
      throw new StoreError(`${this.label}: cannot prepare a table for ${options.dims}-dim vectors`);
    this.#index = options.index;
    await this.#guard('preparing the table', async () => {
      const existing = await this.#open();
      if (existing && !options.replace) return this.#adopt(existing, options);
      const schema = storeSchema(options.dims, new Map([[STATE_KEYS.model, options.model]]));
      const db = await this.#connect();
      // --replace overwrites: one new version, empty, of the new schema, without index or state.
      // Unlike drop + create, readers go from the old rows to none at once and never find no table.
      this.#table?.close();
      this.#table = undefined;
      this.#table = await db.createEmptyTable(this.#location.table, schema, {
        mode: existing ? 'overwrite' : 'create',
      });
    });
  }

  /** An existing table, kept when it holds what this dataset syncs (refused otherwise). */
  async #adopt(table: Table, options: PrepareOptions): Promise<void> {
    const schema = await table.schema();
    const what = '(sync with --replace to recreate it, or into another table)';
    const problems = columnProblems(schema);
    if (problems.length > 0)
      throw new StoreError(
        `${this.label}: the table cannot hold embedpipe rows: ${problems.join('; ')} ${what}`,
      );
    const dims = embeddingDims(schema);
    if (dims !== options.dims)
      throw new StoreError(
        `${this.label}: the table holds ${dims}-dim vectors, the dataset ${options.dims}-dim ${what}`,
      );
    const state = readState(schema);
    const model = state.model ?? state.synced?.model ?? state.pending?.model;
    if (model !== undefined && model !== options.model)
      throw new StoreError(
        `${this.label}: the table holds vectors of ${model}, the dataset of ${options.model} ${what}`,
      );
    if (state.model === undefined) await this.#setState(table, { [STATE_KEYS.model]: options.model });
  }

  begin(target: SyncedVersion): Promise<void> {
    return this.#guard('recording the pending sync', async () =>
      this.#setState(await this.#existing(), { [STATE_KEYS.pending]: versionJson(target) }),
    );
  }

  async *scan(): AsyncIterable<readonly (RowKey & { readonly contentHash: string })[]> {
    const table = await this.#guard('scanning the table', () => this.#open());
    if (!table) return;
    let page: (RowKey & { readonly contentHash: string })[] = [];
    try {
      // One query reads one table version throughout: the pages are one consistent snapshot.
      for await (const batch of table.query().select(['id', 'chunk_index', 'content_hash'])) {
        const hashes = stringsOf(batch, 'content_hash');
        for (const [i, key] of keysOf(batch).entries()) {
          page.push({ ...key, contentHash: hashes[i]! });
          if (page.length === SCAN_PAGE_ROWS) {
            yield page;
            page = [];
          }
        }
      }
    } catch (error) {
      throw this.#error('scanning the table', error);
    }
    if (page.length > 0) yield page;
  }

  async apply(group: ChangeGroup): Promise<void> {
    const table = await this.#guard('opening the table', () => this.#existing());
    const dims = await this.#dims(table);
    checkGroup(group, dims, this.label);
    const { upserts, deletes } = group;
    if (upserts.length + deletes.length === 0) return;
    await this.#guard(
      `applying a group of ${upserts.length} upserts and ${deletes.length} deletes`,
      async () => {
        if (upserts.length === 0) {
          await table.delete(keyPredicate(deletes));
          return;
        }
        // One merge-insert, so one commit: upserts matched on the key, and, of the rows the group does
        // not hold, only those listed deleted (the `where` confines the delete to exactly them). The
        // delete clause makes LanceDB join against the whole table (seconds per group on a large
        // table: docs/benchmarks.md, "Design figures"), so a group without deletes leaves it out.
        let merge = table.mergeInsert(['id', 'chunk_index']).whenMatchedUpdateAll().whenNotMatchedInsertAll();
        if (deletes.length > 0) merge = merge.whenNotMatchedBySourceDelete({ where: keyPredicate(deletes) });
        await merge.execute(rowsTable(upserts, storeSchema(dims, new Map()), dims));
      },
    );
  }

  async commit(synced: SyncedVersion): Promise<void> {
    await this.#guard('recording the completed sync', async () => {
      const table = await this.#existing();
      await this.#setState(table, {
        [STATE_KEYS.synced]: versionJson(synced),
        [STATE_KEYS.pending]: null,
        [STATE_KEYS.model]: synced.model,
      });
    });
    // The rows are synced and recorded whatever happens here; the next sync's commit retries it.
    await this.#guard('compacting and indexing the table (the sync itself is recorded)', async () =>
      this.#maintain(await this.#existing()),
    );
  }

  /**
   * Compaction merges the small fragments each group wrote (many fragments slow every read) and
   * folds new rows into an existing index; cleanup removes versions older than the grace. Then
   * the index asked for in `prepare`, once the table is large enough to need one.
   */
  async #maintain(table: Table): Promise<void> {
    await table.optimize({ cleanupOlderThan: new Date(Date.now() - VERSION_GRACE_MS) });
    if (this.#index !== 'hnsw') return;
    if ((await table.listIndices()).some((index) => index.columns.includes('embedding'))) return;
    const rows = await table.countRows();
    if (rows < this.#indexMinRows) {
      this.#logger.info(
        { store: this.label, rows, minimum: this.#indexMinRows },
        'no HNSW index built: too few rows to need one (search scans every row, exactly)',
      );
      return;
    }
    const numPartitions = Math.max(1, Math.ceil(rows / ROWS_PER_HNSW_PARTITION));
    const started = Date.now();
    await table.createIndex('embedding', { config: Index.hnswSq({ distanceType: 'cosine', numPartitions }) });
    this.#logger.info(
      { store: this.label, rows, ms: Date.now() - started },
      'HNSW index built (IVF_HNSW_SQ, cosine)',
    );
  }

  vectors(keys: readonly RowKey[]): Promise<Map<string, Float32Array>> {
    return this.#guard('reading vectors', async () => {
      const found = new Map<string, Float32Array>();
      const table = await this.#open();
      if (!table) return found;
      for (let start = 0; start < keys.length; start += VECTOR_KEYS_PER_QUERY) {
        const where = keyPredicate(keys.slice(start, start + VECTOR_KEYS_PER_QUERY));
        for await (const batch of table.query().where(where).select(['id', 'chunk_index', 'embedding'])) {
          const vectors = embeddingsOf(batch);
          for (const [i, key] of keysOf(batch).entries()) found.set(rowKey(key), vectors[i]!);
        }
      }
      return found;
    });
  }

  search(vector: Float32Array, k: number, options: { readonly exact?: boolean } = {}): Promise<SearchHit[]> {
    return this.#guard('searching', async () => {
      const table = await this.#existing();
      const dims = await this.#dims(table);
      if (vector.length !== dims)
        throw new StoreError(
          `${this.label}: the query vector has ${vector.length} dims, the table's ${dims}`,
        );
      if (!Number.isInteger(k) || k <= 0)
        throw new StoreError(`${this.label}: cannot search for ${k} nearest rows`);
      const rows = await table.countRows();
      let query = table
        .vectorSearch(vector)
        .distanceType('cosine')
        .select(['id', 'chunk_index', 'text', '_distance'])
        .limit(k);
      // A small table is scanned exhaustively even with an index (one left from when it was larger):
      // exact. Through an index, the top rows' distances are recomputed from the full vectors.
      query = options.exact || rows < this.#indexMinRows ? query.bypassVectorIndex() : query.refineFactor(1);
      const hits = (await query.toArray()) as {
        id: string;
        chunk_index: number;
        text: string;
        _distance: number;
      }[];
      return hits.map((hit) => ({
        id: String(hit.id),
        chunkIndex: Number(hit.chunk_index),
        text: String(hit.text),
        score: 1 - Number(hit._distance),
      }));
    });
  }

  async close(): Promise<void> {
    this.#table?.close();
    this.#db?.close();
    this.#table = undefined;
    this.#db = undefined;
  }

  async #connect(): Promise<Connection> {
    // Read consistency 0: every read sees the latest version, another process's writes included.
    this.#db ??= await connect(this.#location.path, { readConsistencyInterval: 0 });
    return this.#db;
  }

  /** The table, or undefined when it (or the database folder) does not exist; reads create nothing. */
  async #open(): Promise<Table | undefined> {
    if (this.#table) return this.#table;
    if ((await pathKind(this.#location)) === 'missing') return undefined;
    const db = await this.#connect();
    if (!(await db.tableNames()).includes(this.#location.table)) return undefined;
    this.#table = await db.openTable(this.#location.table);
    return this.#table;
  }

  async #existing(): Promise<Table> {
    const table = await this.#open();
    if (!table) throw new StoreError(`${this.label}: the table does not exist (embedpipe sync creates it)`);
    return table;
  }

  async #dims(table: Table): Promise<number> {
    const dims = embeddingDims(await table.schema());
    if (dims === undefined)
      throw new StoreError(`${this.label}: the table has no FixedSizeList<Float32> embedding column`);
    return dims;
  }

  async #setState(table: Table, metadata: Record<string, string | null>): Promise<void> {
    await table.updateFieldMetadata([{ path: 'embedding', metadata }]);
  }

  async #guard<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw this.#error(what, error);
    }
  }

  #error(what: string, error: unknown): StoreError {
    if (error instanceof StoreError) return error;
    return new StoreError(`${this.label}: ${what} failed: ${lanceReason(error)}`, { cause: error });
  }
}

/** The first line of a LanceDB error, without its chain of causes and Rust source paths. */
export function lanceReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const first = message.split(/\s+Caused by:|\n/)[0] ?? message;
  return first.replace(/,\s*\/\S+\.rs:\d+:\d+/g, '').trim();
}

async function pathKind(location: LanceLocation): Promise<'missing' | 'folder' | 'other'> {
  try {
    return (await stat(location.path)).isDirectory() ? 'folder' : 'other';
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'missing';
    if (code === 'ENOTDIR') return 'other';
    throw new StoreError(`${location.label}: cannot read ${location.path}: ${code ?? String(error)}`, {
      cause: error,
    });
  }
}
