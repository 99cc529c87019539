/**
 * The catalog side of the pgvector store: what a target table looks like (its columns, the dims and
 * type of its embedding column from the type modifier, its key, its HNSW index), the statements
 * that create it, and the `embedpipe_sync` record of what was synced into it.
 */
import type { QueryResultRow } from 'pg';
import { StoreError } from '../errors.js';
import { quoteIdent, SYNC_TABLE } from './pg-url.js';
import type { SyncedVersion } from './store.js';

/** Where a target table and its sync record live, as names and as quoted SQL. */
export interface TableNames {
  readonly schema: string;
  readonly table: string;
  /** `"schema"."table"`. */
  readonly qualified: string;
  /** `"schema"."embedpipe_sync"`. */
  readonly qualifiedSync: string;
}

export function tableNames(schema: string, table: string): TableNames {
  return {
    schema,
    table,
    qualified: `${quoteIdent(schema)}.${quoteIdent(table)}`,
    qualifiedSync: `${quoteIdent(schema)}.${quoteIdent(SYNC_TABLE)}`,
  };
}

/** Runs one statement, giving its rows. */
export type Sql = <R extends QueryResultRow = QueryResultRow>(
  text: string,
  params?: unknown[],
) => Promise<R[]>;

/** The columns every target table has, in the order the store writes them. */
export const COLUMNS = ['id', 'chunk_index', 'text', 'content_hash', 'embedding'] as const;

/** The embedding column's type and vector length. */
export interface Layout {
  readonly dims: number;
  readonly halfvec: boolean;
}

export interface TableInfo {
  readonly exists: boolean;
  /** pg_class.oid, when it exists. */
  readonly oid?: number;
  readonly relkind?: string;
  /** Column name → its type's name (`vector`, `text`, …) and type modifier (the dims of a vector). */
  readonly columns: ReadonlyMap<string, { readonly typname: string; readonly typmod: number }>;
  /** A unique index on exactly (id, chunk_index), as ON CONFLICT needs. */
  readonly hasKey: boolean;
}

export async function inspectTable(sql: Sql, { schema, table }: TableNames): Promise<TableInfo> {
  const [rel] = await sql<{ oid: number; relkind: string }>(
    `SELECT c.oid, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2`,
    [schema, table],
  );
  if (!rel) return { exists: false, columns: new Map(), hasKey: false };
  const columns = await sql<{ attname: string; typname: string; atttypmod: number }>(
    `SELECT a.attname, t.typname, a.atttypmod FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
      WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped`,
    [rel.oid],
  );
  // Only a plain unique index on the two key columns satisfies ON CONFLICT (id, chunk_index).
  const [key] = await sql<{ present: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_index i
      WHERE i.indrelid = $1 AND i.indisunique AND i.indnatts = 2 AND i.indpred IS NULL AND i.indexprs IS NULL
        AND (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a
              WHERE a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)) = ARRAY['chunk_index', 'id']) AS present`,
    [rel.oid],
  );
  return {
    exists: true,
    oid: rel.oid,
    relkind: rel.relkind,
    columns: new Map(columns.map((c) => [c.attname, { typname: c.typname, typmod: c.atttypmod }])),
    hasKey: key?.present === true,
  };
}

/**
 * The layout of an existing table, or a StoreError when it is not a table embedpipe can write
 * (not a table, columns missing, no key, an embedding column of another type). `dims` is 0 for a
 * `vector` column declared without a length.
 */
export function layoutOf(info: TableInfo, label: string): Layout {
  const refuse = (why: string) =>
    new StoreError(`${label}: ${why}: use another table (?table=NAME), or drop this one yourself`);
  if (info.relkind !== 'r' && info.relkind !== 'p') throw refuse('it names a view or another non-table');
  const missing = COLUMNS.filter((column) => !info.columns.has(column));
  if (missing.length > 0)
    throw refuse(`the table lacks the column${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`);
  if (!info.hasKey) throw refuse('the table lacks PRIMARY KEY (id, chunk_index)');
  const embedding = info.columns.get('embedding')!;
  if (embedding.typname !== 'vector' && embedding.typname !== 'halfvec')
    throw refuse(`its embedding column is of type ${embedding.typname}, not vector or halfvec`);
  return { dims: Math.max(embedding.typmod, 0), halfvec: embedding.typname === 'halfvec' };
}

export function createTableSql(qualified: string, layout: Layout): string {
  return `CREATE TABLE ${qualified} (
    id text NOT NULL,
    chunk_index integer NOT NULL,
    text text NOT NULL,
    content_hash text NOT NULL,
    embedding ${layout.halfvec ? 'halfvec' : 'vector'}(${layout.dims}) NOT NULL,
    PRIMARY KEY (id, chunk_index))`;
}

/** The cosine operator class of the layout's type (what `<=>` searches use). */
export const cosineOps = (layout: Layout): string =>
  layout.halfvec ? 'halfvec_cosine_ops' : 'vector_cosine_ops';

export async function hasHnswIndex(sql: Sql, oid: number, layout: Layout): Promise<boolean> {
  const [row] = await sql<{ present: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_index i
      JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam
      JOIN pg_opclass oc ON oc.oid = i.indclass[0]
      WHERE i.indrelid = $1 AND am.amname = 'hnsw' AND oc.opcname = $2) AS present`,
    [oid, cosineOps(layout)],
  );
  return row?.present === true;
}

/** `<table>_embedding_hnsw`, cut to fit PostgreSQL's 63-byte names. */
export function indexName(table: string): string {
  const suffix = '_embedding_hnsw';
  return table.slice(0, 63 - suffix.length) + suffix;
}

export function createSyncTableSql(names: TableNames): string {
  return `CREATE TABLE IF NOT EXISTS ${names.qualifiedSync} (
    table_name text PRIMARY KEY,
    synced jsonb,
    pending jsonb,
    updated_at timestamptz NOT NULL DEFAULT now())`;
}

export interface SyncRecord {
  readonly synced?: SyncedVersion;
  readonly pending?: SyncedVersion;
}

/** The table's record in `embedpipe_sync`, empty when there is none (or no such table yet). */
export async function readSyncRecord(sql: Sql, names: TableNames): Promise<SyncRecord> {
  const [present] = await sql<{ present: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2) AS present`,
    [names.schema, SYNC_TABLE],
  );
  if (!present?.present) return {};
  const [row] = await sql<{ synced: unknown; pending: unknown }>(
    `SELECT synced, pending FROM ${names.qualifiedSync} WHERE table_name = $1`,
    [names.table],
  );
  const synced = syncedVersionOf(row?.synced);
  const pending = syncedVersionOf(row?.pending);
  return { ...(synced ? { synced } : {}), ...(pending ? { pending } : {}) };
}

/** A recorded version, or undefined for anything else (NULL, or JSON written by someone else). */
function syncedVersionOf(value: unknown): SyncedVersion | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { model, version, dims, at } = value as Record<string, unknown>;
  if (
    typeof model !== 'string' ||
    typeof version !== 'string' ||
    typeof dims !== 'number' ||
    typeof at !== 'string'
  )
    return undefined;
  return { model, version, dims, at };
}

/** A recorded version as the JSON stored (only its four fields). */
export const syncedJson = (version: SyncedVersion): string =>
  JSON.stringify({ model: version.model, version: version.version, dims: version.dims, at: version.at });
