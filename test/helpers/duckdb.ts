/** DuckDB as the independent reader of what embedpipe wrote. */
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';

let connection: Promise<DuckDBConnection> | undefined;

async function connect(): Promise<DuckDBConnection> {
  connection ??= DuckDBInstance.create(':memory:').then((db) => db.connect());
  return connection;
}

export const sqlString = (s: string) => `'${s.replace(/'/g, "''")}'`;

export async function query(sql: string): Promise<Record<string, unknown>[]> {
  const reader = await (await connect()).runAndReadAll(sql);
  return reader.getRowObjectsJS() as Record<string, unknown>[];
}

/** The columns of a text dataset's data files, in their order. */
export const TEXT_DATASET_COLUMNS = ['id', 'chunk_index', 'text', 'embedding', 'tokens', 'content_hash'];

export interface DatasetRow {
  id: string;
  chunk_index: number;
  text: string;
  embedding: Float32Array;
  tokens: number;
  content_hash: string;
}

/** Every row of `dir/*.parquet`, sorted by (id, chunk_index). */
export async function readDataset(dir: string): Promise<DatasetRow[]> {
  const rows = await query(
    `SELECT id, chunk_index, text, embedding, tokens, content_hash
       FROM read_parquet(${sqlString(`${dir}/*.parquet`)}) ORDER BY id, chunk_index`,
  );
  return rows.map((r) => ({
    id: r['id'] as string,
    chunk_index: r['chunk_index'] as number,
    text: r['text'] as string,
    embedding: Float32Array.from(
      (r['embedding'] as { items: number[] }).items ?? (r['embedding'] as number[]),
    ),
    tokens: r['tokens'] as number,
    content_hash: r['content_hash'] as string,
  }));
}
