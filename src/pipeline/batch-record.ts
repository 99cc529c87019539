/**
 * The accounting of one committed batch (rows, tokens, cost, requests, per-chunk failures), stored
 * in its part file's key-value metadata. It is committed atomically with the vectors it describes,
 * so a resumed run totals earlier runs' work and lists their failures without a second file to
 * keep in step (and without re-reading any vectors: Parquet footers only).
 */
import type { Batch, ChunkFailure, EmbeddedBatch } from '../domain.js';

export const BATCH_RECORD_KEY = 'embedpipe.batch';

export interface BatchRecord {
  readonly rows: number;
  /** Vector length; 0 when no chunk of the batch got a vector. */
  readonly dims: number;
  readonly chunks: number;
  readonly promptTokens: number;
  readonly cost: number;
  readonly requests: number;
  readonly retries: number;
  readonly provider?: string;
  readonly failures: readonly ChunkFailure[];
  /** Documents this batch re-planned: its part holds all their rows (see pipeline/sizing.ts). */
  readonly replanned?: readonly string[];
}

export function batchRecordOf(batch: Batch, embedded: EmbeddedBatch): BatchRecord {
  return {
    rows: embedded.chunks.length,
    dims: embedded.vectors[0]?.length ?? 0,
    chunks: batch.chunks.length,
    promptTokens: embedded.usage.promptTokens,
    cost: embedded.usage.cost,
    requests: embedded.usage.requests,
    retries: embedded.usage.retries,
    ...(embedded.provider ? { provider: embedded.provider } : {}),
    failures: embedded.failures,
    ...(embedded.replanned.length > 0 ? { replanned: embedded.replanned } : {}),
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

/** Totals over the committed batches of the current plan: what the dataset holds, whichever run paid. */
export class DatasetTally {
  rows = 0;
  dims = 0;
  promptTokens = 0;
  cost = 0;
  requests = 0;
  retries = 0;
  readonly providers = new Set<string>();
  readonly failures: ChunkFailure[] = [];

  add(record: BatchRecord): void {
    this.rows += record.rows;
    if (record.dims > 0) this.dims = record.dims;
    this.promptTokens += record.promptTokens;
    this.cost += record.cost;
    this.requests += record.requests;
    this.retries += record.retries;
    if (record.provider) this.providers.add(record.provider);
    this.failures.push(...record.failures);
  }
}
