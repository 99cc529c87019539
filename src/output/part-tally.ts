/**
 * A distributed run's version totalled from its committed parts (their batch records), and the
 * chunks it lacks: what finalize hands to `finalizeVersion`.
 */
import pLimit from 'p-limit';
import type { Chunk, ChunkFailure } from '../domain.js';
import { Ledger, type RecordTotals } from '../observability/ledger.js';
import { batchRecordFrom, failuresOfBatch } from './batch-record.js';

/** Footers read at once by the tally: each read mostly waits on the file system. */
const FOOTER_READS_IN_FLIGHT = 8;

/**
 * The ledger of the committed parts' records, and which batch owns each re-planned document (an
 * inherited batch's re-plans are an earlier version's: finalize keeps their rows only where the
 * plan still has them, replans.ts). `inherited`: batches in files linked from the version replaced.
 */
export async function tallyParts(
  committed: readonly string[],
  readMetadata: (batchId: string) => Promise<Record<string, string>>,
  inherited: ReadonlySet<string> = new Set(),
): Promise<{
  tally: RecordTotals;
  replans: { owners: Map<string, string>; earlierReplans: Map<string, string> };
}> {
  const ledger = new Ledger();
  const owners = new Map<string, string>();
  const earlier = new Map<string, string>();
  const limit = pLimit(FOOTER_READS_IN_FLIGHT);
  const records = await Promise.all(
    committed.map((batchId) => limit(async () => batchRecordFrom(await readMetadata(batchId)))),
  );
  committed.forEach((batchId, i) => {
    const record = records[i];
    ledger.carry(record, inherited.has(batchId));
    const replans = inherited.has(batchId) ? earlier : owners;
    for (const documentId of record?.replanned ?? []) replans.set(documentId, batchId);
  });
  return { tally: ledger.dataset(), replans: { owners, earlierReplans: earlier } };
}

/** The chunks without a vector: those the committed records list, and every chunk of a failed batch. */
export async function failuresOf(
  tally: RecordTotals,
  failedBatches: ReadonlyMap<string, string>,
  chunksOf: (batchId: string) => Promise<readonly Chunk[]>,
): Promise<ChunkFailure[]> {
  const failures: ChunkFailure[] = [...tally.failures];
  for (const [batchId, reason] of failedBatches) {
    const chunks = await chunksOf(batchId);
    if (chunks.length === 0) failures.push({ documentId: '', chunkIndex: -1, batchId, message: reason });
    failures.push(...failuresOfBatch(batchId, chunks, { message: reason }));
  }
  return failures;
}
