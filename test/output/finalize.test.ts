/**
 * Finalize's check of a version against the plan (by digest, or row by row), and a distributed
 * finalize reading each part's footer once: its tally reads every part's batch record,
 * and the compaction's survey of the same parts gets those reads instead of opening the files again.
 */
import { createHash } from 'node:crypto';
import { link, mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentHash } from '../../src/content-hash.js';
import type { EmbeddedBatch } from '../../src/domain.js';
import { DatasetContractError } from '../../src/errors.js';
import { silentLogger } from '../../src/observability/logger.js';
import { isTempName } from '../../src/output/atomic.js';
import {
  DatasetRows,
  ExpectedRows,
  PairDigest,
  parseDocumentLines,
  rowsDigest,
  versionDigestOf,
} from '../../src/output/contract.js';
import { DatasetWriter } from '../../src/output/dataset.js';
import { replannedDigests, type WrittenFile } from '../../src/output/durable-commit.js';
import { checkVersion, compactDataset } from '../../src/output/finalize.js';
import { hashKey } from '../../src/output/hash-key.js';
import { DOCUMENTS_FILE } from '../../src/output/jsonl.js';
import type { FileDigest } from '../../src/output/manifest.js';
import { CODECS, type OutputFormat } from '../../src/output/part-file.js';
import { readingOnce } from '../../src/output/reading-once.js';
import { RowIds, readRowKeys } from '../../src/output/row-keys.js';
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

describe('checkVersion: by digest where certain, row by row otherwise', () => {
  const MODEL = 'test/model-1';
  const DIMS = 8;
  /** A batch of `documents` documents of `chunks` chunks each, ids `${prefix}-d`. */
  const batchOf = (batchId: string, prefix: string, documents: number, chunks: number): EmbeddedBatch => {
    const made = makeBatch({ batchId, rows: documents * chunks, dims: DIMS, seed: batchId.length * 7 });
    const rows = made.chunks.map((c, i) => {
      const text = `${prefix} document ${Math.floor(i / chunks)} chunk ${i % chunks}`;
      return {
        ...c,
        documentId: `${prefix}-${Math.floor(i / chunks)}`,
        index: i % chunks,
        text,
        hash: contentHash(MODEL, text),
      };
    });
    return { ...made, chunks: rows };
  };

  /** Groups written as a run writes them, each file's digest summed from the rows it wrote. */
  async function written(
    name: string,
    groups: EmbeddedBatch[][],
    plan: EmbeddedBatch[] = groups.flat(),
    format: OutputFormat = 'parquet',
  ) {
    const dir = join(root, name);
    const writer = new DatasetWriter({ dir, format, metadata: { 'embedpipe.model': MODEL } });
    const writtenHere = new Map<string, WrittenFile>();
    for (const group of groups) {
      const file = await writer.writeGroup(group.map((batch) => ({ batchId: batch.batchId, batch })));
      const chunks = group.flatMap((b) => b.chunks);
      const digest = versionDigestOf({
        ids: RowIds.of(chunks.map((c) => c.documentId)),
        indices: Int32Array.from(chunks, (c) => c.index),
        keys: Float64Array.from(chunks, (c) => hashKey(c.hash)),
      });
      writtenHere.set(file.file, { rows: file.rows, dims: DIMS, digest });
    }
    const expected = new ExpectedRows();
    for (const chunk of plan.flatMap((b) => b.chunks))
      expected.add(chunk.documentId, chunk.index, chunk.hash);
    const input = {
      writer,
      planned: plan.map((b) => b.batchId),
      owners: new Map<string, string>(),
      expected,
      model: MODEL,
      writtenHere,
      logger: silentLogger(),
    };
    return { dir, input };
  }

  it('reads no row when the files digest to the plan, and gives the documents their rows would give', async () => {
    const a = batchOf('a', 'x', 3, 4);
    const b = batchOf('b', 'y', 5, 2);
    const c = batchOf('c', 'z', 1, 7);
    const { dir, input } = await written('by-digest', [[a, c], [b]], [a, b, c]);
    const checked = await checkVersion(input, new Map(), DIMS);
    expect(checked.byDigest).toBe(true);
    expect(checked.counted).toMatchObject({ rows: 12 + 10 + 7, documents: 9 });
    const scans = await Promise.all(checked.files.map((file) => readRowKeys(dir, file, 'parquet')));
    // `_documents.jsonl` was written in the pass that digested the plan: the documents' rows.
    const sha256 = await checked.writeDocuments();
    const text = await readFile(join(dir, DOCUMENTS_FILE), 'utf8');
    expect(parseDocumentLines(text)).toEqual(new DatasetRows(scans).digests());
    expect(sha256).toBe(rowsDigest(text));
    // The same version row by row (no digests): the same answer.
    const { writtenHere: _, ...unwritten } = input;
    const byRows = await checkVersion(unwritten, new Map(), DIMS);
    expect(byRows.byDigest).toBe(false);
    expect(byRows.counted).toEqual(checked.counted);
  });

  it('leaves out a failed chunk by digest, and checks row by row when a file holds a row twice', async () => {
    const a = batchOf('a', 'x', 2, 3);
    const failedOne = { ...a, chunks: a.chunks.filter((c) => !(c.documentId === 'x-1' && c.index === 2)) };
    failedOne.vectors = failedOne.chunks.map(() => new Float32Array(DIMS));
    const { input } = await written('failed', [[failedOne]], [a]);
    const failed = new Map([['x-1', new Set([2])]]);
    const checked = await checkVersion(input, failed, DIMS);
    expect(checked.byDigest).toBe(true);
    await checked.writeDocuments();
    // Not listed as failed: missing, named row by row.
    await expect(checkVersion(input, new Map(), DIMS)).rejects.toThrow(/x-1/);

    const twice = { ...a, chunks: [...a.chunks, a.chunks[0]!], vectors: [...a.vectors, a.vectors[0]!] };
    const doubled = await written('twice', [[twice]], [a]);
    const error = await checkVersion(doubled.input, new Map(), DIMS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatasetContractError);
    // The documents file begun in the digest pass was thrown away when the digests differed.
    expect(
      (await readdir(doubled.dir)).filter((name) => isTempName(name) || name === DOCUMENTS_FILE),
    ).toEqual([]);
    expect((error as DatasetContractError).violations.map((v) => v.check)).toContain('chunk-index');
    expect((error as DatasetContractError).message).toContain('x-0');
  });

  it("takes a document re-planned by a batch this run committed by digest, from that batch's rows; its first rows left in a file go row by row, and are dropped", async () => {
    const a = batchOf('a', 'x', 3, 2);
    // Planned: y-1 in two chunks. Sent: batch b re-planned it into three (other texts, other hashes).
    const planned = batchOf('b', 'y', 3, 2);
    const again = [0, 1, 2].map((index) => {
      const text = `y document 1 planned again, chunk ${index}`;
      return { ...planned.chunks[2]!, index, text, hash: contentHash(MODEL, text) };
    });
    const firstPlan = planned.chunks.filter((c) => c.documentId === 'y-1');
    const sentChunks = planned.chunks.flatMap((c) =>
      c.documentId !== 'y-1' ? [c] : c.index === 0 ? again : [],
    );
    const sent: EmbeddedBatch = {
      ...planned,
      chunks: sentChunks,
      vectors: sentChunks.map((_, i) => planned.vectors[i % planned.vectors.length]!),
      replanned: ['y-1'],
    };
    const pairs = new PairDigest();
    for (const chunk of again) pairs.add(chunk.index, hashKey(chunk.hash));
    const replanned = (batchId: string) => ({
      owners: new Map([['y-1', 'b']]),
      replannedHere: new Map([['y-1', { batchId, pairs }]]),
    });

    const { dir, input } = await written('replanned', [[a], [sent]], [a, planned]);
    const checked = await checkVersion({ ...input, ...replanned('b') }, new Map(), DIMS);
    expect(checked.byDigest).toBe(true);
    expect(checked.counted).toMatchObject({ rows: 6 + 4 + 3, documents: 6 });
    await checked.writeDocuments();
    const scans = await Promise.all(checked.files.map((file) => readRowKeys(dir, file, 'parquet')));
    const documents = parseDocumentLines(await readFile(join(dir, DOCUMENTS_FILE), 'utf8'));
    expect(documents).toEqual(new DatasetRows(scans).digests());
    expect(documents.get('y-1')).toEqual(pairs.value);
    // Re-planned by a batch of another run (no rows recorded here), or the rows of another owner:
    // row by row, the same answer.
    for (const other of [{ owners: replanned('b').owners }, replanned('a')]) {
      const again = await written('replanned-elsewhere', [[a], [sent]], [a, planned]);
      const byRows = await checkVersion({ ...again.input, ...other }, new Map(), DIMS);
      expect(byRows.byDigest).toBe(false);
      expect(byRows.counted).toEqual(checked.counted);
    }

    // A first-plan row of y-1 committed before the re-plan, in batch a's file: the digests differ,
    // and the row-by-row check drops it (the rewritten file holds a's rows alone).
    const stale = { ...a, chunks: [...a.chunks, firstPlan[0]!], vectors: [...a.vectors, a.vectors[0]!] };
    const left = await written('replanned-stale', [[stale], [sent]], [a, planned]);
    const byRows = await checkVersion({ ...left.input, ...replanned('b') }, new Map(), DIMS);
    expect(byRows.byDigest).toBe(false);
    expect(byRows.counted).toMatchObject({ rows: 6 + 4 + 3, documents: 6 });
    const keys = await Promise.all(byRows.files.map((file) => readRowKeys(left.dir, file, 'parquet')));
    expect(new DatasetRows(keys).digests()).toEqual(documents);
  });

  it("keeps an earlier version's re-plan only where the plan still has its rows: a document deleted or edited since loses them there", async () => {
    const a = batchOf('a', 'x', 3, 2);
    const planned = batchOf('b', 'y', 3, 2);
    // Batch b re-planned y-1 in an earlier version: its file holds y-1's re-plan, three chunks.
    const chunk = (index: number, text: string) => ({
      ...planned.chunks[2]!,
      index,
      text,
      hash: contentHash(MODEL, text),
    });
    const again = [0, 1, 2].map((index) => chunk(index, `y document 1 planned again, chunk ${index}`));
    const withReplan = (batch: EmbeddedBatch, chunks: EmbeddedBatch['chunks']): EmbeddedBatch => ({
      ...batch,
      chunks,
      vectors: chunks.map((_, i) => batch.vectors[i % batch.vectors.length]!),
    });
    const others = planned.chunks.filter((c) => c.documentId !== 'y-1');
    const held = { ...withReplan(planned, [...others, ...again]), replanned: ['y-1'] };
    const withoutY1 = withReplan(planned, others);
    const earlierReplans = new Map([['y-1', 'b']]);
    const rowsOf = async (dir: string, files: readonly string[]) =>
      new DatasetRows(await Promise.all(files.map((file) => readRowKeys(dir, file, 'parquet')))).digests();

    // Unchanged: planned as re-planned, its rows are batch b's.
    const kept = await written('earlier-replan-kept', [[a], [held]], [a, held]);
    const unchanged = await checkVersion({ ...kept.input, earlierReplans }, new Map(), DIMS);
    expect(unchanged.counted).toMatchObject({ rows: 6 + 4 + 3, documents: 6 });

    // Deleted: its rows in b's file go; the check counts five documents.
    const gone = await written('earlier-replan-deleted', [[a], [held]], [a, withoutY1]);
    const deleted = await checkVersion({ ...gone.input, earlierReplans }, new Map(), DIMS);
    expect(deleted.counted).toMatchObject({ rows: 6 + 4, documents: 5 });
    expect([...(await rowsOf(gone.dir, deleted.files)).keys()]).not.toContain('y-1');

    // Edited: batch c plans it now (its first chunk as it was): c's rows are its, b's go.
    const edited = [chunk(0, again[0]!.text), chunk(1, 'y document 1 edited, its second chunk')];
    const c: EmbeddedBatch = { ...withReplan(batchOf('c', 'z', 1, 2), edited), batchId: 'c' };
    const changed = await written('earlier-replan-edited', [[a], [held], [c]], [a, withoutY1, c]);
    const afterEdit = await checkVersion({ ...changed.input, earlierReplans }, new Map(), DIMS);
    expect(afterEdit.counted).toMatchObject({ rows: 6 + 4 + 2, documents: 6 });
    const y1 = new PairDigest();
    for (const e of edited) y1.add(e.index, hashKey(e.hash));
    expect((await rowsOf(changed.dir, afterEdit.files)).get('y-1')).toEqual(y1.value);

    // An owner of a document the plan no longer has (deleted) owns no row: its rows there go too.
    const owned = await written('earlier-replan-owner-deleted', [[a], [held]], [a, withoutY1]);
    const ownerGone = await checkVersion({ ...owned.input, owners: earlierReplans }, new Map(), DIMS);
    expect(ownerGone.counted).toMatchObject({ rows: 6 + 4, documents: 5 });
  });

  /**
   * A previous version of `groups` (each batch's record saying `recorded(batch)` rows) whose switch
   * recorded its files' digests, and the next version linking its files, as a run builds it.
   */
  async function carriedOver(
    name: string,
    groups: EmbeddedBatch[][],
    recorded: (batch: EmbeddedBatch) => number = (batch) => batch.chunks.length,
    format: OutputFormat = 'parquet',
  ) {
    const previous = join(root, name, 'v1');
    const next = join(root, name, 'v2');
    const old = new DatasetWriter({ dir: previous, format, metadata: { 'embedpipe.model': MODEL } });
    const files: string[] = [];
    for (const group of groups) {
      const entries = group.map((batch) => ({
        batchId: batch.batchId,
        batch,
        extra: { 'embedpipe.batch': JSON.stringify({ rows: recorded(batch) }) },
      }));
      files.push((await old.writeGroup(entries)).file);
    }
    const fileDigests: Record<string, FileDigest> = {};
    await mkdir(next, { recursive: true });
    for (const file of files) {
      const keys = await readRowKeys(previous, file, format);
      const { size } = await stat(join(previous, file));
      fileDigests[file] = { ...versionDigestOf(keys).record, bytes: size };
      await link(join(previous, file), join(next, file));
    }
    const current = {
      name: 'v1',
      dir: previous,
      manifest: {
        model: MODEL,
        dims: DIMS,
        files,
        contract: { documents: 0, documentsSha256: '', fileDigests },
      },
    };
    return { previous, next, files, current, format };
  }

  /** The check of the next version of `carried`: `plan` planned, `sent` written by this run. */
  async function nextVersion(
    carried: Awaited<ReturnType<typeof carriedOver>>,
    plan: EmbeddedBatch[],
    sent: EmbeddedBatch[],
  ) {
    const { input } = await written(
      relative(root, carried.next),
      sent.length > 0 ? [sent] : [],
      plan,
      carried.format,
    );
    const checked = await checkVersion({ ...input, current: carried.current }, new Map(), DIMS);
    // As finalize does next: the documents file goes in place, a line per document, its hash returned.
    const sha256 = await checked.writeDocuments();
    const documents = await readFile(join(input.writer.dir, DOCUMENTS_FILE));
    expect(createHash('sha256').update(documents).digest('hex')).toBe(sha256);
    expect(documents.toString('utf8').trimEnd().split('\n')).toHaveLength(checked.counted.documents);
    return checked;
  }

  /** The (id, chunk_index) keys of a folder's data files, as DuckDB (Parquet) or Arrow JS (IPC files) reads them. */
  async function keysOf(dir: string, format: OutputFormat = 'parquet'): Promise<unknown[]> {
    if (format === 'parquet') {
      const rows = await query(
        `SELECT id || '/' || chunk_index AS k FROM read_parquet(${sqlString(join(dir, '*.parquet'))}) ORDER BY k`,
      );
      return rows.map((row) => row['k']);
    }
    const keys: string[] = [];
    for (const name of (await readdir(dir)).filter((n) => n.endsWith('.arrow'))) {
      const table = tableFromIPC(await readFile(join(dir, name)));
      for (const row of table) keys.push(`${row['id']}/${row['chunk_index']}`);
    }
    return keys.sort();
  }

  it.each(['parquet', 'arrow'] as const)(
    'drops the batches a linked file holds that the plan no longer has, by digest, reading that file alone (%s)',
    async (format) => {
      const [a, b, c, d] = [
        batchOf('a', 'p', 3, 2),
        batchOf('bb', 'q', 2, 3),
        batchOf('ccc', 'r', 4, 1),
        batchOf('dddd', 's', 2, 2),
      ];
      // b's documents changed: this run planned and sent them as b2.
      const b2 = batchOf('b2', 'q2', 2, 3);
      const carried = await carriedOver(`by-batch-${format}`, [[a, b, c], [d]], undefined, format);
      const checked = await nextVersion(carried, [a, c, d, b2], [b2]);
      expect(checked.byDigest).toBe(true);
      expect(checked.counted).toMatchObject({ rows: 6 + 4 + 4 + 6, documents: 3 + 4 + 2 + 2 });
      // The outdated file was rewritten with a's and c's rows; d's file is still the linked one.
      expect(checked.files).toContain(carried.files[1]);
      expect(checked.files).not.toContain(carried.files[0]);
      const want = [a, c, d, b2]
        .flatMap((batch) => batch.chunks.map((ch) => `${ch.documentId}/${ch.index}`))
        .sort();
      expect(await keysOf(carried.next, format)).toEqual(want);
      for (const file of checked.files) {
        const keys = await readRowKeys(carried.next, file, format);
        expect(checked.digests.get(file)?.record).toEqual(versionDigestOf(keys).record);
        expect(checked.counted.fileRows.get(file)).toBe(keys.ids.length);
      }
      const rewritten = checked.files.find(
        (file) => !carried.files.includes(file) && file !== checked.files.at(-1),
      )!;
      expect([
        ...(await new DatasetWriter({
          dir: carried.next,
          format,
          metadata: { 'embedpipe.model': MODEL },
        }).batchRowsOf(rewritten))!,
      ]).toEqual([
        { batchId: 'a', rows: 6 },
        { batchId: 'ccc', rows: 4 },
      ]);
      // The previous version's file, which readers of v1 still see, holds b's rows as before.
      expect((await keysOf(carried.previous, format)).length).toBe(6 + 6 + 4 + 4);
    },
  );

  it('checks row by row, with the same rows, where the batch records do not say where the rows are', async () => {
    const [a, b, c] = [batchOf('a', 'p', 3, 2), batchOf('bb', 'q', 2, 2), batchOf('ccc', 'r', 4, 1)];
    const b2 = batchOf('b2', 'q2', 2, 3);
    const want = [a, c, b2]
      .flatMap((batch) => batch.chunks.map((ch) => `${ch.documentId}/${ch.index}`))
      .sort();
    // b's record says one row more than the file holds: the records do not sum to the file's rows.
    const misstated = await carriedOver(
      'misstated',
      [[a, b, c]],
      (batch) => batch.chunks.length + (batch === b ? 1 : 0),
    );
    const one = await nextVersion(misstated, [a, c, b2], [b2]);
    expect(one.byDigest).toBe(false);
    expect(await keysOf(misstated.next)).toEqual(want);
    // a's and b's counts swapped: they sum to the file's rows, but a's range takes b's rows and the
    // version's digest is not the plan's. Nothing is dropped by batch; the row-by-row check keeps the right rows.
    const swapped = await carriedOver('swapped', [[a, b, c]], (batch) =>
      batch === a ? b.chunks.length : batch === b ? a.chunks.length : batch.chunks.length,
    );
    const two = await nextVersion(swapped, [a, c, b2], [b2]);
    expect(two.byDigest).toBe(false);
    expect([two.counted.rows, two.counted.documents]).toEqual([one.counted.rows, one.counted.documents]);
    expect(await keysOf(swapped.next)).toEqual(want);
  });

  it('checks row by row when a row is not the one the plan holds, and names it', async () => {
    const a = batchOf('a', 'x', 2, 2);
    const edited = {
      ...a,
      chunks: a.chunks.map((c, i) => (i === 3 ? { ...c, hash: contentHash(MODEL, 'another text') } : c)),
    };
    const { dir, input } = await written('edited', [[edited]], [a]);
    const error = await checkVersion(input, new Map(), DIMS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatasetContractError);
    expect((error as DatasetContractError).message).toContain('x-1');
    // The documents file begun in the digest pass was thrown away when the digests differed.
    expect((await readdir(dir)).filter((name) => isTempName(name) || name === DOCUMENTS_FILE)).toEqual([]);
  });
});

describe('replannedDigests: what a batch committed for the documents it re-planned', () => {
  it("digests a re-planned document's rows 0..k-1, in any order; none when one is missing or repeated", () => {
    const made = makeBatch({ batchId: 'r', rows: 6, dims: 4, seed: 3 });
    const chunk = (documentId: string, index: number) => ({
      ...made.chunks[0]!,
      documentId,
      index,
      text: `${documentId} ${index}`,
      hash: contentHash('test/model-1', `${documentId} ${index}`),
    });
    const chunks = [chunk('d', 2), chunk('d', 0), chunk('d', 1), chunk('e', 0), chunk('e', 2), chunk('f', 0)];
    const embedded: EmbeddedBatch = { ...made, chunks, replanned: ['d', 'e', 'g'] };
    const digests = replannedDigests(embedded);
    const expected = new PairDigest();
    for (const index of [0, 1, 2]) expected.add(index, hashKey(contentHash('test/model-1', `d ${index}`)));
    expect(digests.get('d')?.value).toEqual(expected.value);
    // e lacks chunk 1; g has no row here; f was not re-planned.
    expect([...digests]).toEqual([
      ['d', digests.get('d')],
      ['e', undefined],
      ['g', undefined],
    ]);
    const twice = replannedDigests({ ...embedded, chunks: [...chunks, chunk('d', 1)], replanned: ['d'] });
    expect(twice.get('d')).toBeUndefined();
  });
});
