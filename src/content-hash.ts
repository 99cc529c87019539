import { createHash, hash } from 'node:crypto';

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
  // One-shot hash of the joined string: the same bytes, measured cheaper than a Hash object per chunk
  // (docs/benchmarks.md, "Design figures").
  return hash('sha256', `${model}\0${text}`, 'hex');
}

/**
 * The `content_hash` of a document with an image (one chunk: caption + image, one joint vector):
 * lowercase hex SHA-256 of UTF-8(model) + 0x00 + 0xFF + "image" + 0x00 + UTF-8(key) + 0x00 +
 * UTF-8(text), where key is `sha256:<hex sha256 of the image bytes>`, or `url:<url>` for an http(s)
 * URL (sent as is, its bytes unknown here).
 *
 * 0xFF never occurs in UTF-8, so no text-only chunk hashes the same input; the image is identified
 * by its bytes, not its name, so a renamed or moved image keeps its vector. A stable format, like
 * contentHash.
 */
export function imageContentHash(
  model: string,
  text: string,
  image: { sha256: string } | { url: string },
): string {
  const key = 'sha256' in image ? `sha256:${image.sha256}` : `url:${image.url}`;
  return createHash('sha256')
    .update(model, 'utf8')
    .update(IMAGE_DOMAIN)
    .update(key, 'utf8')
    .update('\0', 'utf8')
    .update(text, 'utf8')
    .digest('hex');
}

const IMAGE_DOMAIN = Buffer.from([0x00, 0xff, ...Buffer.from('image', 'ascii'), 0x00]);
