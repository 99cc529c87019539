import { createHash } from 'node:crypto';
import type { ContentPart } from '../gateway/wire.js';
import { Sfc32 } from './prng.js';

/**
 * The emulator's embedding function. Tests across the project assert its exact values, so it is
 * specified here to the bit:
 *
 * 1. digest = sha256(utf8(model + "\n" + text))
 * 2. seed sfc32 (see prng.ts) with the digest's first four little-endian uint32 words (a, b, c, d)
 *    and discard its first 12 outputs
 * 3. for i in 0..dims-1: x_i = next() / 2^32 * 2 - 1 (float64; exact, no rounding happens)
 * 4. norm = sqrt(x_0^2 + x_1^2 + ... summed in index order, in float64); v_i = x_i / norm
 * 5. return v as a Float32Array (each v_i rounded to float32)
 *
 * A multimodal block's "text" is multimodalText(parts). An over-long input on a truncating model
 * gets the vector of the text decoded from its first context_length tokens (see embeddings.ts).
 * Models with semantics 'bag-of-words' (test models) use semantic-vectors.ts instead.
 */
export function embeddingFor(model: string, text: string, dims: number): Float32Array {
  const out = new Float32Array(dims);
  writeEmbedding(model, text, out);
  return out;
}

/** The draws of writeEmbedding, kept between calls (grown to the largest dims asked). */
let scratch = new Float64Array(0);

/**
 * embeddingFor into a caller's buffer (its length is the dims), so a whole batch can live in one
 * Float32Array. The draws go to a float64 scratch kept between calls (steps 3 and 4 in one pass).
 */
export function writeEmbedding(model: string, text: string, out: Float32Array): void {
  const digest = createHash('sha256').update(`${model}\n${text}`, 'utf8').digest();
  const dims = out.length;
  if (scratch.length < dims) scratch = new Float64Array(dims);
  const norm = Math.sqrt(Sfc32.fromDigest(digest).fillSigned(scratch, dims));
  for (let i = 0; i < dims; i++) out[i] = scratch[i]! / norm;
}

/** The text a multimodal block is embedded as: one line per part, `text:<text>` or `image:<url>`. */
export function multimodalText(parts: readonly ContentPart[]): string {
  return parts
    .map((part) => (part.type === 'text' ? `text:${part.text}` : `image:${part.image_url.url}`))
    .join('\n');
}
