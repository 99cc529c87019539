/** What the end-to-end tests assert about a dataset read back by DuckDB. */
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { DatasetRow } from './duckdb.js';

/**
 * A new output folder beside `out` whose first version, unfinished, holds only `out`'s
 * `_calibration.json`: a run into it is a fresh run of the corpus that starts from what `out`'s
 * runs learned of the gateway's token counting (docs/design.md, "Chunk sizing"), which its
 * version must equal row for row.
 */
export async function freshOutputGiven(out: string): Promise<string> {
  const fresh = `${out}-fresh-${Math.floor(Math.random() * 1e9)}`;
  const first = join(`${fresh}.versions`, 'v000001');
  await mkdir(first, { recursive: true });
  await copyFile(join(out, '_calibration.json'), join(first, '_calibration.json'));
  return fresh;
}

export interface ExactDatasetOptions {
  /** The gateway's vector for a text: every row's embedding must be exactly it. */
  readonly vectorOf: (text: string) => Float32Array;
  /** When given, no row may plan more tokens than this. */
  readonly maxTokens?: number;
}

/**
 * Every valid document is in the dataset exactly once: its rows, in chunk_index order, spell its
 * text; chunk indexes run 0..k-1, whatever re-planning the gateway forced; every vector is the
 * gateway's vector for the row's text.
 */
export function expectExactDataset(
  rows: readonly DatasetRow[],
  valid: ReadonlyMap<string, string>,
  { vectorOf, maxTokens }: ExactDatasetOptions,
): void {
  const byDoc = new Map<string, DatasetRow[]>();
  for (const row of rows) byDoc.set(row.id, [...(byDoc.get(row.id) ?? []), row]);
  expect([...byDoc.keys()].sort()).toEqual([...valid.keys()].sort());
  for (const [id, text] of valid) {
    const docRows = byDoc.get(id)!;
    expect(docRows.map((r) => r.text).join(''), id).toBe(text);
    expect(
      docRows.map((r) => r.chunk_index),
      id,
    ).toEqual(docRows.map((_, i) => i));
    for (const row of docRows) {
      if (maxTokens !== undefined) expect(row.tokens).toBeLessThanOrEqual(maxTokens);
      expect(row.embedding, id).toEqual(vectorOf(row.text));
    }
  }
}

/** A dataset's rows as plain values, to compare two datasets row for row (tokens aside). */
export const comparable = (rows: readonly DatasetRow[]) =>
  rows.map((r) => ({
    id: r.id,
    chunk_index: r.chunk_index,
    text: r.text,
    content_hash: r.content_hash,
    embedding: [...r.embedding],
  }));
