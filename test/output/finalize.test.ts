/**
 * A distributed finalize reads each part's footer once: its tally reads every part's batch record,
 * and the compaction's survey of the same parts gets those reads instead of opening the files again.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentHash } from '../../src/content-hash.js';
import { ExpectedRows } from '../../src/output/contract.js';
import { DatasetWriter } from '../../src/output/dataset.js';
import { compactDataset } from '../../src/output/finalize.js';
import { CODECS } from '../../src/output/part-file.js';
import { readingOnce } from '../../src/output/reading-once.js';
import { query, sqlString } from '../helpers/duckdb.js';
import { makeBatch } from '../output/fixtures.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'embedpipe-finalize-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('compactDataset with footers read once', () => {
  it('the tally and the compaction read each part file once, and the dataset holds every row', async () => {
    const dir = join(root, 'once');
    // Files opened, and reads asked for (through the writer): each part is asked for twice.
    const reads = new Map<string, number>();
    const asked = new Map<string, number>();
    const count = (counts: Map<string, number>, path: string) =>
      counts.set(basename(path), (counts.get(basename(path)) ?? 0) + 1);
    const once = readingOnce((path: string) => {
      count(reads, path);
      return CODECS.parquet.readMetadata(path);
    });
    const readMetadata = (path: string) => {
      count(asked, path);
      return once(path);
    };
    const metadata = { 'embedpipe.model': 'test/model-1', 'embedpipe.plan': 'plan-1' };
    const writer = new DatasetWriter({
      dir,
      format: 'parquet',
      metadata,
      readMetadata,
    });
    const planned: string[] = [];
    const expected = new ExpectedRows();
    let rows = 0;
    for (let i = 0; i < 6; i++) {
      const batchId = `b${i}`;
      const made = makeBatch({ batchId, rows: 3 + i, dims: 8, seed: 50 + i });
      const chunks = made.chunks.map((c) => ({
        ...c,
        hash: contentHash(metadata['embedpipe.model'], c.text),
      }));
      const batch = { ...made, chunks };
      await writer.writePart(batchId, batch, { 'embedpipe.batch': JSON.stringify({ rows: 3 + i }) });
      for (const chunk of batch.chunks) expected.add(chunk.documentId, chunk.index, chunk.hash);
      planned.push(batchId);
      rows += 3 + i;
    }
    // The tally: every committed batch's record.
    for (const batchId of planned)
      expect((await writer.readPartMetadata(batchId))['embedpipe.batch']).toBeDefined();

    const result = await compactDataset({
      writer,
      planned,
      owners: new Map(),
      expected,
      model: metadata['embedpipe.model'],
    });
    expect(result.violations).toEqual([]);

    expect([...result.scans.values()].reduce((n, scan) => n + scan.ids.length, 0)).toBe(rows);
    expect(result.files).toHaveLength(1);
    expect([...reads.keys()].sort()).toEqual(planned.map((id) => `part-${id}.parquet`).sort());
    expect([...reads.values()].every((n) => n === 1)).toBe(true);
    expect([...asked.values()].every((n) => n === 2)).toBe(true);
    const counted = await query(
      `SELECT count(*)::INT AS n FROM read_parquet(${sqlString(join(dir, '*.parquet'))})`,
    );
    expect(counted[0]?.['n']).toBe(rows);
  });
});
