/**
 * The form a dataset keeps its vectors in: all of the model's dimensions, or a prefix of them
 * re-normalised (`--dims`, for models trained for it), and quantized columns beside the float32 one
 * (`--vector-type`). The form is a plan parameter (`vectors`), so files of two forms never mix in a
 * version, and the manifest tells search, eval and sync what a query vector must be made into.
 *
 * A prefix of a re-normalised prefix, re-normalised, is the prefix of the original: a version kept
 * at 256 dims reuses the vectors of one kept at 1,536 (or at 512) without paying for them again.
 */
import { UsageError } from '../errors.js';

export const VECTOR_TYPES = ['float16', 'int8', 'binary'] as const;
export type VectorType = (typeof VECTOR_TYPES)[number];

export interface VectorForm {
  /** Dimensions kept (a re-normalised prefix); undefined: all the model returns. */
  readonly dims?: number;
  /** Quantized columns written beside `embedding`, in VECTOR_TYPES order. */
  readonly types: readonly VectorType[];
}

export const FULL_FORM: VectorForm = { types: [] };

/** `--vector-type` as given (float32 is always written, so naming it is allowed and changes nothing). */
export function parseVectorTypes(values: readonly string[], where = '--vector-type'): VectorType[] {
  const known: readonly string[] = VECTOR_TYPES;
  for (const value of values) {
    if (value !== 'float32' && !known.includes(value))
      throw new UsageError(`${where}: "${value}" is not a vector type: use float16, int8 or binary`);
  }
  return VECTOR_TYPES.filter((type) => values.includes(type));
}

/** The plan parameter of a form: nothing for the full float32 form, so older plans keep their ids. */
export function formParameter(form: VectorForm): { vectors?: { dims?: number; types?: VectorType[] } } {
  if (form.dims === undefined && form.types.length === 0) return {};
  return {
    vectors: {
      ...(form.dims !== undefined ? { dims: form.dims } : {}),
      ...(form.types.length > 0 ? { types: [...form.types] } : {}),
    },
  };
}

/** The form recorded in plan parameters (a manifest's `plan`, or a parsed plan key). */
export function formOfPlan(plan: Readonly<Record<string, unknown>> | undefined): VectorForm {
  const vectors = plan?.vectors as { dims?: unknown; types?: unknown } | undefined;
  if (vectors === undefined || vectors === null || typeof vectors !== 'object') return FULL_FORM;
  const dims = typeof vectors.dims === 'number' ? vectors.dims : undefined;
  const types = Array.isArray(vectors.types)
    ? parseVectorTypes(vectors.types.map(String), 'plan.vectors')
    : [];
  return { ...(dims !== undefined ? { dims } : {}), types };
}

export function formOfPlanKey(planKey: string | undefined): VectorForm {
  if (planKey === undefined) return FULL_FORM;
  try {
    return formOfPlan(JSON.parse(planKey) as Record<string, unknown>);
  } catch {
    return FULL_FORM;
  }
}

/**
 * The dims a run writes that are known before any answer: `--dims`, or else those of the current
 * version when it holds this model's vectors whole.
 */
export function knownDims(
  form: VectorForm,
  model: string,
  current:
    | { readonly model: string; readonly dims?: number; readonly plan?: Record<string, unknown> }
    | undefined,
): number | undefined {
  if (form.dims !== undefined) return form.dims;
  if (current?.model !== model || formOfPlan(current.plan).dims !== undefined) return undefined;
  return current.dims || undefined;
}

/**
 * Whether vectors kept in `stored` form give vectors of the `wanted` form: whole vectors give any
 * prefix; a prefix gives only a shorter one, never the whole (the rest was not kept).
 */
export function reusableForm(stored: VectorForm, wanted: VectorForm): boolean {
  if (stored.dims === undefined) return true;
  return wanted.dims !== undefined && wanted.dims <= stored.dims;
}

/**
 * `vector` in `dims` dimensions: its first `dims` values re-normalised to unit length (the vector
 * itself when it has exactly `dims`); undefined when it has fewer.
 */
export function keepDims(vector: Float32Array, dims: number | undefined): Float32Array | undefined {
  if (dims === undefined || vector.length === dims) return vector;
  if (vector.length < dims) return undefined;
  const out = vector.slice(0, dims);
  let sum = 0;
  for (let i = 0; i < dims; i++) sum += out[i]! * out[i]!;
  if (sum > 0) {
    const scale = 1 / Math.sqrt(sum);
    for (let i = 0; i < dims; i++) out[i]! *= scale;
  }
  return out;
}

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** The IEEE half-precision bits nearest to `x` (ties to even), as Arrow's Float16 column holds them. */
export function float16Bits(x: number): number {
  F32[0] = x;
  const bits = U32[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  let mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0);
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mantissa |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = mantissa & ((1 << shift) - 1);
    let value = mantissa >>> shift;
    if (rest > half || (rest === half && (value & 1) === 1)) value += 1;
    return sign | value;
  }
  let value = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (value & 1) === 1)) value += 1;
  return sign | value;
}

/** The number half-precision `bits` hold. */
export function float16Value(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >>> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** The nearest half-precision value to `x`, as a number: what a float16 column gives back. */
export function roundToFloat16(x: number): number {
  return float16Value(float16Bits(x));
}

/**
 * One int8 scale for a vector: its largest magnitude maps to 127, so value ≈ scale × int8
 * (0 for the zero vector).
 */
export function int8Scale(vector: ArrayLike<number>, from = 0, dims = vector.length): number {
  let max = 0;
  for (let j = 0; j < dims; j++) max = Math.max(max, Math.abs(vector[from + j]!));
  return max / 127;
}

export function toInt8(x: number, scale: number): number {
  return scale === 0 ? 0 : Math.round(x / scale);
}

/** Bytes of a binary vector of `dims`: one bit per dimension, set when the value is ≥ 0. */
export function binaryBytes(dims: number): number {
  return Math.ceil(dims / 8);
}

/**
 * The sign bits of `dims` values from `vector[from]` into `out[at…]`, the first dimension in the
 * most significant bit (numpy.packbits' order and pgvector's `bit(n)` text order).
 */
export function packSigns(
  vector: ArrayLike<number>,
  from: number,
  dims: number,
  out: Uint8Array,
  at: number,
): void {
  for (let j = 0; j < dims; j++) if (vector[from + j]! >= 0) out[at + (j >> 3)]! |= 0x80 >> (j & 7);
}
