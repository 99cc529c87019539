/**
 * One part file's rows in columnar form: the shape both encoders (Parquet, Arrow IPC) start from.
 * The vectors stay where the answers put them: runs of whole rows, each a view of one answer's
 * buffer. The Parquet writer writes the runs as they are; a flat copy is made only for an Arrow
 * table (flatVectors): a group's copy into one fresh array was one more pass over every vector,
 * and one more buffer of megabytes for the allocator (docs/benchmarks.md, "a fourteenth session").
 * Parts are encoded synchronously (part-file.ts): the views are read before any await.
 */
import type { EmbeddedBatch } from '../domain.js';
import { OutputError } from '../errors.js';
import { vectorRuns } from './vector-runs.js';

export interface PartRows {
  readonly ids: readonly string[];
  readonly chunkIndex: Int32Array;
  readonly texts: readonly string[];
  readonly tokens: Int32Array;
  readonly hashes: readonly string[];
  /**
   * The vectors, row-major, as runs of whole rows one after another (`ids.length * dims` values
   * in all); each run is a view, not a copy.
   */
  readonly vectorRuns: readonly Float32Array[];
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
  return {
    ids,
    chunkIndex,
    texts,
    tokens,
    hashes,
    vectorRuns: vectorRuns(vectors),
    dims,
    ...(images ? { images } : {}),
  };
}

/** The rows' vectors in one row-major array: the single run itself, or a copy of the runs. */
export function flatVectors(rows: PartRows): Float32Array {
  const runs = rows.vectorRuns;
  if (runs.length === 1) return runs[0]!;
  let length = 0;
  for (const run of runs) length += run.length;
  const flat = new Float32Array(length);
  let at = 0;
  for (const run of runs) {
    flat.set(run, at);
    at += run.length;
  }
  return flat;
}
