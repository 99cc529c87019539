/**
 * Document → chunks: each chunk fits a byte budget (derived from the gateway's token budget by the
 * calibration), cut at the most natural boundary available.
 */
import type { Chunk, Document } from '../domain.js';
import { ConfigError } from '../errors.js';
import { contentHash } from './hash.js';
import { addOverlap } from './overlap.js';
import { MIN_SPAN_BYTES, splitIntoSpans } from './spans.js';

export interface ChunkOptions {
  /** The embedding model: part of every chunk's content hash. */
  readonly model: string;
  /** UTF-8 bytes per chunk (see TokenCalibration.chunkBytes). */
  readonly maxBytes: number;
  /** Bytes of the previous chunk repeated at the start of the next; default 0. */
  readonly overlapBytes?: number | undefined;
  /** Gateway tokens per byte, for each chunk's `tokens` estimate; default 1 (the byte bound). */
  readonly tokensPerByte?: number | undefined;
}

/**
 * Cuts `doc` into chunks of at most `maxBytes` UTF-8 bytes.
 *
 * - A document that fits is one chunk. An empty document has no chunks.
 * - Otherwise cuts fall at paragraph boundaries (blank lines) where possible, then at sentence ends
 *   (and single newlines), then between words; only a single word over budget is cut inside, at a
 *   change of character class or a grapheme cluster boundary where possible, never inside a
 *   surrogate pair.
 * - Pieces are packed greedily; whitespace between pieces stays with the chunk before the cut.
 * - `text === doc.text.slice(start, end)`. Without overlap the chunks tile the text: first start 0,
 *   each end the next start, last end `doc.text.length`. With `overlapBytes > 0` a chunk's start
 *   moves back into the previous chunk by up to that many bytes (to a word start where possible),
 *   so chunks still cover the text in order; the non-overlapping part is packed to
 *   `maxBytes - overlapBytes`, and the whole chunk stays within `maxBytes`.
 * - Deterministic: the same document and options give the same chunks.
 *
 * Throws ConfigError('max-tokens') below MIN_SPAN_BYTES and ConfigError('overlap') unless
 * 0 ≤ overlapBytes < maxBytes / 2.
 */
export function chunkDocument(doc: Document, options: ChunkOptions): Chunk[] {
  const { model, maxBytes } = options;
  const overlapBytes = options.overlapBytes ?? 0;
  const tokensPerByte = options.tokensPerByte ?? 1;
  if (!Number.isInteger(maxBytes) || maxBytes < MIN_SPAN_BYTES) {
    throw new ConfigError('max-tokens', `a chunk must hold at least ${MIN_SPAN_BYTES} bytes, got ${maxBytes}`);
  }
  const overlapOk = Number.isInteger(overlapBytes) && overlapBytes >= 0 && overlapBytes * 2 < maxBytes;
  if (!overlapOk || maxBytes - overlapBytes < MIN_SPAN_BYTES) {
    throw new ConfigError(
      'overlap',
      `must be below half of the chunk size (${maxBytes} bytes), got ${overlapBytes} bytes`,
    );
  }
  const { text } = doc;
  let spans = splitIntoSpans(text, maxBytes - overlapBytes);
  if (overlapBytes > 0) spans = addOverlap(text, spans, overlapBytes, maxBytes);

  return spans.map(({ start, end, bytes }, index) => {
    const chunkText = text.slice(start, end);
    return {
      documentId: doc.id,
      index,
      text: chunkText,
      start,
      end,
      bytes,
      tokens: Math.ceil(bytes * tokensPerByte),
      hash: contentHash(model, chunkText),
    };
  });
}
