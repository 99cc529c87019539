/**
 * `_batch-starts.jsonl`: a plan's batch starts written as planned and read back for the next
 * version, only by the same plan and only while its batches are full enough; a damaged or missing
 * file is no starts, never an error.
 */
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BATCH_STARTS_FILE } from '../../src/output/jsonl.js';
import {
  BatchStartsFile,
  batchStartKey,
  MIN_MEAN_FILL,
  readBatchStarts,
} from '../../src/planning/batch-starts.js';
import { tempFolder } from '../helpers/temp.js';

const root = await tempFolder('embedpipe-starts-');
const PLAN = {
  model: 'emu/embed-small',
  planKey: '{"budgetTokens":460}',
  maxInputs: 4,
  maxTokensPerRequest: 1_000,
};
const FIRSTS = [
  { documentId: 'a', index: 0 },
  { documentId: 'quote "q" \\ 👩‍👩‍👧', index: 3 },
  { documentId: '\u2028 line', index: 12 },
];
/** A batch starting at `first`, of `inputs` chunks of `tokens` tokens each. */
const batchAt = (first: (typeof FIRSTS)[number], inputs = 4, tokens = 10) => ({
  chunks: Array.from({ length: inputs }, (_, i) => ({ ...first, index: first.index + i })),
  tokens: inputs * tokens,
});

/** A folder holding the starts of `batches`, written as a run writes them. */
async function written(name: string, batches = FIRSTS.map((first) => batchAt(first))): Promise<string> {
  const dir = join(root, name);
  await mkdir(dir);
  const file = new BatchStartsFile(dir, PLAN);
  for (const batch of batches) file.add(batch);
  await file.close();
  return dir;
}

describe('batch starts', () => {
  it('reads back what was written, for the same plan only', async () => {
    const dir = await written('written');
    expect(await readBatchStarts(dir, PLAN)).toEqual(new Set(FIRSTS.map(batchStartKey)));
    expect(await readBatchStarts(dir, { ...PLAN, model: 'emu/embed-large' })).toEqual(new Set());
    expect(await readBatchStarts(dir, { ...PLAN, planKey: '{"budgetTokens":128}' })).toEqual(new Set());
  });

  it('is not followed once the batches it would keep are under half full on average', async () => {
    // Fill: the inputs or the tokens against the caps, whichever is closer (1/4 inputs, 0.8 tokens).
    const byTokens = await written('by-tokens', [batchAt(FIRSTS[0]!, 1, 800)]);
    expect((await readBatchStarts(byTokens, PLAN)).size).toBe(1);
    // 1, 1/4 and 1/4 of the inputs: a mean fill of 0.5, followed; one more small batch, not.
    const half = [batchAt(FIRSTS[0]!), batchAt(FIRSTS[1]!, 1), batchAt(FIRSTS[2]!, 1)];
    expect(MIN_MEAN_FILL).toBe(0.5);
    expect((await readBatchStarts(await written('half', half), PLAN)).size).toBe(3);
    const small = [...half, batchAt({ documentId: 'z', index: 0 }, 1)];
    expect(await readBatchStarts(await written('small', small), PLAN)).toEqual(new Set());
  });

  it('reads a damaged file up to its first line that is not a start, and a missing one as none', async () => {
    const dir = await written('damaged');
    await appendFile(join(dir, BATCH_STARTS_FILE), '[1,\n[2,"b",4,40]\n');
    expect(await readBatchStarts(dir, PLAN)).toEqual(new Set(FIRSTS.map(batchStartKey)));
    await writeFile(join(dir, BATCH_STARTS_FILE), 'not json\n[0,"a",4,40]\n');
    expect(await readBatchStarts(dir, PLAN)).toEqual(new Set());
    expect(await readBatchStarts(join(root, 'none'), PLAN)).toEqual(new Set());
  });
});
