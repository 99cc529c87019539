import { createHash } from 'node:crypto';

/**
 * The `content_hash` of a chunk: lowercase hex SHA-256 of UTF-8(model) + 0x00 + UTF-8(text).
 *
 * It is written to the output's `content_hash` column and is the key of incremental runs and of the
 * vector cache: a chunk whose hash is already in the previous dataset is reused, not re-embedded.
 * The model is part of the key so vectors of different models never mix (the NUL separator keeps
 * `("ab", "c")` and `("a", "bc")` apart; a model slug contains no NUL). Changing this formula
 * invalidates every existing dataset's reuse, so treat it as a stable format.
 */
export function contentHash(model: string, text: string): string {
  return createHash('sha256').update(model, 'utf8').update('\0', 'utf8').update(text, 'utf8').digest('hex');
}
