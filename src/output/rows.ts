/**
 * One part file's rows in columnar form: the shape both encoders (Parquet, Arrow IPC) start from.
 * Vectors are copied once into a single flat Float32Array so the Arrow vector column can wrap it
 * without any per-value work.
 */
import type { EmbeddedBatch } from '../domain.js';
import { OutputError } from '../errors.js';

export interface PartRows {
  readonly ids: readonly string[];
  readonly chunkIndex: Int32Array;
  readonly texts: readonly string[];
  readonly tokens: Int32Array;
  readonly hashes: readonly string[];
  /** Row-major, `ids.length * dims` values: row i is `embeddings.subarray(i * dims, (i + 1) * dims)`. */
  readonly embeddings: Float32Array;
  readonly dims: number;
  /**
   * The image columns (`image_source`, `image_sha256`), in a dataset whose corpus has images; null
   * for a row without an image (and `image_sha256` for an http(s) URL, whose bytes are unknown).
   */
  readonly images?: {
    readonly sources: readonly (string | null)[];
    readonly hashes: readonly (string | null)[];
  };
}

/**
 * Columns of one embedded batch. `expectedDims`, when given, is the run's dimension count: every
 * vector must match it (mixing vector spaces in one dataset is a silent, expensive bug), and it types
 * an empty batch. `imageColumns`: the dataset's files have the image columns (every file of a
 * dataset has the same columns, whatever its rows). Throws OutputError on a count or dims mismatch,
 * and for a row with an image in a dataset without image columns.
 */
export function partRowsFromBatch(
  batch: EmbeddedBatch,
  expectedDims?: number,
  imageColumns = false,
): PartRows {
  const { chunks, vectors } = batch;
  const n = chunks.length;
  if (vectors.length !== n) {
    throw new OutputError(`batch ${batch.batchId}: ${n} chunks but ${vectors.length} vectors`);
  }
  const dims = expectedDims ?? vectors[0]?.length ?? 0;
  if (n > 0 && dims <= 0) throw new OutputError(`batch ${batch.batchId}: vectors have no dimensions`);

  const ids = new Array<string>(n);
  const texts = new Array<string>(n);
  const hashes = new Array<string>(n);
  const chunkIndex = new Int32Array(n);
  const tokens = new Int32Array(n);
  const embeddings = new Float32Array(n * dims);
  const images = imageColumns
    ? { sources: new Array<string | null>(n), hashes: new Array<string | null>(n) }
    : undefined;
  for (let i = 0; i < n; i++) {
    const chunk = chunks[i]!;
    const vector = vectors[i]!;
    if (vector.length !== dims) {
      throw new OutputError(
        `batch ${batch.batchId}: vector ${i} (${chunk.documentId}#${chunk.index}) has ${vector.length} dims, expected ${dims}`,
      );
    }
    ids[i] = chunk.documentId;
    texts[i] = chunk.text;
    hashes[i] = chunk.hash;
    chunkIndex[i] = chunk.index;
    tokens[i] = chunk.tokens;
    embeddings.set(vector, i * dims);
    const { image } = chunk;
    if (images) {
      images.sources[i] = image?.source ?? null;
      images.hashes[i] = image && image.kind !== 'url' ? image.sha256 : null;
    } else if (image !== undefined) {
      throw new OutputError(
        `batch ${batch.batchId}: ${chunk.documentId} has an image, but the dataset is written without image columns`,
      );
    }
  }
  return { ids, chunkIndex, texts, tokens, hashes, embeddings, dims, ...(images ? { images } : {}) };
}
