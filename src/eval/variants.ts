/**
 * Smaller vectors, measured like any version: a variant keeps a prefix of the dimensions
 * (`dims:N`, re-normalised: for models trained for it) or stores them in fewer bits (`float16`;
 * `int8`, one scale per vector; `binary`, the signs). Rows are transformed as a store would keep
 * them and the query as a store would search with it (int8: the query stays float; binary: both
 * are signs, so the score is the agreement of signs, a Hamming distance). The rounding is the one
 * the writer's quantized columns hold (embedding/vector-form.ts).
 */
import { binaryBytes, int8Scale, roundToFloat16, toInt8 } from '../embedding/vector-form.js';
import { UsageError } from '../errors.js';
import type { VersionVectors } from './version-vectors.js';
import { normalizeRows } from './version-vectors.js';

export type VariantKind = 'dims' | 'float16' | 'int8' | 'binary';

export interface Variant {
  readonly kind: VariantKind;
  /** `dims:N` keeps N dimensions. */
  readonly dims?: number;
  /** As written on the command line. */
  readonly label: string;
}

export function parseVariants(text: string): Variant[] {
  return text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((label) => {
      const dims = /^dims:(\d+)$/.exec(label);
      if (dims) {
        const n = Number(dims[1]);
        if (n < 1) throw new UsageError(`--variants: ${label} keeps no dimension`);
        return { kind: 'dims', dims: n, label };
      }
      if (label === 'float16' || label === 'int8' || label === 'binary') return { kind: label, label };
      throw new UsageError(`--variants: "${label}" is not a variant: use dims:N, float16, int8 or binary`);
    });
}

/** Bytes one vector of `dims` takes in the variant (int8 keeps a float32 scale per vector). */
export function bytesPerVector(variant: Variant | undefined, dims: number): number {
  if (!variant) return dims * 4;
  switch (variant.kind) {
    case 'dims':
      return Math.min(variant.dims!, dims) * 4;
    case 'float16':
      return dims * 2;
    case 'int8':
      return dims + 4;
    case 'binary':
      return binaryBytes(dims);
  }
}

/** The version as the variant keeps it: a new matrix (unit rows, except binary's ±1/√d signs). */
export function applyVariant(version: VersionVectors, variant: Variant): VersionVectors {
  if (variant.kind === 'dims' && variant.dims! > version.dims)
    throw new UsageError(
      `--variants: ${variant.label} is more than the ${version.dims} dims of ${version.name}`,
    );
  const dims = variant.kind === 'dims' ? variant.dims! : version.dims;
  const matrix = transformRows(version.matrix, version.dims, variant);
  return {
    ...version,
    name: `${version.name} ${variant.label}`,
    dims,
    matrix,
    vectorBytes: version.rows * bytesPerVector(variant, version.dims),
  };
}

/** The query vectors as the variant searches with them. */
export function applyVariantToQueries(matrix: Float32Array, dims: number, variant: Variant): Float32Array {
  // int8 stores rows in 8 bits but searches with a float query (asymmetric): only rows are rounded.
  if (variant.kind === 'int8' || variant.kind === 'float16') return matrix;
  return transformRows(matrix, dims, variant);
}

function transformRows(matrix: Float32Array, dims: number, variant: Variant): Float32Array {
  const rows = matrix.length / dims;
  if (variant.kind === 'dims') {
    const n = variant.dims!;
    const out = new Float32Array(rows * n);
    for (let r = 0; r < rows; r++) out.set(matrix.subarray(r * dims, r * dims + n), r * n);
    normalizeRows(out, n);
    return out;
  }
  const out = new Float32Array(matrix.length);
  if (variant.kind === 'float16') {
    for (let i = 0; i < matrix.length; i++) out[i] = roundToFloat16(matrix[i]!);
    return out;
  }
  if (variant.kind === 'binary') {
    const unit = 1 / Math.sqrt(dims);
    for (let i = 0; i < matrix.length; i++) out[i] = matrix[i]! >= 0 ? unit : -unit;
    return out;
  }
  for (let r = 0; r < rows; r++) {
    const scale = int8Scale(matrix, r * dims, dims);
    for (let j = 0; j < dims; j++) {
      const i = r * dims + j;
      out[i] = toInt8(matrix[i]!, scale) * scale;
    }
  }
  return out;
}
