/** SQL filters for the LanceDB store (LanceDB filters are DataFusion SQL expressions). */
import type { RowKey } from './store.js';

/** A string literal: quotes doubled; a backslash is an ordinary character in DataFusion strings. */
export const sqlString = (value: string): string => `'${value.replaceAll("'", "''")}'`;

/**
 * Exactly the rows of `keys`. One flat `IN` list over `chunk_index|id` (unambiguous: the index has
 * no `|`), narrowed first by `id IN (…)`: a chain of `(id = … AND chunk_index = …) OR …` is parsed
 * recursively by the native side, which crashes the process (stack overflow) at ~1,000 terms.
 */
export function keyPredicate(keys: readonly RowKey[]): string {
  const ids = [...new Set(keys.map((key) => key.id))].map(sqlString).join(', ');
  const pairs = keys.map((key) => sqlString(`${key.chunkIndex}|${key.id}`)).join(', ');
  return `id IN (${ids}) AND concat(CAST(chunk_index AS STRING), '|', id) IN (${pairs})`;
}
