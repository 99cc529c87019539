import type { Chunk } from '../domain.js';

/**
 * What the embedder asks of the run's chunk sizing (implemented in chunking/run-sizing.ts): which
 * chunks to send, what the gateway's answers teach, and the re-plan of a document whose chunks do
 * not fit the gateway's count. A re-planned document belongs to the batch that re-planned it.
 */
export interface ChunkSizing {
  /** The chunks of a batch to send now (re-planned where they no longer fit; stale ones dropped). */
  prepare(batchId: string, chunks: readonly Chunk[]): Chunk[];
  /** Whether a chunk belongs to an old plan of a document re-planned by this or another batch. */
  isStale(chunk: Chunk, batchId: string): boolean;
  /** Learns from an answer's usage; returns the documents among `sent` whose chunks must be re-planned. */
  learn(sent: readonly Chunk[], usageTokens: number | undefined): Set<string>;
  /** Learns from a too-long rejection of one chunk (the limit and the input's count, when stated). */
  rejected(chunk: Chunk, stated: { limit?: number | undefined; counted?: number | undefined }): void;
  /** The document's chunks under the current budget, now owned by `batchId`; undefined when it cannot be re-planned. */
  replan(documentId: string, batchId: string): Chunk[] | undefined;
  /** Inputs per request the gateway stated it accepts (learned this run or by an earlier one). */
  readonly maxInputs: number | undefined;
  /** Keeps a stated inputs-per-request limit for the rest of the run and for later runs. */
  learnMaxInputs(limit: number): void;
}
