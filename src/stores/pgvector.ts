/**
 * The PostgreSQL + pgvector store, over the wire with one `pg.Client` (not a pool: a group's
 * statements must share one transaction, and PGlite's socket server serves one connection at a
 * time). The table is `(id, chunk_index, text, content_hash, embedding vector(dims) | halfvec(dims))`
 * keyed by (id, chunk_index); `embedpipe_sync` in the same schema records per table the version
 * synced and the one pending. A group is one transaction: its upserts are loaded into a temp
 * staging table by a few array-parameter statements of a few MB each (COPY FROM STDIN does not get
 * through pglite-socket 0.2.17), then merged by one INSERT … ON CONFLICT, its deletes by one DELETE.
 */
import pg from 'pg';
import { StoreError } from '../errors.js';
import { extensionError, storeError } from './pg-errors.js';
import {
  cosineOps,
  createSyncTableSql,
  createTableSql,
  hasHnswIndex,
  indexName,
  inspectTable,
  type Layout,
  layoutOf,
  readSyncRecord,
  type Sql,
  type SyncRecord,
  syncedJson,
  type TableNames,
  tableNames,
} from './pg-schema.js';
import { type PgTarget, parsePgUrl, quoteIdent } from './pg-url.js';
import {
  batches,
  parseVector,
  rowBytes,
  rowName,
  rowProblem,
  vectorArrayParam,
  vectorParam,
} from './pg-vectors.js';
import {
  type ChangeGroup,
  type PrepareOptions,
  type RowKey,
  rowKey,
  type SearchHit,
  type StoreRow,
  type StoreState,
  type SyncedVersion,
  type VectorStore,
} from './store.js';

export interface PgvectorTuning {
  /** About how many bytes each staging statement carries (default 1 MB). */
  readonly statementBytes?: number;
  /** Keys per scan page (default 10,000). */
  readonly scanPage?: number;
  /** Keys per `vectors` statement (default 1,000). */
  readonly keysPerStatement?: number;
  /** How long a connect may take (default 15 s). */
  readonly connectTimeoutMs?: number;
}

/** pgvector's limits: any column holds 16,000 dims; HNSW indexes 2,000 (vector) or 4,000 (halfvec). */
const MAX_DIMS = 16_000;
const HNSW_MAX_DIMS = { vector: 2_000, halfvec: 4_000 };
/** pgvector's default hnsw.ef_search, which also caps how many rows an index scan returns. */
const EF_SEARCH = { default: 40, max: 1_000 };
const STAGING = 'embedpipe_staging';

export async function openPgvectorStore(
  url: string,
  env: { readonly PGPASSWORD?: string | undefined } = process.env,
  tuning: PgvectorTuning = {},
): Promise<PgvectorStore> {
  const target = parsePgUrl(url, env);
  const client = new pg.Client({
    ...target.connection,
    // A function, so that pg never falls back to process.env.PGPASSWORD or ~/.pgpass on its own,
    // and a server that asks for a password when none was given gets a clear answer.
    password: () => {
      if (target.password === undefined)
        throw new Error('the server asks for a password: give it in the URL or set PGPASSWORD');
      return target.password;
    },
    application_name: 'embedpipe',
    connectionTimeoutMillis: tuning.connectTimeoutMs ?? 15_000,
    keepAlive: true,
  });
  const store = new PgvectorStore(client, target, tuning);
  try {
    await client.connect();
  } catch (error) {
    throw storeError(target.label, 'cannot connect to', error, target.password);
  }
  return store;
}

export class PgvectorStore implements VectorStore {
  readonly label: string;
  private readonly names: TableNames;
  private readonly statementBytes: number;
  private readonly scanPage: number;
  private readonly keysPerStatement: number;
  /** The layout and index asked for by prepare (apply and search read the table otherwise). */
  private prepared: { readonly layout: Layout; readonly index?: 'hnsw' } | undefined;
  private vectorOid: number | undefined;
  /** Operations run one at a time: a transaction's statements must not interleave with others. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Why the connection was lost, when it was (the next operation says so). */
  private lost: unknown;
  private closed = false;
  private syncTableReady = false;

  constructor(
    private readonly client: pg.Client,
    private readonly target: PgTarget,
    tuning: PgvectorTuning = {},
  ) {
    this.label = target.label;
    this.names = tableNames(target.schema, target.table);
    this.statementBytes = tuning.statementBytes ?? 1_000_000;
    this.scanPage = tuning.scanPage ?? 10_000;
    this.keysPerStatement = tuning.keysPerStatement ?? 1_000;
    // Without a listener, a connection dropped while idle would crash the process.
    client.on('error', (error) => {
      this.lost = error;
    });
  }

  async describe(): Promise<StoreState> {
    return this.run('cannot read the state of', async () => {
      const info = await inspectTable(this.sql, this.names);
      const record = await readSyncRecord(this.sql, this.names);
      const layout = info.exists ? layoutOf(info, this.label) : undefined;
      return {
        exists: info.exists,
        ...(layout && layout.dims > 0 ? { dims: layout.dims } : {}),
        ...(layout ? { halfvec: layout.halfvec } : {}),
        ...record,
      };
    });
  }

  async prepare(options: PrepareOptions): Promise<void> {
    if (!Number.isInteger(options.dims) || options.dims < 1 || options.dims > MAX_DIMS)
      throw new StoreError(`${this.label}: ${options.dims} dims: pgvector holds 1 to ${MAX_DIMS} dims`);
    await this.run('cannot prepare', async () => {
      const extension = await this.ensureExtension();
      await this.ensureSchema();
      await this.ensureSyncTable();
      const info = await inspectTable(this.sql, this.names);
      const existing = info.exists ? layoutOf(info, this.label) : undefined;
      // A table that holds halfvec stays halfvec unless rebuilt (a later sync need not repeat --halfvec).
      const halfvec = options.halfvec === true || (existing?.halfvec === true && !options.replace);
      const layout: Layout = { dims: options.dims, halfvec };
      if (halfvec) this.checkHalfvec(extension);
      if (options.index === 'hnsw') this.checkIndexable(layout);
      if (existing && !options.replace) {
        const conflict = conflictOf(
          existing,
          layout,
          await readSyncRecord(this.sql, this.names),
          options.model,
        );
        if (conflict)
          throw new StoreError(
            `${this.label}: ${conflict}: sync with --replace to drop and rebuild the table, or use another table (?table=NAME)`,
          );
      }
      if (!existing || options.replace) await this.createTable(layout, existing !== undefined);
      this.prepared = { layout, ...(options.index ? { index: options.index } : {}) };
    });
  }

  async begin(target: SyncedVersion): Promise<void> {
    await this.run('cannot record the start of a sync in', async () => {
      await this.ensureSyncTable();
      await this.sql(
        `INSERT INTO ${this.names.qualifiedSync} (table_name, pending) VALUES ($1, $2::jsonb)
          ON CONFLICT (table_name) DO UPDATE SET pending = EXCLUDED.pending, updated_at = now()`,
        [this.names.table, syncedJson(target)],
      );
    });
  }

  async *scan(): AsyncIterable<readonly (RowKey & { readonly contentHash: string })[]> {
    if (!(await this.run('cannot scan', () => this.tableExists()))) return;
    // Keyset pagination on the primary key: each page is one short statement, no cursor held open.
    let after: RowKey | undefined;
    for (;;) {
      const page = await this.run('cannot scan', () =>
        this.sql<{ id: string; chunk_index: number; content_hash: string }>(
          `SELECT id, chunk_index, content_hash FROM ${this.names.qualified}
            ${after ? 'WHERE (id, chunk_index) > ($2, $3)' : ''} ORDER BY id, chunk_index LIMIT $1`,
          after ? [this.scanPage, after.id, after.chunkIndex] : [this.scanPage],
        ),
      );
      const keys = page.map((row) => ({
        id: row.id,
        chunkIndex: Number(row.chunk_index),
        contentHash: row.content_hash,
      }));
      if (keys.length > 0) yield keys;
      const last = keys.at(-1);
      if (!last || keys.length < this.scanPage) return;
      after = last;
    }
  }

  async apply(group: ChangeGroup): Promise<void> {
    if (group.upserts.length === 0 && group.deletes.length === 0) return;
    const doing = `cannot apply a group (${group.upserts.length} upserts, ${group.deletes.length} deletes) to`;
    await this.run(doing, async () => {
      const layout = await this.layout();
      const vectorOid = await this.vectorTypeOid();
      await this.transaction(async () => {
        // Deletes first: a key both deleted and upserted in one group ends up with the upserted row.
        if (group.deletes.length > 0)
          await this.sql(
            `DELETE FROM ${this.names.qualified}
              WHERE (id, chunk_index) IN (SELECT * FROM unnest($1::text[], $2::int4[]))`,
            [group.deletes.map((key) => key.id), group.deletes.map((key) => key.chunkIndex)],
          );
        if (group.upserts.length > 0) await this.upsert(lastOfEachKey(group.upserts), layout, vectorOid);
      });
    });
  }

  async commit(synced: SyncedVersion): Promise<void> {
    // The index first: a sync whose index failed stays pending, and the next one builds it.
    if (this.prepared?.index === 'hnsw') {
      const { layout } = this.prepared;
      await this.run('cannot build the HNSW index of', () => this.ensureIndex(layout));
    }
    await this.run('cannot record the completed sync in', async () => {
      await this.ensureSyncTable();
      await this.sql(
        `INSERT INTO ${this.names.qualifiedSync} (table_name, synced, pending) VALUES ($1, $2::jsonb, NULL)
          ON CONFLICT (table_name) DO UPDATE SET synced = EXCLUDED.synced, pending = NULL, updated_at = now()`,
        [this.names.table, syncedJson(synced)],
      );
    });
  }

  async vectors(keys: readonly RowKey[]): Promise<Map<string, Float32Array>> {
    const vectors = new Map<string, Float32Array>();
    await this.run('cannot read vectors from', async () => {
      if (keys.length === 0 || !(await this.tableExists())) return;
      for (const batch of batches(keys, this.keysPerStatement, () => 1)) {
        const rows = await this.sql<{ id: string; chunk_index: number; embedding: string }>(
          `SELECT id, chunk_index, embedding::text AS embedding FROM ${this.names.qualified}
            WHERE (id, chunk_index) IN (SELECT * FROM unnest($1::text[], $2::int4[]))`,
          [batch.map((key) => key.id), batch.map((key) => key.chunkIndex)],
        );
        for (const row of rows)
          vectors.set(
            rowKey({ id: row.id, chunkIndex: Number(row.chunk_index) }),
            parseVector(row.embedding),
          );
      }
    });
    return vectors;
  }

  async search(
    vector: Float32Array,
    k: number,
    options: { readonly exact?: boolean } = {},
  ): Promise<SearchHit[]> {
    if (!Number.isInteger(k) || k < 1)
      throw new StoreError(`${this.label}: k must be a positive integer, not ${k}`);
    return this.run('cannot search', async () => {
      if (!(await this.tableExists()))
        throw new StoreError(`${this.label}: the table does not exist: sync a dataset into it first`);
      const layout = await this.layout();
      if (vector.length !== layout.dims || !vector.every(Number.isFinite))
        throw new StoreError(
          `${this.label}: the query vector has ${vector.length} dims${vector.every(Number.isFinite) ? '' : ' and non-finite values'}, the table ${layout.dims}`,
        );
      // An HNSW scan returns at most ef_search rows: raise it for a larger k (harmless without one).
      if (k > EF_SEARCH.default) await this.sql(`SET hnsw.ef_search = ${Math.min(k, EF_SEARCH.max)}`);
      const query = layout.halfvec ? '$1::vector::halfvec' : '$1::vector';
      // `+ 0` is an ordering no index matches: the planner scans every row (exact).
      const order = options.exact ? `(embedding <=> ${query}) + 0` : `embedding <=> ${query}`;
      const rows = await this.sql<{ id: string; chunk_index: number; text: string; distance: number }>(
        `SELECT id, chunk_index, text, embedding <=> ${query} AS distance FROM ${this.names.qualified}
          ORDER BY ${order} LIMIT $2`,
        [vectorParam(vector), k],
      );
      return rows.map((row) => ({
        id: row.id,
        chunkIndex: Number(row.chunk_index),
        text: row.text,
        score: 1 - Number(row.distance),
      }));
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue;
    await this.client.end().catch(() => {});
  }

  /** One statement on the connection, giving its rows. */
  private readonly sql: Sql = async (text, params) => (await this.client.query(text, params)).rows;

  /** `work` alone on the connection; any failure a one-line StoreError naming the store. */
  private run<T>(doing: string, work: () => Promise<T>): Promise<T> {
    const result = this.queue.then(async () => {
      if (this.closed) throw new StoreError(`${doing} ${this.label}: the store is closed`);
      try {
        return await work();
      } catch (error) {
        if (error instanceof StoreError) throw error;
        throw storeError(this.label, doing, this.lost ?? error, this.target.password);
      }
    });
    this.queue = result.catch(() => {});
    return result;
  }

  private async transaction(work: () => Promise<void>): Promise<void> {
    await this.sql('BEGIN');
    try {
      await work();
      await this.sql('COMMIT');
    } catch (error) {
      // Best effort: a lost connection rolls back on the server side anyway.
      await this.sql('ROLLBACK').catch(() => {});
      throw error;
    }
  }

  /** The rows into staging, a few MB per statement, then merged into the table by one statement. */
  private async upsert(rows: readonly StoreRow[], layout: Layout, vectorOid: number): Promise<void> {
    // Untyped `vector` in staging: any length loads, the table's typmod checks it (after ours).
    await this.sql(
      `CREATE TEMP TABLE ${STAGING} (id text, chunk_index int4, text text, content_hash text, embedding vector)
        ON COMMIT DROP`,
    );
    for (const batch of batches(rows, this.statementBytes, rowBytes)) {
      for (const row of batch) {
        const problem = rowProblem(row, layout.dims, layout.halfvec);
        if (problem)
          throw new StoreError(`cannot apply a group to ${this.label}: ${rowName(row)}: ${problem}`);
      }
      await this.sql(
        `INSERT INTO ${STAGING} SELECT * FROM unnest($1::text[], $2::int4[], $3::text[], $4::text[], $5::vector[])`,
        [
          batch.map((row) => row.id),
          batch.map((row) => row.chunkIndex),
          batch.map((row) => row.text),
          batch.map((row) => row.contentHash),
          vectorArrayParam(
            batch.map((row) => row.embedding),
            vectorOid,
          ),
        ],
      );
    }
    await this.sql(
      `INSERT INTO ${this.names.qualified} (id, chunk_index, text, content_hash, embedding)
        SELECT id, chunk_index, text, content_hash, embedding${layout.halfvec ? '::halfvec' : ''} FROM ${STAGING}
        ON CONFLICT (id, chunk_index) DO UPDATE
          SET text = EXCLUDED.text, content_hash = EXCLUDED.content_hash, embedding = EXCLUDED.embedding`,
    );
  }

  /** The layout asked for by prepare, else the existing table's. */
  private async layout(): Promise<Layout> {
    if (this.prepared) return this.prepared.layout;
    const info = await inspectTable(this.sql, this.names);
    if (!info.exists)
      throw new StoreError(`${this.label}: the table does not exist: sync a dataset into it first`);
    const layout = layoutOf(info, this.label);
    if (layout.dims === 0) throw new StoreError(`${this.label}: its embedding column has no fixed dims`);
    return layout;
  }

  private async tableExists(): Promise<boolean> {
    return (await inspectTable(this.sql, this.names)).exists;
  }

  /** The `vector` type's oid, which a binary `vector[]` parameter names (it varies per database). */
  private async vectorTypeOid(): Promise<number> {
    if (this.vectorOid === undefined) {
      const [row] = await this.sql<{ oid: number }>(`SELECT 'vector'::regtype::oid AS oid`);
      this.vectorOid = Number(row?.oid);
    }
    return this.vectorOid;
  }

  /** pgvector's version, after CREATE EXTENSION when it is missing. */
  private async ensureExtension(): Promise<string> {
    const version = async () =>
      (
        await this.sql<{ extversion: string }>(`SELECT extversion FROM pg_extension WHERE extname = 'vector'`)
      )[0]?.extversion;
    const installed = await version();
    if (installed !== undefined) return installed;
    try {
      await this.sql('CREATE EXTENSION IF NOT EXISTS vector');
    } catch (error) {
      throw extensionError(this.label, this.target.connection.database, error, this.target.password);
    }
    return (await version()) ?? '0';
  }

  /** `embedpipe_sync`, created once per store (not before: describe and search only read). */
  private async ensureSyncTable(): Promise<void> {
    if (this.syncTableReady) return;
    await this.sql(createSyncTableSql(this.names));
    this.syncTableReady = true;
  }

  private async ensureSchema(): Promise<void> {
    const [row] = await this.sql<{ present: boolean }>(
      'SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS present',
      [this.names.schema],
    );
    if (!row?.present)
      throw new StoreError(
        `${this.label}: schema ${this.names.schema} does not exist: create it (CREATE SCHEMA ${quoteIdent(this.names.schema)}) or use another (&schema=NAME)`,
      );
  }

  /** halfvec arrived in pgvector 0.7.0. */
  private checkHalfvec(extension: string): void {
    const [major = 0, minor = 0] = extension.split('.').map(Number);
    if (major === 0 && minor < 7)
      throw new StoreError(
        `${this.label}: halfvec needs pgvector 0.7.0 or later; the server has ${extension}`,
      );
  }

  private checkIndexable(layout: Layout): void {
    const limit = layout.halfvec ? HNSW_MAX_DIMS.halfvec : HNSW_MAX_DIMS.vector;
    if (layout.dims <= limit) return;
    throw new StoreError(
      layout.halfvec
        ? `${this.label}: HNSW indexes at most ${limit} dims even as halfvec; the dataset has ${layout.dims}: sync without --index`
        : `${this.label}: HNSW indexes vectors of at most ${limit} dims; the dataset has ${layout.dims}: sync with --halfvec (up to ${HNSW_MAX_DIMS.halfvec} dims)`,
    );
  }

  /** The table (dropping the old one first) and a clean sync record, in one transaction. */
  private async createTable(layout: Layout, dropFirst: boolean): Promise<void> {
    await this.transaction(async () => {
      if (dropFirst) await this.sql(`DROP TABLE ${this.names.qualified}`);
      await this.sql(createTableSql(this.names.qualified, layout));
      // A record left from a table dropped by hand (or just now) no longer says anything true.
      await this.sql(`DELETE FROM ${this.names.qualifiedSync} WHERE table_name = $1`, [this.names.table]);
    });
  }

  private async ensureIndex(layout: Layout): Promise<void> {
    this.checkIndexable(layout);
    const info = await inspectTable(this.sql, this.names);
    if (info.oid === undefined || (await hasHnswIndex(this.sql, info.oid, layout))) return;
    await this.sql(
      `CREATE INDEX IF NOT EXISTS ${quoteIdent(indexName(this.names.table))} ON ${this.names.qualified}
        USING hnsw (embedding ${cosineOps(layout)})`,
    );
  }
}

/** Why an existing table cannot take the dataset's rows as it is (dims, type, model), if it cannot. */
function conflictOf(existing: Layout, wanted: Layout, record: SyncRecord, model: string): string | undefined {
  if (existing.dims !== wanted.dims)
    return existing.dims === 0
      ? 'its embedding column has no fixed dims'
      : `the table holds ${existing.dims}-dim vectors, the dataset ${wanted.dims}-dim ones`;
  if (wanted.halfvec && !existing.halfvec) return 'the table stores vector, not halfvec (--halfvec)';
  const held = [record.synced?.model, record.pending?.model].find((m) => m !== undefined && m !== model);
  if (held !== undefined) return `the table holds embeddings of model ${held}, the dataset is of ${model}`;
  return undefined;
}

/** The rows with each key once, the last given winning (ON CONFLICT cannot update one row twice). */
function lastOfEachKey(rows: readonly StoreRow[]): readonly StoreRow[] {
  const byKey = new Map<string, StoreRow>();
  for (const row of rows) byKey.set(rowKey(row), row);
  return byKey.size === rows.length ? rows : [...byKey.values()];
}
