/**
 * A dataset version held in memory for evaluation: every row's key and text, and its vectors as
 * one matrix of unit rows, so a query is scored against all of them in one pass (exact search).
 */
import { join } from 'node:path';
import { formOfPlan, type VectorForm } from '../embedding/vector-form.js';
import { UsageError } from '../errors.js';
import { copyVectors, readColumns, utf8Values } from '../output/columns.js';
import type { Manifest } from '../output/manifest-types.js';
import { EMBEDDING_COLUMN, ID_COLUMN, INDEX_COLUMN } from '../output/table.js';
import { VersionedDataset } from '../output/versions.js';

export interface VersionVectors {
  /** `v000003`. */
  readonly name: string;
  readonly current: boolean;
  readonly model: string;
  readonly dims: number;
  /** How the version keeps its vectors (`--dims`, `--vector-type`): a query is cut the same way. */
  readonly form: VectorForm;
  readonly rows: number;
  readonly ids: readonly string[];
  readonly chunkIndexes: Int32Array;
  readonly texts: readonly string[];
  /** rows × dims, each row scaled to unit length (a zero vector stays zero). */
  readonly matrix: Float32Array;
  /** Bytes of the vectors as stored (float32). */
  readonly vectorBytes: number;
}

/** The versions to evaluate: those named, else the current one and the newest finished other. */
export async function versionsToEvaluate(dir: string, names: readonly string[]): Promise<string[]> {
  const dataset = new VersionedDataset(dir);
  const finished = (await dataset.list()).filter((v) => v.manifest?.version === 2);
  if (names.length > 0) {
    for (const name of names) await dataset.version(name);
    return [...names];
  }
  const current = finished.find((v) => v.current);
  if (!current)
    throw new UsageError(`${dir} has no finished dataset version to evaluate; run embedpipe run first`);
  const newest = finished.filter((v) => !v.current).at(-1);
  return newest ? [current.name, newest.name] : [current.name];
}

export async function loadVersionVectors(dir: string, name: string): Promise<VersionVectors> {
  const version = await new VersionedDataset(dir).version(name);
  const manifest = version.manifest as Manifest | undefined;
  if (manifest?.version !== 2)
    throw new UsageError(`${dir}: version ${name} is not finished (no manifest): nothing to evaluate`);
  if (!manifest.dims) throw new UsageError(`${dir}: version ${name} holds no vectors (dims 0)`);
  const dims = manifest.dims;
  const ids: string[] = [];
  const texts: string[] = [];
  const indexes: number[] = [];
  const matrix = new Float32Array(manifest.counts.rows * dims);
  for (const file of manifest.files) {
    const table = await readColumns(join(version.dir, file), manifest.format, [
      ID_COLUMN,
      INDEX_COLUMN,
      'text',
      EMBEDDING_COLUMN,
    ]);
    const at = ids.length;
    if (
      at + table.numRows > manifest.counts.rows ||
      !copyVectors(table.getChild(EMBEDDING_COLUMN)!, dims, matrix, at)
    )
      throw new UsageError(
        `${file} does not hold the ${dims}-dim vectors its manifest counts: check it with embedpipe verify`,
      );
    for (const id of utf8Values(table.getChild(ID_COLUMN)!)) ids.push(id);
    for (const text of utf8Values(table.getChild('text')!)) texts.push(text);
    for (const index of table.getChild(INDEX_COLUMN)!) indexes.push(Number(index));
  }
  if (ids.length !== manifest.counts.rows)
    throw new UsageError(
      `${dir}: version ${name} holds ${ids.length} rows, its manifest counts ${manifest.counts.rows}: check it with embedpipe verify`,
    );
  normalizeRows(matrix, dims);
  return {
    name,
    current: version.current,
    model: manifest.model,
    dims,
    form: formOfPlan(manifest.plan),
    rows: ids.length,
    ids,
    chunkIndexes: Int32Array.from(indexes),
    texts,
    matrix,
    vectorBytes: matrix.byteLength,
  };
}

/** Scales each row of `matrix` to unit length in place; a zero row stays zero. */
export function normalizeRows(matrix: Float32Array, dims: number): void {
  for (let start = 0; start < matrix.length; start += dims) {
    let sum = 0;
    for (let j = 0; j < dims; j++) sum += matrix[start + j]! * matrix[start + j]!;
    if (sum === 0) continue;
    const scale = 1 / Math.sqrt(sum);
    for (let j = 0; j < dims; j++) matrix[start + j] = matrix[start + j]! * scale;
  }
}
