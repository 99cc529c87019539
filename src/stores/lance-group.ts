/**
 * A change group checked before LanceDB sees it: the whole group is refused, naming the row, so a
 * bad row never leaves a group half-written (and the write itself is one commit anyway).
 */
import { StoreError } from '../errors.js';
import { type ChangeGroup, type RowKey, rowKey } from './store.js';

/**
 * Bounds on one group, which LanceDB writes as one commit built in memory. The sync cuts groups at
 * ~2,000 rows but never splits a document, so only an outsized document reaches these.
 */
export const GROUP_LIMITS = { rows: 50_000, vectorBytes: 256 * 1024 * 1024 } as const;

const INT32_MAX = 2 ** 31 - 1;

const describeRow = (key: RowKey): string => `row ${JSON.stringify(key.id)} chunk ${key.chunkIndex}`;

export function checkGroup(group: ChangeGroup, dims: number, label: string): void {
  const rows = group.upserts.length + group.deletes.length;
  const vectorBytes = group.upserts.length * dims * 4;
  if (rows > GROUP_LIMITS.rows || vectorBytes > GROUP_LIMITS.vectorBytes)
    throw new StoreError(
      `${label}: a group of ${rows} rows (${Math.round(vectorBytes / 2 ** 20)} MiB of vectors) is over the ` +
        `LanceDB store's bound of ${GROUP_LIMITS.rows} rows and ${GROUP_LIMITS.vectorBytes / 2 ** 20} MiB per atomic write`,
    );
  const upserted = new Set<string>();
  for (const row of group.upserts) {
    const problem = rowProblem(row, dims);
    if (problem) throw new StoreError(`${label}: ${describeRow(row)} ${problem}; the group was not applied`);
    const key = rowKey(row);
    if (upserted.has(key)) throw new StoreError(`${label}: ${describeRow(row)} appears twice in one group`);
    upserted.add(key);
  }
  for (const key of group.deletes) {
    if (!isChunkIndex(key.chunkIndex))
      throw new StoreError(`${label}: ${describeRow(key)} to delete has no valid chunk index`);
    if (upserted.has(rowKey(key)))
      throw new StoreError(`${label}: ${describeRow(key)} is both upserted and deleted in one group`);
  }
}

const isChunkIndex = (value: number): boolean => Number.isInteger(value) && value >= 0 && value <= INT32_MAX;

function rowProblem(row: ChangeGroup['upserts'][number], dims: number): string | undefined {
  if (!isChunkIndex(row.chunkIndex)) return 'has a chunk index that is not an int32 ≥ 0';
  if (row.embedding.length !== dims)
    return `has an embedding of ${row.embedding.length} dims, the table's are ${dims}`;
  for (let i = 0; i < row.embedding.length; i++)
    if (!Number.isFinite(row.embedding[i])) return `has a non-finite embedding value at [${i}]`;
  return undefined;
}
