import { createHash } from 'node:crypto';
import type { Chunk } from '../domain.js';

/** Bump when the id formula changes: old ids then no longer match, and a resumed run starts over. */
const BATCH_ID_VERSION = 'embedpipe.batch.v1';

/**
 * The deterministic id of a batch: lowercase hex SHA-256 (256 bits, no `:`, so it is a valid BullMQ
 * job id and file name) over the model, the plan key and each chunk's (documentId, index, hash), in
 * batch order. Every field is length-prefixed, so no choice of ids or keys can make two different
 * batches hash the same input.
 */
export function batchIdOf(
  model: string,
  planKey: string,
  chunks: readonly Pick<Chunk, 'documentId' | 'index' | 'hash'>[],
): string {
  const hash = createHash('sha256');
  const field = (value: string): void => {
    const bytes = Buffer.from(value, 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    hash.update(length).update(bytes);
  };
  field(BATCH_ID_VERSION);
  field(model);
  field(planKey);
  for (const chunk of chunks) {
    field(chunk.documentId);
    field(String(chunk.index));
    field(chunk.hash);
  }
  return hash.digest('hex');
}
