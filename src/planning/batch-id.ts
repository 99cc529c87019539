import { createHash } from 'node:crypto';
import type { Chunk } from '../domain.js';
import { Utf8Buffer } from '../files/utf8-buffer.js';

/** Bump when the id formula changes: old ids then no longer match, and a resumed run starts over. */
const BATCH_ID_VERSION = 'embedpipe.batch.v1';

/** The fields of the batch being identified, one after another (see batchIdOf). */
const FIELDS = new Utf8Buffer(1 << 16);

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
  // The fields are laid out in one buffer and hashed by one update: a buffer and an update per
  // field were most of the id's cost (it runs once per planned batch, over every chunk). The buffer
  // is kept between calls (the id is computed synchronously), so it grows once, not per batch.
  const fields = FIELDS;
  fields.clear();
  fields.writeLengthPrefixed(BATCH_ID_VERSION);
  fields.writeLengthPrefixed(model);
  fields.writeLengthPrefixed(planKey);
  for (let c = 0; c < chunks.length; c++) {
    const chunk = chunks[c]!;
    fields.writeLengthPrefixed(chunk.documentId);
    fields.writeLengthPrefixed(String(chunk.index));
    fields.writeLengthPrefixed(chunk.hash);
  }
  return createHash('sha256').update(fields.bytes()).digest('hex');
}
