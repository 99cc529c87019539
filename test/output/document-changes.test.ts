/**
 * documentChanges: documents compared by their chunk hashes in chunk order, over real data files,
 * and over the `_documents.jsonl` records a switch writes (the same answers either way).
 */
import { createHash } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EmbeddedBatch } from '../../src/domain.js';
import { OutputError } from '../../src/errors.js';
import { PairDigest } from '../../src/output/contract.js';
import { DatasetWriter } from '../../src/output/dataset.js';
import { documentChanges, type VersionFiles } from '../../src/output/document-changes.js';
import { type DocumentRecord, DocumentsFile, readDocumentRecords } from '../../src/output/documents-file.js';
import { hashKey } from '../../src/output/hash-key.js';
import { DOCUMENTS_FILE } from '../../src/output/jsonl.js';
import type { OutputFormat } from '../../src/output/part-file.js';
import { embeddedBatch, textChunk } from '../helpers/chunks.js';
import { tempFolder } from '../helpers/temp.js';

const root = await tempFolder('embedpipe-changes-');
let n = 0;

/** A row: document id, chunk index, content hash (the text is derived from the hash). */
type Row = readonly [id: string, index: number, hash: string];

const hash = (name: string) => createHash('sha256').update(name).digest('hex');

function batchOf(batchId: string, rows: readonly Row[]): EmbeddedBatch {
  const chunks = rows.map(([documentId, index, h]) =>
    textChunk(documentId, index, `text of ${h}`, 3, hash(h)),
  );
  return embeddedBatch(
    batchId,
    'test/model-1',
    chunks,
    chunks.map((_, i) => Float32Array.of(i, 1, -1)),
  );
}

type Compared = 'data files' | 'records';

/**
 * A version folder holding one real data file per group of rows; compared by records, also the
 * `_documents.jsonl` its switch would write (each document's PairDigest, as contract.ts makes it).
 */
async function version(format: OutputFormat, ...files: Row[][]): Promise<VersionFiles> {
  return versionCompared('data files', format, ...files);
}

async function versionCompared(by: Compared, format: OutputFormat, ...files: Row[][]): Promise<VersionFiles> {
  const dir = join(root, `v${n++}`);
  const writer = new DatasetWriter({ dir, format, metadata: {} });
  const names: string[] = [];
  for (const [i, rows] of files.entries()) {
    names.push((await writer.writePart(`b${i}`, batchOf(`b${i}`, rows))).file);
  }
  if (by === 'data files') return { dir, files: names, format };
  await mkdir(dir, { recursive: true });
  const digests = new Map<string, PairDigest>();
  for (const [id, index, h] of files.flat()) {
    const digest = digests.get(id) ?? new PairDigest();
    digests.set(id, digest);
    digest.add(index, hashKey(hash(h)));
  }
  const record = await DocumentsFile.create(dir);
  for (const [id, digest] of digests) record.add(id, digest.value);
  await record.finish();
  return { dir, files: names, format, documentsRecord: true };
}

describe.each([
  ['parquet', 'data files'],
  ['arrow', 'data files'],
  ['parquet', 'records'],
] as const)('documentChanges (%s, by %s)', (format, by) => {
  const version = (f: OutputFormat, ...files: Row[][]) => versionCompared(by, f, ...files);

  it('counts identical documents as unchanged, whatever the row order or file', async () => {
    const before = await version(
      format,
      [
        ['a', 0, 'a0'],
        ['a', 1, 'a1'],
        ['b', 0, 'b0'],
      ],
      [['c', 0, 'c0']],
    );
    // Same documents, rows shuffled and spread over other files.
    const after = await version(
      format,
      [
        ['c', 0, 'c0'],
        ['a', 1, 'a1'],
      ],
      [
        ['b', 0, 'b0'],
        ['a', 0, 'a0'],
      ],
    );
    expect(await documentChanges(before, after)).toEqual({ added: 0, changed: 0, unchanged: 3, deleted: 0 });
  });

  it('counts a document whose chunks changed order as changed', async () => {
    const before = await version(format, [
      ['a', 0, 'a0'],
      ['a', 1, 'a1'],
      ['b', 0, 'b0'],
    ]);
    const after = await version(format, [
      ['a', 0, 'a1'],
      ['a', 1, 'a0'],
      ['b', 0, 'b0'],
    ]);
    expect(await documentChanges(before, after)).toEqual({ added: 0, changed: 1, unchanged: 1, deleted: 0 });
  });

  it('counts a document split into more chunks, or merged into fewer, as changed', async () => {
    const before = await version(format, [
      ['split', 0, 's0'],
      ['merged', 0, 'm0'],
      ['merged', 1, 'm1'],
    ]);
    // The first chunk keeps its hash: only the count tells the change.
    const after = await version(format, [
      ['split', 0, 's0'],
      ['split', 1, 's1'],
      ['merged', 0, 'm0'],
    ]);
    expect(await documentChanges(before, after)).toEqual({ added: 0, changed: 2, unchanged: 0, deleted: 0 });
  });

  it('counts a document whose text changed as changed', async () => {
    const before = await version(format, [['a', 0, 'old']]);
    const after = await version(format, [['a', 0, 'new']]);
    expect(await documentChanges(before, after)).toEqual({ added: 0, changed: 1, unchanged: 0, deleted: 0 });
  });

  it('counts added and deleted documents', async () => {
    const before = await version(format, [
      ['kept', 0, 'k0'],
      ['gone', 0, 'g0'],
      ['gone', 1, 'g1'],
    ]);
    const after = await version(
      format,
      [['kept', 0, 'k0']],
      [
        ['new-1', 0, 'n0'],
        ['new-2', 0, 'n1'],
        ['new-2', 1, 'n2'],
      ],
    );
    expect(await documentChanges(before, after)).toEqual({ added: 2, changed: 0, unchanged: 1, deleted: 1 });
  });

  it('counts every document as added against an empty version, and deleted against none', async () => {
    const empty = await version(format);
    const some = await version(format, [
      ['a', 0, 'a0'],
      ['b', 0, 'b0'],
    ]);
    expect(await documentChanges(empty, some)).toEqual({ added: 2, changed: 0, unchanged: 0, deleted: 0 });
    expect(await documentChanges(some, empty)).toEqual({ added: 0, changed: 0, unchanged: 0, deleted: 2 });
  });
});

it('reports a missing data file as an OutputError naming it', async () => {
  const some = await version('parquet', [['a', 0, 'a0']]);
  const broken: VersionFiles = { ...some, files: ['part-missing.parquet'] };
  await expect(documentChanges(some, broken)).rejects.toThrow(OutputError);
  await expect(documentChanges(some, broken)).rejects.toThrow(/part-missing\.parquet/);
});

describe('documentChanges by records', () => {
  it('reads no data file where both versions hold their record', async () => {
    const before = await versionCompared('records', 'parquet', [['a', 0, 'a0']], [['b', 0, 'b0']]);
    const after = await versionCompared('records', 'parquet', [['a', 0, 'a0']], [['b', 0, 'b1']]);
    // The data files gone: the records alone answer.
    for (const { dir, files } of [before, after]) for (const file of files) await rm(join(dir, file));
    expect(await documentChanges(before, after)).toEqual({ added: 0, changed: 1, unchanged: 1, deleted: 0 });
  });

  it('pairs documents met out of step: a version in another order, with changes spread through', async () => {
    const ids = Array.from({ length: 100 }, (_, i) => `d${i}`);
    const before = await versionCompared(
      'records',
      'parquet',
      ids.map((id): Row => [id, 0, `${id}-text`]),
    );
    // The second half first; d10 edited, d60 deleted, x added in the middle.
    const reordered = [...ids.slice(50), ...ids.slice(0, 50)].filter((id) => id !== 'd60');
    reordered.splice(30, 0, 'x');
    const after = await versionCompared(
      'records',
      'parquet',
      reordered.map((id): Row => [id, 0, id === 'd10' ? 'edited' : `${id}-text`]),
    );
    expect(await documentChanges(before, after)).toEqual({ added: 1, changed: 1, unchanged: 98, deleted: 1 });
  });

  it('reads ids that need escaping, across the many pieces a large record is read in', async () => {
    const odd = [
      'quote "q"',
      'back\\slash',
      'line\nbreak',
      'tab\t',
      'emoji 👩‍👩‍👧',
      'sep \u2028',
      'lone \ud800',
      'ünï',
    ];
    const ids = Array.from({ length: 20_000 }, (_, i) => `${odd[i % odd.length]} #${i}`);
    const dir = join(root, `records-${n++}`);
    await mkdir(dir, { recursive: true });
    const record = await DocumentsFile.create(dir);
    const digestOf = (i: number) => ({ rows: 1 + (i % 3), digest: hash(`${i}`).slice(0, 16) });
    for (const [i, id] of ids.entries()) record.add(id, digestOf(i));
    await record.finish();
    const read: DocumentRecord[] = [];
    let pieces = 0;
    for await (const piece of readDocumentRecords(join(dir, DOCUMENTS_FILE))) {
      read.push(...piece);
      pieces += 1;
    }
    expect(pieces).toBeGreaterThan(10);
    expect(read).toEqual(ids.map((id, i) => ({ id, ...digestOf(i) })));
    // Side by side with itself, every id met out of step once (one file reversed): all unchanged.
    const reversed = join(root, `records-${n++}`);
    await mkdir(reversed, { recursive: true });
    const back = await DocumentsFile.create(reversed);
    for (let i = ids.length - 1; i >= 0; i--)
      back.add(ids[i]!, i === 7 ? { rows: 9, digest: '0'.repeat(16) } : digestOf(i));
    await back.finish();
    const as = (d: string): VersionFiles => ({ dir: d, files: [], format: 'parquet', documentsRecord: true });
    expect(await documentChanges(as(dir), as(reversed))).toEqual({
      added: 0,
      changed: 1,
      unchanged: 19_999,
      deleted: 0,
    });
  });

  it('names the line of a record that is not one, however it is laid out', async () => {
    const good = '{"id":"a","rows":1,"digest":"0123456789abcdef"}';
    for (const bad of [
      '{"id":"a"b","rows":1,"digest":"0123456789abcdef"}',
      '{"id":"a","rows":01,"digest":"0123456789abcdef"}',
      '{"id":"a","rows":1.5,"digest":"0123456789abcdef"}',
      '{"id":"a","rows":1,"digest":"0123456789ABCDEF"}',
      '{"id":7,"rows":1,"digest":"0123456789abcdef"}',
    ]) {
      const path = join(root, `bad-${n++}.jsonl`);
      await writeFile(path, `${good}\n\n${bad}\n`);
      const reading = (async () => {
        for await (const _ of readDocumentRecords(path)) {
          // read to the end
        }
      })();
      await expect(reading, bad).rejects.toThrow(`${path}, line 3: not a document record`);
    }
    // The same layouts JSON allows besides the writer's: spaces, escapes, a CRLF.
    const path = join(root, `spaced-${n++}.jsonl`);
    await writeFile(path, '{ "id": "\\u0061", "rows": 2, "digest": "0123456789abcdef" }\r\n');
    const read: DocumentRecord[] = [];
    for await (const piece of readDocumentRecords(path)) read.push(...piece);
    expect(read).toEqual([{ id: 'a', rows: 2, digest: '0123456789abcdef' }]);
  });

  it("reads the data files where the earlier version's record is missing or damaged", async () => {
    const rows: Row[] = [
      ['a', 0, 'a0'],
      ['b', 0, 'b0'],
    ];
    const after = await versionCompared('records', 'parquet', rows, [['c', 0, 'c0']]);
    const missing = await versionCompared('records', 'parquet', rows);
    await rm(join(missing.dir, DOCUMENTS_FILE));
    expect(await documentChanges(missing, after)).toEqual({ added: 1, changed: 0, unchanged: 2, deleted: 0 });
    const damaged = await versionCompared('records', 'parquet', rows);
    await writeFile(join(damaged.dir, DOCUMENTS_FILE), '{"id":"a","rows":1,"digest":"not hex"}\n');
    expect(await documentChanges(damaged, after)).toEqual({ added: 1, changed: 0, unchanged: 2, deleted: 0 });
    // Broken on purpose: with the data files gone too, the damaged record is not believed.
    for (const file of damaged.files) await rm(join(damaged.dir, file));
    await expect(documentChanges(damaged, after)).rejects.toThrow(OutputError);
  });
});
