/**
 * `verify --sample N`: N random rows of a version embedded again through the gateway, each new vector
 * compared with the stored one. A gateway that changed the model behind the same name (or a row
 * whose vector belongs to another text) shows as a low cosine similarity. Rows with an image are not
 * sampled (their image is not in the dataset).
 */
import { randomInt } from 'node:crypto';
import { join } from 'node:path';
import type { Vector } from 'apache-arrow';
import { cosine } from '../embedding/cosine.js';
import type { RetryingGateway } from '../gateway/index.js';
import { readRowsOf } from './columns.js';
import { type ContractViolation, Violations } from './contract.js';
import type { OutputFormat } from './part-file.js';
import { EMBEDDING_COLUMN, ID_COLUMN, IMAGE_COLUMNS, INDEX_COLUMN } from './table.js';

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
  /** The dataset row number of each file's first row. */
  const starts: number[] = [];
  let first = 0;
  for (const { rows } of input.files) {
    starts.push(first);
    first += rows;
  }
  const byFile = new Map<number, number[]>();
  for (const row of [...picked].sort((a, b) => a - b)) {
    let k = starts.length - 1;
    while (starts[k]! > row) k -= 1;
    const offsets = byFile.get(k) ?? [];
    offsets.push(row - starts[k]!);
    byFile.set(k, offsets);
  }
  const rows: { id: string; where: string; text: string; vector: Float32Array }[] = [];
  for (const [k, offsets] of byFile) {
    const file = input.files[k]!.file;
    // (A dataset without images has no image columns: the reader leaves out the names it lacks.)
    const tables = await readRowsOf(
      join(input.dir, file),
      input.format,
      [ID_COLUMN, INDEX_COLUMN, 'text', EMBEDDING_COLUMN, ...IMAGE_COLUMNS],
      offsets,
    );
    for (const table of tables) {
      if (table.getChild(IMAGE_COLUMNS[0])?.get(0)) continue;
      const vector = (table.getChild(EMBEDDING_COLUMN) as Vector).get(0) as Vector | null;
      if (!vector) continue;
      rows.push({
        id: String(table.getChild(ID_COLUMN)?.get(0)),
        where: `chunk_index ${table.getChild(INDEX_COLUMN)?.get(0)} in ${file}`,
        text: String(table.getChild('text')?.get(0)),
        vector: Float32Array.from(vector.toArray() as ArrayLike<number>),
      });
    }
  }
  let lowest: number | undefined;
  let costUsd = 0;
  const violations = new Violations();
  const differs = `of ${rows.length} sampled rows embed differently now (cosine below ${input.minCosine})`;
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
      const similarity = fresh && fresh.length === row.vector.length ? cosine(fresh, row.vector) : 0;
      lowest = lowest === undefined ? similarity : Math.min(lowest, similarity);
      if (similarity < input.minCosine)
        violations.add('sample', differs, row.id, `${row.where}, cosine ${similarity.toFixed(4)}`);
    });
  }
  return { rows: rows.length, lowest, costUsd, violations: violations.list() };
}
