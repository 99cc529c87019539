/** Chunks, batches and embedded batches built by hand, for the tests of what consumes them. */
import type { Batch, Chunk, EmbeddedBatch } from '../../src/domain.js';

/**
 * A chunk that is the whole of `text` (from 0 to its length, its UTF-8 byte count), with the
 * planned `tokens` and the content `hash` the test chooses.
 */
export function textChunk(
  documentId: string,
  index: number,
  text: string,
  tokens: number,
  hash: string,
): Chunk {
  return {
    documentId,
    index,
    text,
    start: 0,
    end: text.length,
    bytes: Buffer.byteLength(text),
    tokens,
    hash,
  };
}

/** A batch of `chunks` for `model`; its tokens are the chunks' sum. */
export function batchOf(batchId: string, model: string, chunks: readonly Chunk[]): Batch {
  return { batchId, model, chunks, tokens: chunks.reduce((sum, c) => sum + c.tokens, 0) };
}

/** An embedder's answer for a batch: these rows, no failures, nothing re-planned, one request, no retry. */
export function embeddedBatch(
  batchId: string,
  model: string,
  chunks: readonly Chunk[],
  vectors: readonly Float32Array[],
  promptTokens = 0,
): EmbeddedBatch {
  return {
    batchId,
    model,
    chunks,
    vectors,
    failures: [],
    usage: { promptTokens, cost: 0, requests: 1, retries: 0 },
    replanned: [],
  };
}
