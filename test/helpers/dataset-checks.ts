/** What the end-to-end tests assert about a dataset read back by DuckDB. */
import { expect } from 'vitest';
import type { DatasetRow } from './duckdb.js';

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
