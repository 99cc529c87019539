/**
 * Document → chunks: each chunk fits the gateway-token budget under the calibrated class weights
 * (see profile.ts and calibration.ts), cut at the most natural boundary available.
 */
import { contentHash } from '../content-hash.js';
import type { Chunk, Document } from '../domain.js';
import { ConfigError } from '../errors.js';
import { addOverlap } from './overlap.js';
import { BYTE_BOUND_WEIGHTS, type Weights } from './profile.js';
import { splitIntoSpans } from './spans.js';

export interface ChunkOptions {
  /** The embedding model: part of every chunk's content hash. */
  readonly model: string;
  /** Estimated gateway tokens per chunk. */
  readonly maxTokens: number;
  /** Estimated tokens of the previous chunk repeated at the start of the next; default 0. */
  readonly overlapTokens?: number | undefined;
  /** Tokens per character class (see profile.ts); default the byte bound. */
  readonly weights?: Weights | undefined;
}

/**
 * Cuts `doc` into chunks of at most `maxTokens` estimated gateway tokens.
 *
 * - A document that fits is one chunk. An empty document has no chunks.
 * - Otherwise cuts fall at paragraph boundaries (blank lines) where possible, then at sentence ends
 *   (and single newlines), then between words; only a single word over budget is cut inside, at a
 *   change of character class or a grapheme cluster boundary where possible, never inside a
 *   surrogate pair.
 * - Pieces are packed greedily; whitespace between pieces stays with the chunk before the cut.
 * - `text === doc.text.slice(start, end)`. Without overlap the chunks tile the text: first start 0,
 *   each end the next start, last end `doc.text.length`. With `overlapTokens > 0` a chunk's start
 *   moves back into the previous chunk by up to that many tokens (to a word start where possible),
 *   so chunks still cover the text in order; the non-overlapping part is packed to
 *   `maxTokens - overlapTokens`, and the whole chunk stays within `maxTokens`.
 * - `tokens` is the estimate rounded up; `bytes` the UTF-8 length.
 * - Deterministic: the same document and options give the same chunks.
 *
 * Throws ConfigError('max-tokens') when the budget cannot hold the costliest character, and
 * ConfigError('overlap') unless 0 ≤ overlapTokens < maxTokens / 2.
 */
export function chunkDocument(doc: Document, options: ChunkOptions): Chunk[] {
  const { model, maxTokens } = options;
  const overlapTokens = options.overlapTokens ?? 0;
  const weights = options.weights ?? BYTE_BOUND_WEIGHTS;
  const costliest = Math.max(...weights);
  if (!(maxTokens >= costliest)) {
    throw new ConfigError('max-tokens', `a chunk must hold at least ${costliest} tokens, got ${maxTokens}`);
  }
  const overlapOk = overlapTokens >= 0 && overlapTokens * 2 < maxTokens;
  if (!overlapOk || maxTokens - overlapTokens < costliest) {
    throw new ConfigError(
      'overlap',
      `must be from 0 to below half of max-tokens (${maxTokens}), got ${overlapTokens}`,
    );
  }
  const { text } = doc;
  let spans = splitIntoSpans(text, maxTokens - overlapTokens, weights);
  if (overlapTokens > 0) spans = addOverlap(text, spans, overlapTokens, maxTokens, weights);

  return spans.map(({ start, end, bytes, tokens }, index) => {
    const chunkText = text.slice(start, end);
    return {
      documentId: doc.id,
      index,
      text: chunkText,
      start,
      end,
      bytes,
      tokens: Math.ceil(tokens),
      hash: contentHash(model, chunkText),
    };
  });
}
