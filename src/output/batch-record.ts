/**
 * The accounting of one committed batch (rows, tokens, cost, requests, per-chunk failures), stored
 * in its part file's key-value metadata. It is committed atomically with the vectors it describes,
 * so a resumed run totals earlier runs' work and lists their failures without a second file to
 * keep in step (and without re-reading any vectors: Parquet footers only).
 */
import { createHash } from 'node:crypto';
import type { Batch, BatchRecord, Chunk, ChunkFailure, EmbeddedBatch } from '../domain.js';

export type { BatchRecord };

export const BATCH_RECORD_KEY = 'embedpipe.batch';

/** The record of a batch planned with `plannedChunks` chunks, as embedded. */
export function batchRecordOf(plannedChunks: number, embedded: EmbeddedBatch): BatchRecord {
  return {
    rows: embedded.chunks.length,
    dims: embedded.vectors[0]?.length ?? 0,
    chunks: plannedChunks,
    promptTokens: embedded.usage.promptTokens,
    cost: embedded.usage.cost,
    requests: embedded.usage.requests,
    retries: embedded.usage.retries,
    ...(embedded.provider ? { provider: embedded.provider } : {}),
    failures: embedded.failures,
    ...(embedded.replanned.length > 0 ? { replanned: embedded.replanned } : {}),
    ...(embedded.reused ? { reused: embedded.reused } : {}),
    ...(embedded.deduplicated ? { deduplicated: embedded.deduplicated } : {}),
  };
}

export function batchRecordMetadata(record: BatchRecord): Record<string, string> {
  return { [BATCH_RECORD_KEY]: JSON.stringify(record) };
}

/** The record in a part's metadata; undefined for a part written without one. */
export function batchRecordFrom(metadata: Record<string, string>): BatchRecord | undefined {
  const text = metadata[BATCH_RECORD_KEY];
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as BatchRecord;
  } catch {
    return undefined;
  }
}

/** The batch without the rows of chunks `isStale` names (its accounting stays: it was paid). */
export function withoutStaleRows(
  embedded: EmbeddedBatch,
  isStale: (chunk: EmbeddedBatch['chunks'][number]) => boolean,
): EmbeddedBatch {
  if (!embedded.chunks.some(isStale)) return embedded;
  const keep = embedded.chunks.map((chunk) => !isStale(chunk));
  return {
    ...embedded,
    chunks: embedded.chunks.filter((_, i) => keep[i]),
    vectors: embedded.vectors.filter((_, i) => keep[i]),
  };
}

const failureKey = (documentId: string, chunkIndex: number): string => `${chunkIndex}:${documentId}`;

/**
 * The repair of a committed batch whose record lists chunk failures: a batch of exactly the failed
 * chunks, under an id derived from the batch's and theirs (deterministic, so a re-run finds a
 * committed repair, and a repair's own failures get a repair in turn). The batch keeps its good
 * rows. Failures of documents the batch re-planned are not repaired (their chunks were numbered
 * afresh and are not in the plan); they stay as they are. Undefined when nothing is to repair.
 */
export function repairBatchOf(
  batch: Batch,
  record: BatchRecord,
): { repair: Batch; repaired: ReadonlySet<ChunkFailure> } | undefined {
  if (record.failures.length === 0) return undefined;
  const replanned = new Set(record.replanned ?? []);
  const byKey = new Map<string, ChunkFailure>();
  for (const failure of record.failures) {
    if (!replanned.has(failure.documentId))
      byKey.set(failureKey(failure.documentId, failure.chunkIndex), failure);
  }
  const chunks: Chunk[] = batch.chunks.filter((chunk) =>
    byKey.has(failureKey(chunk.documentId, chunk.index)),
  );
  if (chunks.length === 0) return undefined;
  const hash = createHash('sha256').update('embedpipe.repair.v1\0').update(batch.batchId);
  for (const chunk of chunks) hash.update(`\0${chunk.documentId}\0${chunk.index}\0${chunk.hash}`);
  const repaired = new Set(chunks.map((chunk) => byKey.get(failureKey(chunk.documentId, chunk.index))!));
  return {
    repair: {
      batchId: hash.digest('hex'),
      model: batch.model,
      chunks,
      tokens: chunks.reduce((sum, chunk) => sum + chunk.tokens, 0),
    },
    repaired,
  };
}

/** One failure per chunk of a batch that failed whole (its retries ran out, or it failed for good). */
export function failuresOfBatch(
  batchId: string,
  chunks: readonly Chunk[],
  why: { readonly message: string; readonly status?: number | undefined },
): ChunkFailure[] {
  return chunks.map((chunk) => ({
    documentId: chunk.documentId,
    chunkIndex: chunk.index,
    batchId,
    ...(why.status !== undefined ? { status: why.status } : {}),
    message: why.message,
  }));
}
