/**
 * `verify --sample N`: N random rows of a version embedded again through the gateway, each new vector
 * compared with the stored one. A gateway that changed the model behind the same name (or a row
 * whose vector belongs to another text) shows as a low cosine similarity. Rows with an image are not
 * sampled (their image is not in the dataset).
 */
import { randomInt } from 'node:crypto';
import { join } from 'node:path';
import type { Vector } from 'apache-arrow';
import type { RetryingGateway } from '../gateway/index.js';
import { readRowsOf } from '../output/columns.js';
import type { ContractViolation } from '../output/contract.js';
import type { OutputFormat } from '../output/part-file.js';
import { EMBEDDING_COLUMN, ID_COLUMN, IMAGE_COLUMNS, INDEX_COLUMN } from '../output/table.js';

export interface SampleInput {
  readonly dir: string;
  readonly format: OutputFormat;
  readonly model: string;
  /** The version's files with their row counts, in dataset order. */
  readonly files: readonly { readonly file: string; readonly rows: number }[];
  readonly sample: number;
  /** Cosine similarity below which a re-embedded row counts as different. */
  readonly minCosine: number;
  readonly gateway: RetryingGateway;
}

export interface SampleResult {
  readonly rows: number;
  readonly lowest: number | undefined;
  readonly costUsd: number;
  readonly violations: readonly ContractViolation[];
}

/** Texts per request. */
const PER_REQUEST = 64;

export async function sampleCheck(input: SampleInput): Promise<SampleResult> {
  const total = input.files.reduce((n, f) => n + f.rows, 0);
  const picked = new Set<number>();
  while (picked.size < Math.min(input.sample, total)) picked.add(randomInt(total));
  const byFile = new Map<number, number[]>();
  let first = 0;
  const starts = input.files.map((f) => {
    const start = first;
    first += f.rows;
    return start;
  });
  for (const row of [...picked].sort((a, b) => a - b)) {
    let k = starts.length - 1;
    while (starts[k]! > row) k -= 1;
    byFile.set(k, [...(byFile.get(k) ?? []), row - starts[k]!]);
  }
  const rows: { where: string; text: string; vector: Float32Array }[] = [];
  for (const [k, offsets] of byFile) {
    const file = input.files[k]!.file;
    const tables = await readRowsOf(
      join(input.dir, file),
      input.format,
      [ID_COLUMN, INDEX_COLUMN, 'text', EMBEDDING_COLUMN],
      offsets,
    );
    const sources = await readRowsOf(join(input.dir, file), input.format, [...IMAGE_COLUMNS], offsets).catch(
      () => undefined,
    );
    tables.forEach((table, i) => {
      if (sources?.[i]?.getChild(IMAGE_COLUMNS[0])?.get(0)) return;
      const vector = (table.getChild(EMBEDDING_COLUMN) as Vector).get(0) as Vector | null;
      if (!vector) return;
      rows.push({
        where: `${table.getChild(ID_COLUMN)?.get(0)} chunk_index ${table.getChild(INDEX_COLUMN)?.get(0)} in ${file}`,
        text: String(table.getChild('text')?.get(0)),
        vector: Float32Array.from(vector.toArray() as ArrayLike<number>),
      });
    });
  }
  let lowest: number | undefined;
  let costUsd = 0;
  const differing: { where: string; cosine: number }[] = [];
  for (let start = 0; start < rows.length; start += PER_REQUEST) {
    const group = rows.slice(start, start + PER_REQUEST);
    const answer = await input.gateway.embeddings({
      model: input.model,
      input: group.map((r) => r.text),
      encoding_format: 'base64',
    });
    costUsd += answer.usage?.cost ?? 0;
    group.forEach((row, i) => {
      const fresh = answer.vectors[i];
      const cosine = fresh && fresh.length === row.vector.length ? cosineOf(fresh, row.vector) : 0;
      lowest = lowest === undefined ? cosine : Math.min(lowest, cosine);
      if (cosine < input.minCosine) differing.push({ where: row.where, cosine });
    });
  }
  const named = differing.slice(0, 5);
  return {
    rows: rows.length,
    lowest,
    costUsd,
    violations:
      differing.length === 0
        ? []
        : [
            {
              check: 'sample',
              message: `${differing.length} of ${rows.length} sampled rows embed differently now (cosine below ${input.minCosine}): ${named.map((d) => `${d.where} (cosine ${d.cosine.toFixed(4)})`).join('; ')}${differing.length > named.length ? '; …' : ''}`,
              ids: named.map((d) => d.where.split(' chunk_index ')[0]!),
            },
          ],
  };
}

function cosineOf(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
