/**
 * `search` over a dataset folder: exact cosine top-k over the current version's files. Parquet is
 * read by DuckDB (the reader users query the dataset with); an Arrow dataset, which DuckDB does not
 * read without an extension, is scanned here a file at a time.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { cosine } from '../embedding/cosine.js';
import { readColumns } from '../output/columns.js';
import { EMBEDDING_COLUMN, HASH_COLUMN, ID_COLUMN, INDEX_COLUMN } from '../output/table.js';
import type { DatasetVersionRows } from './dataset-rows.js';
import type { SearchHit } from './store.js';

export async function searchDataset(
  version: DatasetVersionRows,
  query: Float32Array,
  k: number,
): Promise<SearchHit[]> {
  return version.format === 'parquet' ? searchParquet(version, query, k) : searchArrow(version, query, k);
}

const sqlString = (s: string) => `'${s.replace(/'/g, "''")}'`;

async function searchParquet(
  version: DatasetVersionRows,
  query: Float32Array,
  k: number,
): Promise<SearchHit[]> {
  // By require: the CLI's bundle is CommonJS, compiled from a code cache (cli/bundle-loader.ts).
  const { DuckDBInstance } = createRequire(import.meta.url)(
    '@duckdb/node-api',
  ) as typeof import('@duckdb/node-api');
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const files = version.files.map((file) => sqlString(join(version.dir, file))).join(', ');
    const vector = `[${Array.from(query, (v) => (Number.isFinite(v) ? v : 0)).join(',')}]::FLOAT[${version.dims}]`;
    const reader = await connection.runAndReadAll(
      `SELECT ${ID_COLUMN} AS id, ${INDEX_COLUMN} AS chunk_index, text,
              array_cosine_similarity(${EMBEDDING_COLUMN}::FLOAT[${version.dims}], ${vector}) AS score
         FROM read_parquet([${files}])
        ORDER BY score DESC, id, chunk_index
        LIMIT ${Math.max(1, Math.floor(k))}`,
    );
    return (reader.getRowObjectsJS() as Record<string, unknown>[]).map((row) => ({
      id: String(row['id']),
      chunkIndex: Number(row['chunk_index']),
      text: String(row['text'] ?? ''),
      score: Number(row['score']),
    }));
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

async function searchArrow(
  version: DatasetVersionRows,
  query: Float32Array,
  k: number,
): Promise<SearchHit[]> {
  const best: SearchHit[] = [];
  for (const file of version.files) {
    const table = await readColumns(join(version.dir, file), version.format, [
      ID_COLUMN,
      INDEX_COLUMN,
      'text',
      HASH_COLUMN,
      EMBEDDING_COLUMN,
    ]);
    const vectors = table.getChild(EMBEDDING_COLUMN)!;
    for (let row = 0; row < table.numRows; row++) {
      const values = (vectors.get(row) as { toArray(): Float32Array }).toArray();
      const score = cosine(values, query);
      if (best.length === k && score <= best[k - 1]!.score) continue;
      best.push({
        id: String(table.getChild(ID_COLUMN)!.get(row)),
        chunkIndex: Number(table.getChild(INDEX_COLUMN)!.get(row)),
        text: String(table.getChild('text')!.get(row) ?? ''),
        score,
      });
      best.sort((a, b) => b.score - a.score);
      if (best.length > k) best.pop();
    }
  }
  return best;
}
