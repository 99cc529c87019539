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
  // The fields are laid out in one buffer and hashed by one update: a buffer and an update per
  // field were most of the id's cost (it runs once per planned batch, over every chunk).
  const fields = new FieldBuffer();
  fields.add(BATCH_ID_VERSION);
  fields.add(model);
  fields.add(planKey);
  for (const chunk of chunks) {
    fields.add(chunk.documentId);
    fields.add(String(chunk.index));
    fields.add(chunk.hash);
  }
  return createHash('sha256').update(fields.bytes()).digest('hex');
}

/** Length-prefixed UTF-8 fields (u32 big-endian length, then the bytes), one after another. */
class FieldBuffer {
  #buffer = Buffer.allocUnsafe(4096);
  #length = 0;

  add(value: string): void {
    // At most 3 bytes of UTF-8 per UTF-16 unit, plus the length.
    this.#reserve(4 + 3 * value.length);
    const written = this.#buffer.write(value, this.#length + 4, 'utf8');
    this.#buffer.writeUInt32BE(written, this.#length);
    this.#length += 4 + written;
  }

  bytes(): Buffer {
    return this.#buffer.subarray(0, this.#length);
  }

  #reserve(bytes: number): void {
    if (this.#length + bytes <= this.#buffer.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(2 * this.#buffer.length, this.#length + bytes));
    this.#buffer.copy(bigger, 0, 0, this.#length);
    this.#buffer = bigger;
  }
}
