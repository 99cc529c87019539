import { FULL_FORM } from '../../src/embedding/vector-form.js';
import { normalizeRows, type VersionVectors } from '../../src/eval/version-vectors.js';

/** A version in memory from rows of raw vectors (normalised as loading does). */
export function versionOf(
  rows: readonly { id: string; index?: number; v: readonly number[] }[],
): VersionVectors {
  const dims = rows[0]!.v.length;
  const matrix = Float32Array.from(rows.flatMap((r) => r.v));
  normalizeRows(matrix, dims);
  return {
    name: 'v000001',
    current: true,
    model: 'm',
    dims,
    form: FULL_FORM,
    rows: rows.length,
    ids: rows.map((r) => r.id),
    chunkIndexes: Int32Array.from(rows.map((r) => r.index ?? 0)),
    texts: rows.map(() => ''),
    matrix,
    vectorBytes: matrix.byteLength,
  };
}
