/** The dataset contract's rules, on row keys made by hand: each rule broken on purpose and named. */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentHash } from '../../src/content-hash.js';
import {
  checkRows,
  DatasetRows,
  documentLine,
  documentLines,
  ExpectedRows,
  failedChunks,
  PairDigest,
  parseDocumentLines,
  planDigest as planDigestOf,
  rowsDigest,
  selectRows,
  VersionDigest,
  versionDigestOf,
} from '../../src/output/contract.js';
import { DatasetWriter } from '../../src/output/dataset.js';
import { writeDocumentsFile } from '../../src/output/documents-file.js';
import { hashKey } from '../../src/output/hash-key.js';
import { DOCUMENTS_FILE } from '../../src/output/jsonl.js';
import { type FileRowKeys, RowIds, readRowKeys } from '../../src/output/row-keys.js';
import { makeBatch } from './fixtures.js';

const MODEL = 'test/model-1';
const hashOf = (id: string, index: number) => contentHash(MODEL, `${id} chunk ${index}`);

/** A file's row keys: rows given as [id, chunk_index] (content hash from both), or [id, index, hash]. */
function scan(file: string, rows: readonly (readonly [string, number, string?])[], dims = 8): FileRowKeys {
  return {
    file,
    ids: RowIds.of(rows.map(([id]) => id)),
    indices: Int32Array.from(rows, ([, index]) => index),
    keys: Float64Array.from(rows, ([id, index, hash]) => hashKey(hash ?? hashOf(id, index))),
    dims,
  };
}

/** The plan: documents with their chunk counts. */
function plan(documents: Record<string, number>): ExpectedRows {
  const expected = new ExpectedRows();
  for (const [id, k] of Object.entries(documents))
    for (let i = 0; i < k; i++) expected.add(id, i, hashOf(id, i));
  return expected;
}

const checksOf = (violations: readonly { check: string }[]) => violations.map((v) => v.check).sort();

describe('checkRows against the plan', () => {
  const expected = plan({ a: 3, b: 1 });

  it('passes exactly the planned rows, in any file order', () => {
    const rows = new DatasetRows([
      scan('f1', [
        ['b', 0],
        ['a', 2],
      ]),
      scan('f2', [
        ['a', 0],
        ['a', 1],
      ]),
    ]);
    expect(checkRows({ rows, dims: 8, failed: new Map(), expected })).toEqual([]);
    expect(rows.rows).toBe(4);
    expect(rows.documents).toBe(2);
  });

  it('names a duplicated row, a missing chunk, a stranger, a changed hash and a missing document', () => {
    const rows = new DatasetRows([
      scan('f1', [
        ['a', 0],
        ['a', 0],
        ['a', 2],
        ['ghost', 0],
        ['a', 1, hashOf('x', 1)],
      ]),
    ]);
    const violations = checkRows({ rows, dims: 8, failed: new Map(), expected });
    expect(checksOf(violations)).toEqual(['chunk-index', 'planned-rows', 'planned-rows', 'planned-rows']);
    const text = violations.map((v) => v.message).join('\n');
    expect(text).toContain('a (chunk_index 0 twice)');
    expect(text).toContain('ghost');
    expect(text).toContain('content_hash differs from the plan: a (chunk_index 1)');
    expect(text).toContain('planned documents with no row: b');
    expect(violations.find((v) => v.message.includes('ghost'))?.ids).toEqual(['ghost']);
  });

  it('lets a listed failure be absent, and no other', () => {
    const rows = new DatasetRows([
      scan('f1', [
        ['a', 0],
        ['a', 2],
        ['b', 0],
      ]),
    ]);
    const failed = failedChunks([{ documentId: 'a', chunkIndex: 1 }]);
    expect(checkRows({ rows, dims: 8, failed, expected })).toEqual([]);
    const [violation] = checkRows({ rows, dims: 8, failed: new Map(), expected });
    expect(violation?.message).toContain('a (no chunk_index 1)');
  });

  it('names a file whose vectors are of other dims', () => {
    const rows = new DatasetRows([
      scan('f1', [
        ['a', 0],
        ['a', 1],
        ['a', 2],
      ]),
      scan('f2', [['b', 0]], 16),
    ]);
    const [violation] = checkRows({ rows, dims: 8, failed: new Map(), expected });
    expect(violation).toMatchObject({ check: 'dims', ids: ['f2'] });
  });
});

describe('selectRows', () => {
  it('keeps each wanted row once, in file order, and drops what mayDrop explains', () => {
    const expected = plan({ a: 2, b: 1 });
    const files = [
      scan('new', [
        ['a', 0],
        ['a', 1],
      ]),
      scan('old', [
        ['a', 0],
        ['gone', 0],
        ['b', 0],
      ]),
    ];
    const { dropped, violations } = selectRows(files, expected, (file) => file === 'old');
    expect(violations).toEqual([]);
    expect(dropped.has('new')).toBe(false);
    expect([...dropped.get('old')!]).toEqual([1, 1, 0]);
  });

  it('refuses rows nothing explains: a copy or a stranger in a file of planned batches', () => {
    const expected = plan({ a: 2 });
    const files = [
      scan('f1', [
        ['a', 0],
        ['a', 1],
        ['a', 1],
        ['ghost', 0],
      ]),
    ];
    const { violations } = selectRows(files, expected, () => false);
    expect(checksOf(violations)).toEqual(['chunk-index', 'planned-rows']);
    expect(violations.flatMap((v) => v.ids).sort()).toEqual(['a', 'ghost']);
  });

  it("keeps a re-planned document's rows from its owner's file only", () => {
    const expected = plan({ a: 1 });
    expected.replan('a', 'owner');
    const files = [
      scan('other', [['a', 0]]),
      scan('owner', [
        ['a', 0, hashOf('a', 9)],
        ['a', 1, hashOf('a', 8)],
      ]),
    ];
    const { dropped, violations } = selectRows(files, expected, (file) => file !== 'owner');
    expect(violations).toEqual([]);
    expect([...dropped.get('other')!]).toEqual([1]);
    expect(dropped.has('owner')).toBe(false);
  });
});

describe('recorded digests (verify)', () => {
  it('tell a document whose rows changed after the switch, an added one and a removed one', () => {
    const before = new DatasetRows([
      scan('f1', [
        ['a', 0],
        ['a', 1],
        ['b', 0],
        ['c', 0],
      ]),
    ]);
    const recorded = parseDocumentLines(documentLines(before.digests()));
    expect(checkRows({ rows: before, dims: 8, failed: new Map(), recorded })).toEqual([]);
    const after = new DatasetRows([
      scan('f1', [
        ['a', 1],
        ['a', 0, hashOf('z', 0)],
        ['b', 0],
        ['d', 0],
      ]),
    ]);
    const violations = checkRows({ rows: after, dims: 8, failed: new Map(), recorded });
    expect(violations.map((v) => [v.check, v.ids])).toEqual([
      ['recorded-rows', ['a']],
      ['recorded-rows', ['d']],
      ['recorded-rows', ['c']],
    ]);
  });

  it('do not depend on row order, and count duplicates', () => {
    const one = new DatasetRows([
      scan('f1', [
        ['a', 0],
        ['a', 1],
      ]),
    ])
      .digests()
      .get('a');
    const swapped = new DatasetRows([scan('f2', [['a', 1]]), scan('f1', [['a', 0]])]).digests().get('a');
    const doubled = new DatasetRows([
      scan('f1', [
        ['a', 0],
        ['a', 1],
        ['a', 1],
      ]),
    ])
      .digests()
      .get('a');
    expect(swapped).toEqual(one);
    expect(doubled?.digest).not.toBe(one?.digest);
  });
});

describe('the version digest (a switch that reads no row)', () => {
  const digestOf = (...files: (readonly (readonly [string, number, string?])[])[]) => {
    const sum = new VersionDigest();
    for (const file of files) sum.addDigest(versionDigestOf(scan('f', file)));
    return sum;
  };
  const planDigest = (expected: ExpectedRows, failed = new Map<string, Set<number>>()) => {
    const sum = new VersionDigest();
    for (const [id, pairs] of expected.plannedDigests(failed)!) sum.addDocument(id, pairs);
    return sum;
  };
  const expected = plan({ a: 3, b: 1, c: 2 });
  const exact = [
    ['a', 0],
    ['a', 1],
    ['a', 2],
    ['b', 0],
    ['c', 0],
    ['c', 1],
  ] as const;

  it("is the plan's for exactly its rows, split into files in any order, a document across files", () => {
    expect(digestOf(exact).equals(planDigest(expected))).toBe(true);
    expect(digestOf(exact.slice(3), exact.slice(0, 1), exact.slice(1, 3)).equals(planDigest(expected))).toBe(
      true,
    );
    expect(digestOf(exact).rows).toBe(6);
  });

  it('is not for a row missing, repeated, moved to another document or index, or with another hash', () => {
    const broken = [
      exact.slice(1),
      [...exact, ['a', 1]],
      [...exact.slice(0, 5), ['b', 1]],
      [...exact.slice(0, 5), ['c', 2]],
      [...exact.slice(0, 5), ['c', 1, hashOf('z', 0)]],
      // Two rows' ids swapped: the same pairs and the same ids, paired otherwise.
      [
        ['a', 0],
        ['a', 1],
        ['a', 2],
        ['c', 0],
        ['b', 0],
        ['c', 1],
      ].map(([id, i], k) =>
        k === 3
          ? (['c', 0, hashOf('b', 0)] as const)
          : k === 4
            ? (['b', 0, hashOf('c', 0)] as const)
            : ([id, i] as const),
      ),
    ] as (readonly (readonly [string, number, string?])[])[];
    for (const rows of broken) expect(digestOf(rows).equals(planDigest(expected))).toBe(false);
  });

  it("leaves the failed chunks out of the plan's, and is undefined where the plan does not name every row", () => {
    const failed = new Map([['a', new Set([1])]]);
    const without = exact.filter(([id, i]) => !(id === 'a' && i === 1));
    expect(digestOf(without).equals(planDigest(expected, failed))).toBe(true);
    expect(digestOf(exact).equals(planDigest(expected, failed))).toBe(false);
    // A document with all its chunks failed has no line.
    const allGone = new Map([['b', new Set([0])]]);
    expect([...expected.plannedDigests(allGone)!].map(([id]) => id)).toEqual(['a', 'c']);
    // Index 1 of d is not named: only a failure explains its absence.
    const gap = new ExpectedRows();
    gap.add('d', 0, hashOf('d', 0));
    gap.add('d', 2, hashOf('d', 2));
    expect(gap.plannedDigests(new Map())).toBeUndefined();
    expect(gap.plannedDigests(new Map([['d', new Set([1])]]))).toBeDefined();
    const replanned = plan({ e: 1 });
    replanned.replan('e', 'f1');
    expect(replanned.plannedDigests(new Map())).toBeUndefined();
  });

  it("takes a re-planned document's committed rows in place of its first plan; not certain with a failed chunk", () => {
    // b was planned as one chunk and re-planned into two; the rows its owner batch committed:
    const again = [
      ['b', 0, hashOf('b again', 0)],
      ['b', 1, hashOf('b again', 1)],
    ] as const;
    const pairs = new PairDigest();
    for (const [, index, hash] of again) pairs.add(index, hashKey(hash));
    const rows = [...exact.filter(([id]) => id !== 'b'), ...again];
    const documents: string[] = [];
    const replanned = new Map([['b', pairs]]);
    const result = planDigestOf(
      expected,
      new Map(),
      (id, digest) => documents.push(`${id}:${digest.rows}`),
      replanned,
    );
    expect(result?.digest.equals(digestOf(rows))).toBe(true);
    expect(documents).toEqual(['a:3', 'b:2', 'c:2']);
    // Without the stand-in, or with the first plan's row left as well: the sums differ.
    expect(planDigestOf(expected, new Map())?.digest.equals(digestOf(rows))).toBe(false);
    expect(result?.digest.equals(digestOf([...rows, ['b', 0]]))).toBe(false);
    // A failed chunk of a re-planned document: its rows cannot say it is complete.
    expect(planDigestOf(expected, new Map([['b', new Set([1])]]), undefined, replanned)).toBeUndefined();
  });

  it("gives _documents.jsonl the lines the rows' grouping gives", () => {
    const fromPlan = new Map(
      [...expected.plannedDigests(new Map())!].map(([id, pairs]) => [id, pairs.value]),
    );
    expect(fromPlan).toEqual(new DatasetRows([scan('f1', exact)]).digests());
  });
});

describe('documentLine', () => {
  it('is the JSON of {id, rows, digest} byte for byte, whatever the id (the manifest hashes these lines)', () => {
    const ids = [
      'plain',
      'q"uote\\back',
      'tab\tnl\ncr\r',
      '\u0000\u001f\u007f',
      '漢字かな',
      '👩‍👩‍👧‍👦',
      'שלום',
      'e\u0301',
      '\u2028\u2029',
      '',
    ];
    for (const id of ids)
      for (const rows of [0, 1, 123_456_789])
        expect(documentLine(id, { rows, digest: '0123abcd4567ef89' })).toBe(
          `${JSON.stringify({ id, rows, digest: '0123abcd4567ef89' })}\n`,
        );
  });
});

describe('writeDocumentsFile', () => {
  it('writes, a piece at a time, the lines documentLines gives, and returns their sha256', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'embedpipe-documents-'));
    // 40,000 documents across three files: ~3 MB of lines, several pieces; ids with JSON escapes.
    const files = [0, 1, 2].map((f) =>
      scan(
        `f${f}`,
        Array.from({ length: 40_000 }, (_, i) => [`d"${(i * 7 + f) % 40_000}é`, f] as const),
      ),
    );
    const rows = new DatasetRows(files);
    const sha256 = await writeDocumentsFile(dir, rows.digestEntries());
    const text = documentLines(rows.digests());
    expect(await readFile(join(dir, DOCUMENTS_FILE), 'utf8')).toBe(text);
    expect(sha256).toBe(rowsDigest(text));
    expect(text.split('\n').length - 1).toBe(40_000);
    await rm(dir, { recursive: true });
  });

  it('writes multi-byte ids across its pieces, and an id longer than a piece, byte for byte', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'embedpipe-documents-'));
    // Lines of 3- and 4-byte characters end a piece at every offset; one id alone is ~1.2 MB of UTF-8.
    const ids = [
      ...Array.from({ length: 30_000 }, (_, i) => `漢字👩‍👩‍👧‍👦שלום${i}`),
      '字'.repeat(400_000),
      'after',
    ];
    const rows = new DatasetRows([
      scan(
        'f',
        ids.map((id) => [id, 0] as const),
      ),
    ]);
    const sha256 = await writeDocumentsFile(dir, rows.digestEntries());
    const text = documentLines(rows.digests());
    const written = await readFile(join(dir, DOCUMENTS_FILE));
    expect(written.equals(Buffer.from(text, 'utf8'))).toBe(true);
    expect(sha256).toBe(rowsDigest(text));
    await rm(dir, { recursive: true });
  });
});

describe('ExpectedRows lines (the plan a producer hands to a distributed finalize)', () => {
  it('round-trip every chunk of every document', () => {
    const expected = plan({ 'a,"b"\n': 3, é: 1 });
    const back = ExpectedRows.fromLines([...expected.lines()].join('').split('\n'));
    for (const id of ['a,"b"\n', 'é']) expect(back.chunksOf(id)).toEqual(expected.chunksOf(id));
    expect([...back.documents()].sort()).toEqual([...expected.documents()].sort());
  });
});

describe('ExpectedRows keys (one array for every document)', () => {
  it('keep each document whole when its chunks come late, out of order or with gaps', () => {
    const expected = new ExpectedRows();
    const h = (text: string) => contentHash('m', text);
    expected.add('a', 0, h('a0'));
    expected.add('b', 1, h('b1'));
    // `a` again after `b` (a re-planned batch): moved to the end, its first chunk kept.
    expected.add('a', 2, h('a2'));
    expected.add('b', 0, h('b0'));
    for (let i = 0; i < 5_000; i++) expected.add(`d${i}`, i % 3, h(`d${i}`));
    expect([...expected.chunksOf('a')!]).toEqual([hashKey(h('a0')), Number.NaN, hashKey(h('a2'))]);
    expect([...expected.chunksOf('b')!]).toEqual([hashKey(h('b0')), hashKey(h('b1'))]);
    expect(expected.chunksOf('d4999')?.length).toBe(2);
    expect(expected.wants('f', 'a', 2, hashKey(h('a2')))).toBe(true);
    expect(expected.wants('f', 'a', 1, hashKey(h('a2')))).toBe(false);
    expect(expected.wants('f', 'a', 0, hashKey(h('b0')))).toBe(false);
    const slots = [expected.slot('a', 0, hashKey(h('a0'))), expected.slot('b', 1, hashKey(h('b1')))];
    expect(new Set(slots).size).toBe(2);
    for (const slot of slots) expect(slot).toBeLessThan(expected.slots);
    expected.replan('a', 'f');
    expect(expected.slot('a', 0, hashKey(h('a0')))).toBe(-1);
    expect(expected.wants('f', 'a', 7, 0)).toBe(true);
    const back = ExpectedRows.fromLines([...expected.lines()].join('').split('\n'));
    expect([...back.chunksOf('a')!]).toEqual([hashKey(h('a0')), Number.NaN, hashKey(h('a2'))]);
    expect([...back.chunksOf('d17')!]).toEqual([...expected.chunksOf('d17')!]);
  });
});

describe('readRowKeys', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'embedpipe-row-keys-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("reads a file's ids, indices and hash keys, and names the rows whose text does not hash to their content_hash", async () => {
    const made = makeBatch({ batchId: 'b1', rows: 6, dims: 4, seed: 3 });
    const chunks = made.chunks.map((c, i) => ({
      ...c,
      hash: contentHash(MODEL, i === 4 ? 'not the text' : c.text),
    }));
    const writer = new DatasetWriter({ dir, format: 'parquet', metadata: { 'embedpipe.model': MODEL } });
    const { file } = await writer.writeGroup([{ batchId: 'b1', batch: { ...made, chunks } }]);
    const keys = await readRowKeys(dir, file, 'parquet', { model: MODEL });
    expect(chunks.map((_, row) => keys.ids.at(row))).toEqual(chunks.map((c) => c.documentId));
    expect([...keys.indices]).toEqual(chunks.map((c) => c.index));
    expect([...keys.keys]).toEqual(chunks.map((c) => hashKey(c.hash)));
    expect(keys.dims).toBe(4);
    expect(keys.unhashed).toEqual([4]);
    expect((await readRowKeys(dir, file, 'parquet')).unhashed).toBeUndefined();
  });
});

describe('RowIds', () => {
  it('answers each row its id from one entry per run of equal ids', () => {
    const list = ['a', 'a', 'b', 'a', 'a', 'a', 'c', 'é', 'é'];
    const ids = RowIds.of(list);
    expect(ids.length).toBe(list.length);
    expect(list.map((_, row) => ids.at(row))).toEqual(list);
    const runs = Array.from({ length: ids.runCount }, (_, r) => ({
      id: ids.runId(r),
      start: r === 0 ? 0 : ids.runEnd(r - 1),
      end: ids.runEnd(r),
    }));
    expect(runs).toEqual([
      { id: 'a', start: 0, end: 2 },
      { id: 'b', start: 2, end: 3 },
      { id: 'a', start: 3, end: 6 },
      { id: 'c', start: 6, end: 7 },
      { id: 'é', start: 7, end: 9 },
    ]);
    expect(RowIds.of([]).length).toBe(0);
    expect(RowIds.of([]).runCount).toBe(0);
  });
});
