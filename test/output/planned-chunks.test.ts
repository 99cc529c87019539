/** The plan's chunks on disk: read back as the plan in memory would give them, whatever their ids. */
import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import {
  type AsPlanned,
  type DocumentDigest,
  documentLines,
  ExpectedRows,
  type FailedChunks,
  type PlanReader,
  planDigest,
} from '../../src/output/contract.js';
import { PlannedChunks } from '../../src/output/planned-chunks.js';
import { tempFolder } from '../helpers/temp.js';

const hashOf = (id: string, index: number) => `${id}#${index}`.padEnd(64, 'f');

/** Documents (ids hostile to a byte format: CJK, emoji, RTL, long) with k chunks each, planned into both. */
async function bothPlans(documents: readonly (readonly [string, number])[]) {
  const dir = await tempFolder('embedpipe-plan-');
  const onDisk = new PlannedChunks(dir);
  const inMemory = new ExpectedRows();
  for (const [id, k] of documents)
    for (let i = 0; i < k; i++) {
      onDisk.add(id, i, hashOf(id, i));
      inMemory.add(id, i, hashOf(id, i));
    }
  return { dir, onDisk, inMemory };
}

const HOSTILE = [
  ['doc-1', 3],
  ['漢字かな交じり文の文書', 2],
  ['👩‍👩‍👧‍👦 family', 1],
  ['שלום עולם', 4],
  ['x'.repeat(70_000), 2],
] as const;

/** The documents planDigest hands on its way (`_documents.jsonl`'s entries). */
function documentsOf(plan: PlanReader, failed: FailedChunks): [string, DocumentDigest][] {
  const documents: [string, DocumentDigest][] = [];
  planDigest(plan, failed, (id, digest) => documents.push([id, digest]));
  return documents;
}

describe('the plan on disk', () => {
  it('leaves no file behind, and reads back the plan in memory: rows, digests and documents', async () => {
    const { dir, onDisk, inMemory } = await bothPlans(HOSTILE);
    expect(await readdir(dir)).toEqual([]);
    const none: FailedChunks = new Map();
    const [a, b] = [planDigest(onDisk, none), planDigest(inMemory, none)];
    expect(a!.documents).toBe(HOSTILE.length);
    expect(a!.digest.equals(b!.digest)).toBe(true);
    expect(documentsOf(onDisk, none)).toEqual(documentsOf(inMemory, none));
    const rows = await onDisk.rows();
    expect([...rows.documents()]).toEqual(HOSTILE.map(([id]) => id));
    for (const [id] of HOSTILE) expect(rows.chunksOf(id)).toEqual(inMemory.chunksOf(id));
    onDisk.close();
  });

  it('reads back records across its blocks (a million chunks, a megabyte at a time)', async () => {
    const documents = Array.from({ length: 100_000 }, (_, d) => [`document-${d}-é`, 10] as const);
    const { onDisk, inMemory } = await bothPlans(documents);
    const none: FailedChunks = new Map();
    const [a, b] = [planDigest(onDisk, none), planDigest(inMemory, none)];
    expect(a!.digest.rows).toBe(1_000_000);
    expect(a!.digest.equals(b!.digest)).toBe(true);
    onDisk.close();
  });

  it('leaves failed chunks out, and declines a gap no failure explains or indices out of order', async () => {
    const { onDisk, inMemory } = await bothPlans([
      ['a', 3],
      ['b', 1],
    ]);
    const failed: FailedChunks = new Map([
      ['a', new Set([1])],
      ['b', new Set([0])],
    ]);
    expect(planDigest(onDisk, failed)!.documents).toBe(1);
    expect(planDigest(onDisk, failed)!.digest.equals(planDigest(inMemory, failed)!.digest)).toBe(true);
    expect(documentsOf(onDisk, failed)).toEqual(documentsOf(inMemory, failed));
    onDisk.close();

    const dir = await tempFolder('embedpipe-plan-');
    const gap = new PlannedChunks(dir);
    gap.add('c', 0, hashOf('c', 0));
    gap.add('c', 2, hashOf('c', 2));
    expect(planDigest(gap, new Map())).toBeUndefined();
    expect(planDigest(gap, new Map([['c', new Set([1])]]))).toBeDefined();
    const backwards = new PlannedChunks(dir);
    backwards.add('d', 1, hashOf('d', 1));
    backwards.add('d', 0, hashOf('d', 0));
    expect(planDigest(backwards, new Map())).toBeUndefined();
    // Digested as they came, neither is certain either.
    expect(gap.asPlanned()).toBeUndefined();
    expect(backwards.asPlanned()).toBeUndefined();
    // The row-by-row check still has the whole plan.
    expect((await backwards.rows()).chunkCount('d')).toBe(2);
    gap.close();
    backwards.close();
  });

  it('digests the plan as it comes: the same digest, count and `_documents.jsonl` text as reading it back', async () => {
    // Lines across blocks, and one longer than a block (an id of control characters, escaped 6×).
    const documents = [
      ...HOSTILE,
      ['\u0001'.repeat(200_000), 2] as const,
      ['a "quoted" id with a back\\slash, a tab\t and é', 1] as const,
      ...Array.from({ length: 30_000 }, (_, d) => [`document-${d}-é`, 1 + (d % 3)] as const),
    ];
    const { onDisk } = await bothPlans(documents);
    const none: FailedChunks = new Map();
    const readBack = planDigest(onDisk, none)!;
    const asPlanned = onDisk.asPlanned()!;
    expect(asPlanned.documents).toBe(documents.length);
    expect(asPlanned.digest.equals(readBack.digest)).toBe(true);
    expect(textOf(asPlanned)).toBe(documentLines(documentsOf(onDisk, none)));
    // Asked again after more was planned: the open document is counted, not closed twice.
    onDisk.add('last', 0, hashOf('last', 0));
    expect(onDisk.asPlanned()!.documents).toBe(documents.length + 1);
    expect(textOf(onDisk.asPlanned()!)).toBe(documentLines(documentsOf(onDisk, none)));
    expect(onDisk.asPlanned()!.digest.equals(planDigest(onDisk, none)!.digest)).toBe(true);
    // An id UTF-8 cannot keep as it is (a lone surrogate): the plan is read back instead.
    onDisk.add('\ud800 a lone surrogate', 0, hashOf('x', 0));
    expect(onDisk.asPlanned()).toBeUndefined();
    onDisk.close();
  });
});

function textOf(plan: AsPlanned): string {
  const pieces: Buffer[] = [];
  plan.lines((bytes) => pieces.push(Buffer.from(bytes)));
  return Buffer.concat(pieces).toString('utf8');
}
