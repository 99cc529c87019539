/**
 * Document → chunks: each chunk fits the token budget, cut at the most natural boundary available.
 */
import { DEFAULTS } from '../config/defaults.js';
import type { Chunk, Document } from '../domain.js';
import { ConfigError } from '../errors.js';
import { forcedCuts } from './boundaries.js';
import { MIN_CHUNK_TOKENS } from './budget.js';
import { contentHash } from './hash.js';
import { addOverlap } from './overlap.js';
import { splitIntoSpans } from './spans.js';

export interface ChunkOptions {
  /** The embedding model: part of every chunk's content hash. */
  readonly model: string;
  /** Tokens per chunk (see `chunkTokenBudget`). */
  readonly maxTokens: number;
  /** Tokens of the previous chunk repeated at the start of the next; default DEFAULTS.overlapTokens. */
  readonly overlapTokens?: number | undefined;
}

/**
 * Cuts `doc` into chunks of at most `maxTokens` tokens (`tokens` is the exact cl100k_base count of
 * `text`; special-token text counts as plain text).
 *
 * - A document that fits is one chunk. An empty document has no chunks.
 * - Otherwise cuts fall at paragraph boundaries (blank lines) where possible, then at sentence ends
 *   (and single newlines), then between words; only a single word over budget is cut inside, at a
 *   tokenizer boundary where possible and never inside a surrogate pair. Runs of more than
 *   MAX_RUN letters, symbols or whitespace are always cut every MAX_RUN characters (see
 *   boundaries.ts: the tokenizer is quadratic in such runs).
 * - Pieces are packed greedily; whitespace between pieces stays with the chunk before the cut.
 * - `text === doc.text.slice(start, end)`. Without overlap the chunks tile the text: first start 0,
 *   each end the next start, last end `doc.text.length`. With `overlapTokens > 0` a chunk's start
 *   moves back into the previous chunk by about that many tokens (to a word start where possible),
 *   so chunks still cover the text in order; the non-overlapping part is packed to
 *   `maxTokens - overlapTokens`, and the whole chunk stays within `maxTokens`.
 * - Deterministic: the same document and options give the same chunks.
 *
 * Throws ConfigError('max-tokens') below MIN_CHUNK_TOKENS and ConfigError('overlap') unless
 * 0 ≤ overlapTokens < maxTokens / 2 (and maxTokens − overlapTokens ≥ MIN_CHUNK_TOKENS).
 */
export function chunkDocument(doc: Document, options: ChunkOptions): Chunk[] {
  const { model, maxTokens } = options;
  const overlapTokens = options.overlapTokens ?? DEFAULTS.overlapTokens;
  if (!Number.isInteger(maxTokens) || maxTokens < MIN_CHUNK_TOKENS) {
    throw new ConfigError(
      'max-tokens',
      `must be an integer of at least ${MIN_CHUNK_TOKENS}, got ${maxTokens}`,
    );
  }
  const overlapOk = Number.isInteger(overlapTokens) && overlapTokens >= 0 && overlapTokens * 2 < maxTokens;
  if (!overlapOk || maxTokens - overlapTokens < MIN_CHUNK_TOKENS) {
    throw new ConfigError(
      'overlap',
      `must be an integer from 0 to below half of max-tokens (${maxTokens}), got ${overlapTokens}`,
    );
  }
  const { text } = doc;
  if (text.length === 0) return [];

  const cuts = forcedCuts(text);
  let spans = splitIntoSpans(text, maxTokens - overlapTokens, cuts);
  if (overlapTokens > 0) spans = addOverlap(text, spans, overlapTokens, maxTokens, new Set(cuts));

  return spans.map(({ start, end, tokens }, index) => {
    const chunkText = text.slice(start, end);
    return {
      documentId: doc.id,
      index,
      text: chunkText,
      start,
      end,
      tokens,
      hash: contentHash(model, chunkText),
    };
  });
}
